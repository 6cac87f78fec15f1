// The log level of a running daemon, changed without a remount: SIGUSR1 makes the log one step
// more detailed (warning -> info -> debug), SIGUSR2 one step less (debug -> info -> warning ->
// error), each change said in one line. Without this, SIGUSR1 and SIGUSR2 would end the daemon
// (their default action), so a stray `kill -USR1` no longer takes a mount down either.

import Dispatch
import Log

#if canImport(Glibc)
    import Glibc
#endif

enum LogSignals {
    /// Kept for the life of the process: a released source stops delivering.
    nonisolated(unsafe) private static var sources: [DispatchSourceSignal] = []

    static func install() {
        let queue = DispatchQueue(label: "dropboxfs.log-signals")
        for (number, step) in [(SIGUSR1, -1), (SIGUSR2, 1)] {
            // Ignored for the default action; the dispatch source still sees each one.
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: queue)
            source.setEventHandler { change(by: step, signal: number == SIGUSR1 ? "SIGUSR1" : "SIGUSR2") }
            source.resume()
            sources.append(source)
        }
    }

    /// The level one step from `Log.level` (-1: more detailed), kept within debug and error.
    static func level(from level: LogLevel, step: Int) -> LogLevel {
        let all = LogLevel.allCases.sorted()
        let index = all.firstIndex(of: level) ?? 0
        return all[min(all.count - 1, max(0, index + step))]
    }

    private static func change(by step: Int, signal name: String) {
        let old = Log.level
        let new = level(from: old, step: step)
        Log.level = new
        // Said at a level the new setting shows.
        Log.log(max(new, .info), "log level \(new.label) (was \(old.label); \(name)): SIGUSR1 shows more, SIGUSR2 less")
    }
}
