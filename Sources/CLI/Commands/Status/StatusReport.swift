// What `dropboxfs status` knows, for its three forms: lines for people, `--json` for scripts, and
// `--watch`, which follows the mounts' first listing ("listing: 412,000 entries, 46,000/s") until
// interrupted or no mount is left: redrawn in place on a terminal, one line per change otherwise.

import DropboxAPI
import FUSEAdapter
import Foundation
import Log
import SystemCalls

#if canImport(Glibc)
    import Glibc
#endif

/// One mount and what its status attribute says.
struct MountState {
    var path: String
    /// The attribute's line as the daemon wrote it; nil when it could not be read.
    var raw: String?
    /// Its key=value pairs (empty when the daemon did not answer).
    var fields: [String: String]
    var answering: Bool
    /// The mount's source in the mount table: "dropboxfs", or the profile's name.
    var source: String?

    /// The profile a mount belongs to, from its source (nil: the default profile).
    var profile: String? {
        guard let source, !MountHelper.defaultSources.contains(source) else { return nil }
        return source
    }

    /// " (profile work)" or "".
    var profileSuffix: String { profile.map { " (profile \($0))" } ?? "" }

    /// This user's dropboxfs mounts (only those in `only`, when it is not empty). Paths are
    /// compared byte for byte, as the mount table has them: Swift's String == takes two spellings
    /// of one text (café composed and decomposed) as equal, and they are two folders.
    static func all(only: [String] = []) -> [MountState] {
        let sources = mountSources()
        let wanted = Set(only.map { Array($0.utf8) })
        return StatusCommand.mountedDropboxfs().filter { only.isEmpty || wanted.contains(Array($0.utf8)) }.map { path in
            let raw = StatusCommand.readStatus(path)
            let answering = raw.map { !$0.hasPrefix("(not answering") } ?? false
            var fields: [String: String] = [:]
            if answering, let raw {
                for part in raw.split(separator: " ") {
                    let pair = part.split(separator: "=", maxSplits: 1).map(String.init)
                    if pair.count == 2 { fields[pair[0]] = pair[1] }
                }
            }
            return MountState(
                path: path, raw: raw, fields: fields, answering: answering, source: sources[Array(path.utf8)])
        }
    }

    /// Mount point (its bytes) -> source of every fuse.dropboxfs mount in /proc/self/mountinfo
    /// ("... MOUNTPOINT ... - TYPE SOURCE SUPEROPTIONS").
    static func mountSources() -> [[UInt8]: String] {
        mounts { $0.source.isEmpty ? nil : $0.source }
    }

    /// Mount point (its bytes) -> what `value` takes from the entry of every fuse.dropboxfs mount
    /// in the kernel's mount table (MountInfo, the one parser).
    static func mounts<T>(_ value: (MountEntry) -> T?) -> [[UInt8]: T] {
        var result: [[UInt8]: T] = [:]
        for entry in MountInfo.entries() where entry.fileSystemType == "fuse.dropboxfs" {
            if let picked = value(entry) { result[Array(entry.mountPoint.utf8)] = picked }
        }
        return result
    }

    var entries: Int? { fields["entries"].flatMap { Int($0) } }
    /// Entries per second of the whole-account listing ("46000/s" in the attribute).
    var rate: Int? { fields["rate"].flatMap { Int($0.hasSuffix("/s") ? String($0.dropLast(2)) : $0) } }
    var phase: String? { fields["phase"] }
    /// Until when Dropbox's rate limit holds this mount's requests ("2026-12-06T08:01:02Z").
    var rateLimitedUntil: String? { fields["rate_limited_until"] }

    /// Where this mount's log is, for people: a file's path, "the journal (journalctl --user -u
    /// dropboxfs.service)", or "standard error (not kept)"; nil when the daemon does not say
    /// (one older than the field).
    var logLocation: String? {
        guard let log = fields["log"].map(DaemonStatus.decode) else { return nil }
        switch log {
        case "journal":
            guard let unit = fields["log_unit"].map(DaemonStatus.decode) else { return "the journal" }
            return "the journal (journalctl\(fields["log_scope"] == "user" ? " --user" : "") -u \(unit))"
        case "stderr": return "standard error (not kept)"
        default: return log
        }
    }

    /// The log file to read the end of, when the log is one.
    var logFile: String? {
        fields["log"].map(DaemonStatus.decode).flatMap { $0.hasPrefix("/") ? $0 : nil }
    }

    /// "dropboxfs 0.9.0 (commit 4b4622a1c2d3), pid 123", saying when the daemon runs another build
    /// than this command (a remount runs this one); nil when the daemon does not say (an older one).
    var daemonBuild: String? {
        guard answering, let version = fields["version"] else { return nil }
        var text = "dropboxfs \(version)" + (fields["commit"].map { " (commit \($0))" } ?? "")
        if let pid = fields["pid"] { text += ", pid \(pid)" }
        if version != BuildInfo.version || (fields["commit"].map { $0 != BuildInfo.commit } ?? false) {
            text += " (this command is \(BuildInfo.versionLine): remount to run it)"
        }
        return text
    }

    /// "daemon: dropboxfs 0.9.0 (commit 4b4622a1c2d3), pid 123; log: /path"; nil when the daemon
    /// says neither.
    var daemonLine: String? {
        let parts = [daemonBuild, answering ? logLocation.map { "log: " + $0 } : nil].compactMap { $0 }
        return parts.isEmpty ? nil : "daemon: " + parts.joined(separator: "; ")
    }

    /// Failed requests per FUSE operation (`failed_read=2` in the attribute), in the daemon's order.
    var failures: [(operation: String, count: Int)] {
        guard let raw, answering else { return [] }
        return raw.split(separator: " ").compactMap { part in
            let pair = part.split(separator: "=", maxSplits: 1)
            guard pair.count == 2, pair[0].hasPrefix("failed_"), let count = Int(pair[1]) else { return nil }
            return (String(pair[0].dropFirst("failed_".count)), count)
        }
    }

    /// "failed requests: getxattr 2, read 1", nil when none failed.
    var failuresLine: String? {
        let failures = self.failures
        guard !failures.isEmpty else { return nil }
        return "failed requests: " + failures.map { "\($0.operation) \($0.count)" }.joined(separator: ", ")
    }

    /// "listing: 412,000 entries, 46,000/s", "complete: 412,000 entries (listed in 9.1 s), following changes", ...
    var summary: String {
        guard answering else { return raw ?? "status unavailable" }
        let count = entries.map(Self.grouped) ?? "?"
        var text: String
        switch phase {
        case "filling":
            text = "listing: \(count) entries" + (rate.map { ", \(Self.grouped($0))/s" } ?? "")
        case "watching":
            text = "complete: \(count) entries" + (fields["fill_seconds"].map { " (listed in \($0) s)" } ?? "") + ", following changes"
        case "complete":
            text = "complete: \(count) entries, not following changes (--no-watch)"
        case "lazy":
            text = "\(count) entries known; folders are listed when opened (--no-prefetch)"
        default:
            text = "\(count) entries"
        }
        if let since = fields["offline_since"] { text += "; offline since \(since)" }
        for host in ["content", "notify"] {
            if let since = fields["unreachable_\(host)"] {
                text += "; Dropbox's \(host) host unreachable since \(since)"
            }
        }
        if fields["sign_in"] == "refused" {
            let why = fields["sign_in_error"].map { " (\($0.replacingOccurrences(of: "_", with: " ")))" } ?? ""
            text += "; sign-in refused since \(fields["sign_in_since"] ?? "?")\(why): see the log for what to do"
        }
        if fields["stale"] == "1" {
            text += "; stale: not caught up with Dropbox since \(fields["as_of"] ?? "the start")"
        } else if let asOf = fields["as_of"], fields["offline_since"] != nil || fields["behind_since"] != nil {
            // Only when it may be old: while current, it moves with every longpoll.
            text += "; as of \(asOf)"
        }
        if let since = fields["behind_since"] {
            let why = fields["behind_error"].map { " (\($0.replacingOccurrences(of: "_", with: " ")))" } ?? ""
            text += "; catching up fails since \(since)\(why)"
        }
        if let until = rateLimitedUntil { text += "; rate limited by Dropbox until \(until)" }
        if let failures = fields["fill_failures"] {
            text += "; \(failures) listing failures, retrying" + (fields["last_failure"].map { " (last: \($0))" } ?? "")
        }
        if let waiting = fields["waiting"], waiting != "0" {
            text += waiting == "1" ? "; 1 request waiting for Dropbox" : "; \(waiting) requests waiting for Dropbox"
        }
        return text
    }

    /// 412000 -> "412,000".
    static func grouped(_ value: Int) -> String {
        let digits = String(abs(value))
        var out = ""
        for (index, digit) in digits.enumerated() {
            if index > 0 && (digits.count - index) % 3 == 0 { out.append(",") }
            out.append(digit)
        }
        return (value < 0 ? "-" : "") + out
    }

    var jsonObject: [String: Any] {
        var object: [String: Any] = ["path": path, "answering": answering, "profile": profile ?? NSNull()]
        if answering {
            var status: [String: Any] = [:]
            for (key, value) in fields { status[key] = Int(value) ?? value }
            object["status"] = status
            object["phase"] = phase ?? NSNull()
            object["entries"] = entries ?? NSNull()
            object["rate"] = rate ?? NSNull()
            object["summary"] = summary
            object["failures"] = Dictionary(failures.map { ($0.operation, $0.count) }, uniquingKeysWith: +)
            object["version"] = fields["version"] ?? NSNull()
            object["commit"] = fields["commit"] ?? NSNull()
            object["pid"] = fields["pid"].flatMap { Int($0) } ?? NSNull()
            object["log"] = fields["log"].map(DaemonStatus.decode) ?? NSNull()
            object["log_unit"] = fields["log_unit"].map(DaemonStatus.decode) ?? NSNull()
            object["rate_limited_until"] = rateLimitedUntil ?? NSNull()
        }
        object["raw"] = raw ?? NSNull()
        return object
    }
}

struct StatusReport {
    var profile: String?
    var credentials: String?
    var account: FullAccount?
    var space: SpaceUsage?
    var failure: CommandFailure?
    var mounts: [MountState] = []

    func json() -> String {
        var object: [String: Any] = [
            "version": BuildInfo.version, "commit": BuildInfo.commit, "libfuse": BuildInfo.libfuseVersion,
            "libcurl": BuildInfo.libcurlVersion, "profile": profile ?? NSNull(), "credentials": credentials ?? NSNull(),
            "mounts": mounts.map(\.jsonObject),
        ]
        if let account {
            object["account"] = [
                "name": account.displayName, "email": account.email, "type": account.accountType, "id": account.accountId,
            ]
        } else {
            object["account"] = NSNull()
        }
        if let space {
            object["space"] = ["used": space.effectiveUsed, "allocated": space.effectiveLimit.map { $0 as Any } ?? NSNull()]
        } else {
            object["space"] = NSNull()
        }
        if let failure {
            object["error"] = ["code": Int(failure.code.rawValue), "message": failure.message]
        } else {
            object["error"] = NSNull()
        }
        return StatusWatch.encode(object)
    }
}

enum StatusWatch {
    /// One line of JSON that is also safe on a terminal: JSONSerialization escapes C0 controls,
    /// and here DEL, C1 controls and the bidirectional overrides (Log.escaped's set) become \uXXXX
    /// too. They can only stand inside strings, so the JSON stays valid and means the same.
    static func encode(_ object: Any) -> String {
        guard let data = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]) else { return "{}" }
        var out = ""
        for scalar in String(decoding: data, as: UTF8.self).unicodeScalars {
            switch scalar.value {
            case 0..<0x20, 0x7F...0x9F, 0x202A...0x202E, 0x2066...0x2069:
                let hex = String(scalar.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default:
                out.unicodeScalars.append(scalar)
            }
        }
        return out
    }

    /// Prints a JSON line as it is (encode made it safe).
    static func printJSON(_ text: String) { raw(text + "\n") }

    /// Follows the mounts (all of this user's, or those in `only`) once a second until none is left
    /// (exit 0) or the user interrupts.
    static func run(json: Bool, only: [String] = [], interval: Double = 1) -> ExitCode {
        let terminal = isatty(1) == 1 && !json
        var previous: [String] = []
        var drawn = 0
        while true {
            let mounts = MountState.all(only: only)
            if json {
                let object: [String: Any] = ["time": Log.timestamp(), "mounts": mounts.map(\.jsonObject)]
                raw(encode(object) + "\n")
            } else {
                let lines = mounts.isEmpty ? ["no dropboxfs mount"] : mounts.map { "\($0.path)\($0.profileSuffix): \($0.summary)" }
                if terminal {
                    // Back to the first line drawn last time, and clear from there down.
                    if drawn > 0 { raw("\u{1B}[\(drawn)F\u{1B}[J") }
                    raw(lines.map { Log.escaped($0) + "\n" }.joined())
                    drawn = lines.count
                } else if lines != previous {
                    raw(lines.map { Log.escaped("\(Log.timestamp()) \($0)") + "\n" }.joined())
                }
                previous = lines
            }
            if mounts.isEmpty { return .success }
            usleep(useconds_t(interval * 1_000_000))
        }
    }

    /// Bytes to stdout as they are (the caller escaped any text from elsewhere).
    static func raw(_ text: String) {
        let bytes = Array(text.utf8)
        var offset = 0
        while offset < bytes.count {
            let n = bytes[offset...].withUnsafeBytes { write(1, $0.baseAddress!, $0.count) }
            if n <= 0 { return }
            offset += n
        }
    }
}
