// One small logger for every layer: lines go to stderr as
// "2025-06-01T14:03:07.512+02:00 dropboxfs[LEVEL]: message" (local time, ISO 8601). When stderr is
// the systemd journal (JOURNAL_STREAM names it), which times lines itself, a line starts instead
// with the syslog priority the journal reads ("<6>dropboxfs[info]: ..."). A log file given to
// `rotate` is renamed to FILE.1 once it passes its size cap, and a new one takes its place on
// descriptors 1 and 2 (so libfuse's own messages follow).
// Never pass a token, an Authorization header or a request body to it; callers log routes, paths,
// statuses and request ids only. Every message passes through `escaped` on its way out, so no
// name or server text can forge a line or drive a terminal; names are also `quoted` by callers.
// The level and the sink are guarded by `state`'s mutex.

import Synchronization
import SystemCalls

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
        var rotation: (path: String, limit: UInt64)?
    }

    /// Where stderr goes, decided once: the journal (no time of ours, a priority instead), or
    /// anything else (a terminal, a pipe, a file: each line timed).
    private static let toJournal: Bool = stderrIsJournal()
    /// True when the log goes to systemd's journal (for the status's "log=journal").
    public static var writesToJournal: Bool { toJournal }

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

    /// Keeps the log file at `path` (open on descriptor 2) under `limit` bytes: past it, the file
    /// becomes `path.1` (replacing an older one) and a new, empty file takes descriptors 1 and 2.
    public static func rotate(path: String, limit: UInt64) {
        state.withLock { $0.rotation = (path, limit) }
        rotateIfNeeded()
    }

    /// The time at the start of a line: local time with its UTC offset, to the millisecond.
    public static func timestamp(_ time: timespec? = nil) -> String {
        let now = time ?? SystemClock.realtime()
        var seconds = now.tv_sec
        var parts = tm()
        localtime_r(&seconds, &parts)
        var buffer = [CChar](repeating: 0, count: 48)
        let n = strftime(&buffer, buffer.count, "%Y-%m-%dT%H:%M:%S", &parts)
        let base = String(decoding: buffer[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        let millis = Int(now.tv_nsec / 1_000_000)
        let offset = parts.tm_gmtoff
        let sign = offset < 0 ? "-" : "+"
        let minutes = abs(offset) / 60
        return base + "." + pad(millis, 3) + sign + pad(minutes / 60, 2) + ":" + pad(minutes % 60, 2)
    }

    private static func pad(_ value: Int, _ width: Int) -> String {
        let digits = String(value)
        return digits.count >= width ? digits : String(repeating: "0", count: width - digits.count) + digits
    }


    /// True when JOURNAL_STREAM ("DEVICE:INODE") names the stream on descriptor 2: a child whose
    /// stderr was sent elsewhere inherits the variable, so the variable alone is not enough.
    private static func stderrIsJournal() -> Bool {
        guard let raw = getenv("JOURNAL_STREAM") else { return false }
        let parts = String(cString: raw).split(separator: ":")
        guard parts.count == 2, let device = UInt64(parts[0]), let inode = UInt64(parts[1]) else { return false }
        var st = stat()
        guard fstat(2, &st) == 0 else { return false }
        return UInt64(st.st_dev) == device && UInt64(st.st_ino) == inode
    }

    /// syslog priorities, which the journal reads from a line's "<N>" prefix.
    private static func priority(_ level: LogLevel) -> Int {
        switch level {
        case .debug: return 7
        case .info: return 6
        case .warning: return 4
        case .error: return 3
        }
    }

    private static func rotateIfNeeded() {
        state.withLock { s in
            guard let (path, limit) = s.rotation else { return }
            var open2 = stat()
            var named = stat()
            // Only the file descriptor 2 still is (never one someone put in its place).
            guard fstat(2, &open2) == 0, (open2.st_mode & S_IFMT) == S_IFREG, UInt64(open2.st_size) > limit,
                lstat(path, &named) == 0, named.st_dev == open2.st_dev, named.st_ino == open2.st_ino
            else { return }
            guard rename(path, path + ".1") == 0 else { return }
            let fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0o600)
            guard fd >= 0 else { return }
            dup2(fd, 1)
            dup2(fd, 2)
            close(fd)
        }
    }

    public static func debug(_ message: @autoclosure () -> String) { write(.debug, message) }
    public static func info(_ message: @autoclosure () -> String) { write(.info, message) }
    public static func warning(_ message: @autoclosure () -> String) { write(.warning, message) }
    public static func error(_ message: @autoclosure () -> String) { write(.error, message) }
    /// A line at a level decided by the caller.
    public static func log(_ level: LogLevel, _ message: @autoclosure () -> String) { write(level, message) }

    private static func write(_ level: LogLevel, _ message: () -> String) {
        let (enabled, sinks) = state.withLock { ($0.level <= level, Array($0.sinks.values)) }
        guard enabled else { return }
        let text = escaped(message())
        if !sinks.isEmpty {
            for sink in sinks { sink(level, text) }
            return
        }
        let line: String
        if toJournal {
            line = "<\(priority(level))>dropboxfs[\(level.label)]: \(text)\n"
        } else {
            line = "\(timestamp()) dropboxfs[\(level.label)]: \(text)\n"
        }
        // Not retried on EINTR: a line a signal interrupts is cut, never finished late.
        Array(line.utf8).withUnsafeBytes { buffer in
            _ = try? FileDescriptor.standardError.writeAll(buffer, retryOnInterrupt: false)
        }
        if state.withLock({ $0.rotation != nil }) { rotateIfNeeded() }
    }
}
