// One small logger for every layer: lines go to stderr as "dropboxfs[LEVEL]: message".
// Never pass a token, an Authorization header or a request body to it; callers log routes, paths,
// statuses and request ids only. The level and the sink are guarded by `state`'s mutex.

import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

public enum LogLevel: Int, Sendable, Comparable, CaseIterable {
    case debug = 0, info, warning, error

    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }

    public var label: String {
        switch self {
        case .debug: return "debug"
        case .info: return "info"
        case .warning: return "warning"
        case .error: return "error"
        }
    }

    public init?(name: String) {
        guard let level = Self.allCases.first(where: { $0.label == name.lowercased() }) else { return nil }
        self = level
    }
}

public enum Log {
    private struct State {
        var level: LogLevel = .info
        /// Replaces stderr output when set (tests capture lines this way).
        var sink: (@Sendable (LogLevel, String) -> Void)?
    }

    private static let state = Mutex(State())

    public static var level: LogLevel {
        get { state.withLock { $0.level } }
        set { state.withLock { $0.level = newValue } }
    }

    /// Sends log lines to `sink` instead of stderr (nil restores stderr).
    public static func setSink(_ sink: (@Sendable (LogLevel, String) -> Void)?) {
        state.withLock { $0.sink = sink }
    }

    /// A name or path quoted for a log line: control characters (a newline could fake a log
    /// line, a NUL makes the log "binary") appear as \xNN.
    public static func quoted(_ text: String) -> String {
        var out = "\""
        for scalar in text.unicodeScalars {
            if scalar.value < 0x20 || scalar.value == 0x7F || scalar == "\"" || scalar == "\\" {
                let hex = String(scalar.value, radix: 16)
                out += "\\x" + (hex.count < 2 ? "0" + hex : hex)
            } else {
                out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }

    public static func isEnabled(_ level: LogLevel) -> Bool { level >= self.level }

    public static func debug(_ message: @autoclosure () -> String) { write(.debug, message) }
    public static func info(_ message: @autoclosure () -> String) { write(.info, message) }
    public static func warning(_ message: @autoclosure () -> String) { write(.warning, message) }
    public static func error(_ message: @autoclosure () -> String) { write(.error, message) }

    private static func write(_ level: LogLevel, _ message: () -> String) {
        let (enabled, sink) = state.withLock { ($0.level <= level, $0.sink) }
        guard enabled else { return }
        let text = message()
        if let sink {
            sink(level, text)
            return
        }
        let line = "dropboxfs[\(level.label)]: \(text)\n"
        var bytes = Array(line.utf8)
        bytes.withUnsafeMutableBytes { buffer in
            var offset = 0
            while offset < buffer.count {
                let n = Glibc.write(2, buffer.baseAddress! + offset, buffer.count - offset)
                if n <= 0 { break }
                offset += n
            }
        }
    }
}
