// The log level from -v/--verbose, -q/--quiet, -d/--debug and --log-level (whichever a command
// declares), and where the background daemon's log goes.

import DropboxAPI
import Log

#if canImport(Glibc)
    import Glibc
#endif

enum LogOptions {
    /// The level asked for; giving two different ones (-v with -q) is a usage error.
    static func level(_ parsed: ParsedArguments) throws(UsageError) -> LogLevel {
        var asked: [(String, LogLevel)] = []
        if parsed.has("debug") { asked.append(("--debug", .debug)) }
        if parsed.has("verbose") { asked.append(("--verbose", .debug)) }
        if parsed.has("quiet") { asked.append(("--quiet", .warning)) }
        if let text = parsed.value("log-level") {
            guard let level = LogLevel(name: text) else {
                throw UsageError(description: "--log-level must be debug, info, warning or error")
            }
            asked.append(("--log-level \(text)", level))
        }
        guard let first = asked.first else { return .info }
        if let other = asked.first(where: { $0.1 != first.1 }) {
            throw UsageError(description: "\(first.0) and \(other.0) ask for different log levels: give one")
        }
        return first.1
    }

    /// Sets the process's log level from the command line.
    static func apply(_ parsed: ParsedArguments) throws(UsageError) {
        Log.level = try level(parsed)
    }

    /// The log file at `path` opened for appending (created 0600, never through a symlink); a
    /// failure says why, with `code`.
    static func openLogFile(_ path: String, failing code: ExitCode) throws(CommandFailure) -> Int32 {
        let fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            let reason = errno == ELOOP ? "it is a symbolic link" : String(cString: strerror(errno))
            throw CommandFailure(code, "cannot open the log file \(path): \(reason)")
        }
        return fd
    }

    /// Sends this process's stderr, and so its log, to `path` (appended, never through a symlink,
    /// rotated at `limit`), after saying so on the old stderr.
    static func sendStderr(to path: String, limit: UInt64) throws(CommandFailure) {
        let fd = try openLogFile(path, failing: .usage)
        printError("logging to \(path) (--log-file)")
        Log.rotate(path: path, limit: limit)
        // The command's own messages (a failure's one line) still go where stderr went.
        let terminal = fcntl(2, F_DUPFD_CLOEXEC, 3)
        if terminal >= 0 { ErrorOutput.descriptor.store(terminal, ordering: .relaxed) }
        dup2(fd, 2)
        close(fd)
    }
}

/// Durations on the command line: a number of seconds (fractions allowed), or a number with a unit:
/// 250ms, 30s, 5m, 1h, 2d.
enum DurationText {
    static func seconds(_ text: String) -> Double? {
        let units: [(String, Double)] = [("ms", 0.001), ("s", 1), ("m", 60), ("h", 3600), ("d", 86400)]
        var number = Substring(text)
        var scale = 1.0
        for (suffix, factor) in units where text.hasSuffix(suffix) {
            number = text.dropLast(suffix.count)
            scale = factor
            break
        }
        // Digits and at most one point only: Double() alone would take "nan", "inf" and "1e3".
        guard !number.isEmpty, number.allSatisfy({ $0.isASCII && ($0.isNumber || $0 == ".") }),
            number.filter({ $0 == "." }).count <= 1, number != ".", let value = Double(number)
        else { return nil }
        let seconds = value * scale
        return seconds.isFinite ? seconds : nil
    }
}
