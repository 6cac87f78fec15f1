// One small logger for every layer: lines go to stderr as "dropboxfs[LEVEL]: message".
// Never pass a token, an Authorization header or a request body to it; callers log routes, paths,
// statuses and request ids only. Every message passes through `escaped` on its way out, so no
// name or server text can forge a line or drive a terminal; names are also `quoted` by callers.
// The level and the sink are guarded by `state`'s mutex.

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
        /// Replace stderr output while any is installed (tests capture lines this way; several
        /// test suites may capture at once).
        var sinks: [Int: @Sendable (LogLevel, String) -> Void] = [:]
        var nextSink = 0
    }

    private static let state = Mutex(State())

    public static var level: LogLevel {
        get { state.withLock { $0.level } }
        set { state.withLock { $0.level = newValue } }
    }

    /// Sends log lines to `sink` (and every other installed sink) instead of stderr until
    /// `removeSink` is called with the returned id.
    public static func addSink(_ sink: @escaping @Sendable (LogLevel, String) -> Void) -> Int {
        state.withLock { s in
            defer { s.nextSink += 1 }
            s.sinks[s.nextSink] = sink
            return s.nextSink
        }
    }

    public static func removeSink(_ id: Int) {
        _ = state.withLock { $0.sinks.removeValue(forKey: id) }
    }

    /// A name or path quoted for a log line: `"` + `escaped(text)` + `"`, with `"` and `\` escaped
    /// too, so where a quoted name ends is never in doubt.
    public static func quoted(_ text: String) -> String {
        "\"" + escape(text, alsoQuotes: true) + "\""
    }

    /// Untrusted text made safe for one log or terminal line, the one rule every log line, error
    /// message and status line goes through: control characters (C0, DEL, C1: a newline could
    /// forge a log line, ESC or CSI drive the terminal, a NUL make the log "binary") appear as
    /// \xNN, and the bidirectional overrides that reorder what a terminal shows as \u{NNNN}.
    public static func escaped(_ text: String) -> String {
        escape(text, alsoQuotes: false)
    }

    private static func escape(_ text: String, alsoQuotes: Bool) -> String {
        // The common case: nothing to escape, no copy.
        if !text.unicodeScalars.contains(where: { needsEscape($0, alsoQuotes: alsoQuotes) }) { return text }
        var out = ""
        for scalar in text.unicodeScalars {
            guard needsEscape(scalar, alsoQuotes: alsoQuotes) else {
                out.unicodeScalars.append(scalar)
                continue
            }
            let hex = String(scalar.value, radix: 16)
            if scalar.value <= 0xFF {
                out += "\\x" + (hex.count < 2 ? "0" + hex : hex)
            } else {
                out += "\\u{" + hex + "}"
            }
        }
        return out
    }

    private static func needsEscape(_ scalar: Unicode.Scalar, alsoQuotes: Bool) -> Bool {
        switch scalar.value {
        case 0..<0x20, 0x7F...0x9F, 0x202A...0x202E, 0x2066...0x2069: return true
        case 0x22, 0x5C: return alsoQuotes
        default: return false
        }
    }

    public static func isEnabled(_ level: LogLevel) -> Bool { level >= self.level }

    public static func debug(_ message: @autoclosure () -> String) { write(.debug, message) }
    public static func info(_ message: @autoclosure () -> String) { write(.info, message) }
    public static func warning(_ message: @autoclosure () -> String) { write(.warning, message) }
    public static func error(_ message: @autoclosure () -> String) { write(.error, message) }

    private static func write(_ level: LogLevel, _ message: () -> String) {
        let (enabled, sinks) = state.withLock { ($0.level <= level, Array($0.sinks.values)) }
        guard enabled else { return }
        let text = escaped(message())
        if !sinks.isEmpty {
            for sink in sinks { sink(level, text) }
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
