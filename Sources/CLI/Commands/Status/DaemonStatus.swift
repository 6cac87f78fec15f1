// What the daemon adds to its root's status line about itself, so `dropboxfs status` can say which
// version each mount runs, where that mount's log is and until when Dropbox rate-limits it:
// `version=0.9.0 commit=4b4622a1c2d3 pid=123 log=/home/u/.local/state/dropboxfs/dropboxfs.log`,
// `log=journal log_unit=dropboxfs.service log_scope=user` under systemd, and
// `rate_limited_until=2026-12-06T08:01:02Z` while a 429's pause holds requests.
//
// One log location per mount: the log file for a background daemon (the profile's, or
// --log-file), --log-file in the foreground, the journal when standard error is systemd's
// journal, the file standard error was sent to, or `stderr` (a terminal or a pipe: not kept).
// Values are one word each (the line is split on spaces): the log's path is percent-encoded.
// Nothing here is mutable: the fields are computed once at mount, the pause asked of the pacer.

import DropboxAPI
import DropboxFS
import Foundation
import Log

#if canImport(Glibc)
    import Glibc
#endif

enum DaemonStatus {
    /// The status fields of this daemon; `logFile` is where its log was sent, when a file was
    /// named (background, or --log-file in the foreground).
    static func fields(logFile: String?, pacer: Pacer) -> @Sendable () -> [String] {
        let fixed = ["version=\(BuildInfo.version)", "commit=\(BuildInfo.commit)", "pid=\(getpid())"]
            + logFields(logFile: logFile)
        return {
            fixed + (pacer.pausedUntilWallTime.map { ["rate_limited_until=\(Connectivity.timestamp($0))"] } ?? [])
        }
    }

    static func logFields(logFile: String?) -> [String] {
        if let logFile { return ["log=" + encode(logFile)] }
        if Log.writesToJournal {
            guard let unit = systemdUnit() else { return ["log=journal"] }
            return ["log=journal", "log_unit=" + encode(unit.name), "log_scope=" + (unit.user ? "user" : "system")]
        }
        var info = stat()
        if fstat(2, &info) == 0, info.st_mode & S_IFMT == S_IFREG, let path = link("/proc/self/fd/2") {
            return ["log=" + encode(path)]
        }
        return ["log=stderr"]
    }

    /// The systemd unit this process runs in, from its cgroup ("0::/user.slice/.../user@1000.service/
    /// app.slice/dropboxfs.service"): nil when the last part is not a service.
    static func systemdUnit(cgroup: String? = try? String(contentsOfFile: "/proc/self/cgroup", encoding: .utf8))
        -> (name: String, user: Bool)?
    {
        guard let line = cgroup?.split(separator: "\n").first(where: { $0.hasPrefix("0::") }),
            let last = line.split(separator: "/").last, last.hasSuffix(".service")
        else { return nil }
        return (String(last), line.contains("/user@"))
    }

    private static func link(_ path: String) -> String? {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let n = readlink(path, &buffer, buffer.count - 1)
        guard n > 0 else { return nil }
        return String(decoding: buffer[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Letters, digits and `/-._~` as they are; every other byte as %XX (spaces, '%', '=', any
    /// control or non-ASCII byte).
    static func encode(_ text: String) -> String {
        var out = ""
        for byte in text.utf8 {
            let c = Character(Unicode.Scalar(byte))
            if byte < 0x80 && (c.isLetter || c.isNumber || "/-._~+,:@".contains(c)) {
                out.append(c)
            } else {
                out += String(format: "%%%02X", byte)
            }
        }
        return out
    }

    static func decode(_ text: String) -> String { text.removingPercentEncoding ?? text }
}
