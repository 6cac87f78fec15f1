// `dropboxfs status --report`: one block of text to paste into a bug report. It says which build
// runs (this command's and each daemon's), on which system and libraries, and for each mount its
// status, its mount options, the command line it was started with and the last lines of its log.
// It asks nothing of Dropbox (a report is often made when Dropbox is the problem); the log lines
// may name the account's e-mail address, which the user sees before posting.
//
// No token or secret may appear in it: every line passes through Redactor.swift.

import FUSEAdapter
import Foundation
import Log

#if canImport(Glibc)
    import Glibc
#endif

enum BugReport {
    /// Log lines of each mount shown at the end of its part.
    static let logLines = 50

    static func text(profile: Profile, tokenFile: String?, only: [String]) -> String {
        let redactor = Redactor(secrets: knownSecrets(profile: profile, tokenFile: tokenFile))
        var lines = [
            "dropboxfs status --report (no token or secret is included; read it before posting)",
            "dropboxfs:   \(BuildInfo.versionLine)",
            "libraries:   \(BuildInfo.librariesLine)",
            "system:      \(system())",
            "profile:     \(profile.name ?? "default")",
            "credentials: \(credentialSource(profile: profile, tokenFile: tokenFile))",
        ]
        let mounts = MountState.all(only: only)
        let table = mountOptions()
        lines.append("mounts:      \(mounts.count)")
        for mount in mounts {
            lines.append("")
            lines.append("== mount \(mount.path)\(mount.profileSuffix)")
            lines.append("summary:     \(mount.summary)")
            if let build = mount.daemonBuild { lines.append("daemon:      \(build)") }
            if let options = table[Array(mount.path.utf8)] { lines.append("options:     \(options)") }
            if let pid = mount.fields["pid"].flatMap({ Int32($0) }), let command = commandLine(pid) {
                lines.append("command:     \(command)")
            }
            lines.append("status:      \(mount.raw ?? "(unavailable)")")
            lines.append(contentsOf: logTail(mount))
        }
        return lines.map(redactor.clean).joined(separator: "\n")
    }

    /// "Linux 6.1.0-28-amd64 #1 SMP ... x86_64; Debian GNU/Linux 12 (bookworm)".
    static func system() -> String {
        var name = utsname()
        uname(&name)
        func field<T>(_ value: T) -> String {
            withUnsafeBytes(of: value) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        }
        var text = "\(field(name.sysname)) \(field(name.release)) \(field(name.version)) \(field(name.machine))"
        if let release = try? String(contentsOfFile: "/etc/os-release", encoding: .utf8),
            let line = release.split(separator: "\n").first(where: { $0.hasPrefix("PRETTY_NAME=") })
        {
            text += "; " + line.dropFirst("PRETTY_NAME=".count).trimmingCharacters(in: CharacterSet(charactersIn: "\""))
        }
        return text
    }

    /// Which credentials a command would use, without reading them.
    static func credentialSource(profile: Profile, tokenFile: String?) -> String {
        if let tokenFile { return "the access token file \(tokenFile)" }
        if Secrets.environmentToken != nil { return "access token from \(Secrets.tokenVariable)" }
        let stored = CredentialStore.path(profile)
        return access(stored, F_OK) == 0 ? "the stored sign-in \(stored)" : "none found"
    }

    /// Every secret this command can know of, for the redactor.
    static func knownSecrets(profile: Profile, tokenFile: String?) -> [String] {
        var secrets: [String] = []
        if let token = Secrets.environmentToken { secrets.append(token) }
        if let token = try? Credentials.accessToken(file: tokenFile) { secrets.append(token) }
        if let stored = try? CredentialStore.load(profile) { secrets.append(stored.refreshToken) }
        return secrets
    }

    /// Mount point (its bytes) -> "ro,nosuid,...; rw,user_id=1000,..." (the mount's options, then
    /// the filesystem's) of every fuse.dropboxfs mount.
    static func mountOptions() -> [[UInt8]: String] {
        MountState.mounts { "\($0.mountOptions); \($0.superOptions)" }
    }

    /// The daemon's command line, its arguments separated by spaces (those holding a space quoted).
    static func commandLine(_ pid: Int32) -> String? {
        guard let data = FileManager.default.contents(atPath: "/proc/\(pid)/cmdline"), !data.isEmpty else { return nil }
        let arguments = data.split(separator: 0).map { String(decoding: $0, as: UTF8.self) }
        return Redactor.command(arguments).map { $0.contains(" ") || $0.isEmpty ? Log.quoted($0) : $0 }
            .joined(separator: " ")
    }

    /// "log: ..." and the last lines of the mount's log, when status can read them.
    static func logTail(_ mount: MountState) -> [String] {
        guard let location = mount.logLocation else { return ["log:         (the daemon does not say: an older version)"] }
        var lines = ["log:         \(location)"]
        if let file = mount.logFile {
            guard let tail = fileTail(file) else { return lines + ["(cannot read \(file))"] }
            lines.append("-- the last \(min(tail.count, logLines)) lines of \(file) --")
            lines.append(contentsOf: tail.suffix(logLines))
        } else if mount.fields["log"] == "journal", let unit = mount.fields["log_unit"].map(DaemonStatus.decode) {
            let user = mount.fields["log_scope"] == "user"
            let tail = journalTail(unit: unit, user: user)
            lines.append("-- the last \(logLines) lines of the journal of \(unit) --")
            lines.append(contentsOf: tail ?? ["(journalctl did not answer)"])
        }
        return lines
    }

    /// The last lines of a log file (read from its last 256 KiB).
    static func fileTail(_ path: String) -> [String]? {
        guard let handle = FileHandle(forReadingAtPath: path) else { return nil }
        defer { try? handle.close() }
        guard let end = try? handle.seekToEnd() else { return nil }
        let start = end > 256 << 10 ? end - (256 << 10) : 0
        try? handle.seek(toOffset: start)
        guard let data = try? handle.readToEnd() else { return [] }
        var lines = String(decoding: data, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false)
            .map(String.init)
        if start > 0 { lines.removeFirst() }  // cut in the middle
        if lines.last == "" { lines.removeLast() }
        return Array(lines.suffix(logLines))
    }

    static func journalTail(unit: String, user: Bool) -> [String]? {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["journalctl"] + (user ? ["--user"] : []) + ["-u", unit, "-n", "\(logLines)", "--no-pager", "-q"]
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = FileHandle.nullDevice
        process.standardInput = FileHandle.nullDevice
        guard (try? process.run()) != nil else { return nil }
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { return nil }
        return String(decoding: data, as: UTF8.self).split(separator: "\n").map(String.init)
    }
}
