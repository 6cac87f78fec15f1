// `dropboxfs status`: who is signed in, how full the account is, which credentials are in use, and
// the active dropboxfs mounts with their sync progress (read from each mount's root
// `user.dropboxfs.status` attribute, so no socket or state file is needed).

import CShim
import Dispatch
import DropboxAPI
import DropboxFS
import FUSEAdapter
import Foundation
import Log
import Synchronization
import SystemCalls

#if canImport(Glibc)
    import Glibc
#endif

enum StatusCommand {
    static func run(_ arguments: [String]) throws -> ExitCode {
        let parsed = try Options.status.parse(arguments)
        if parsed.has("help") {
            printOut(Help.command(Options.status))
            return .success
        }
        try LogOptions.apply(parsed)
        let only = try parsed.positionals.map(Self.dropboxfsMount)
        let environment = ProcessInfo.processInfo.environment
        let profile = try Profile.resolve(parsed, environment: environment)
        var endpoints = DropboxEndpoints.fromEnvironment(environment)
        if let url = parsed.value("api-url") {
            endpoints = DropboxEndpoints(api: url, content: endpoints.content, notify: endpoints.notify, oauth: endpoints.oauth)
        }
        endpoints = try endpoints.approved()
        let json = parsed.has("json")
        let verbose = parsed.has("verbose")
        if parsed.has("report") {
            guard !json, !parsed.has("watch") else {
                throw UsageError(description: "--report is text for a bug report: give it without --json and --watch")
            }
            printOut(BugReport.text(profile: profile, tokenFile: parsed.value("access-token-file"), only: only))
            return .success
        }
        if parsed.has("watch") { return StatusWatch.run(json: json, only: only) }

        var report = StatusReport(profile: profile.name)
        var result = ExitCode.success
        if !json { printOut("version:     \(BuildInfo.summary)") }
        do {
            let credentials = try Credentials.resolve(
                file: parsed.value("access-token-file"), profile: profile, endpoints: endpoints)
            report.credentials = credentials.source
            if !json { printOut("credentials: \(credentials.source)") }
            let client = DropboxHTTPClient(endpoints: endpoints, tokens: credentials.tokens, transport: Shared.transport)
            let account = try AccountCheck.verify(client, endpoints: endpoints)
            report.account = account
            // Server text: one line each, whatever it holds.
            if !json {
                printOut(
                    "account:     \(Log.escaped(account.displayName)) <\(Log.escaped(account.email))> "
                        + "(\(Log.escaped(account.accountType)))")
                if let line = TeamSpace.statusLine(account.rootInfo) { printOut("team space:  \(line)") }
            }
            report.space = try? runBlocking({ try await client.getSpaceUsage() })
            if !json { printOut("space:       \(report.space.map(spaceLine) ?? "unavailable")") }
        } catch {
            // Every call above throws CommandFailure only.
            if !json { printError(error.message) }
            report.failure = error
            result = error.code
        }
        report.mounts = MountState.all(only: only)
        if json {
            StatusWatch.printJSON(report.json())
            return result
        }
        if report.mounts.isEmpty {
            printOut("mounts:      none")
        } else {
            for mount in report.mounts {
                printOut("mount:       \(mount.path)\(mount.profileSuffix): \(mount.summary)")
                if let since = mount.fields["offline_since"] {
                    printOut("             offline since \(since): Dropbox cannot be reached; serving the known tree")
                }
                if let daemon = mount.daemonLine { printOut("             \(daemon)") }
                if let failures = mount.failuresLine { printOut("             \(failures)") }
                if let disk = diskLine(mount.fields) { printOut("             \(disk)") }
                if let pins = pinsLine(mount.fields) { printOut("             \(pins)") }
                if verbose, let raw = mount.raw { printOut("             status: \(raw)") }
            }
        }
        return result
    }

    /// A MOUNTPOINT argument: the absolute path of one of this user's dropboxfs mounts.
    static func dropboxfsMount(_ path: String) throws(CommandFailure) -> String {
        let resolved = realpath(path, nil).map { pointer -> String in
            defer { free(pointer) }
            return String(cString: pointer)
        }
        guard let resolved, dropboxfsMounts().contains(where: { $0.isMounted(at: resolved) }) else {
            throw CommandFailure(.mountPoint, "\(path) is not a dropboxfs mount of yours (see `dropboxfs status`)")
        }
        return resolved
    }

    /// The most bytes of an attribute read: the kernel's own limit (XATTR_SIZE_MAX).
    static let attributeLimit = 65536

    /// An extended attribute's value, nil when it is missing, empty or unreadable. Its size is
    /// asked first (a server's long error message can make the status line any length); when it
    /// grew before it was read (ERANGE), it is asked again.
    static func attribute(_ path: String, _ name: String) -> [UInt8]? {
        for _ in 0..<8 {
            let size = dbx_getxattr(path, name, nil, 0)
            guard size > 0, size <= attributeLimit else { return nil }
            var buffer = [UInt8](repeating: 0, count: size)
            let n = dbx_getxattr(path, name, &buffer, buffer.count)
            if n > 0 { return Array(buffer[0..<n]) }
            if n == 0 || errno != ERANGE { return nil }
        }
        return nil
    }

    /// The value of `key=value` in a status line, nil when absent.
    static func field(_ key: String, in line: String) -> String? {
        line.split(separator: " ").first { $0.hasPrefix(key + "=") }.map { String($0.dropFirst(key.count + 1)) }
    }

    /// "disk: cached contents 1.0 GiB, thumbnails 12.3 MiB": what the mount keeps on disk, from its
    /// status line, and how many files were read past a cache disk that did not answer; nil when it
    /// keeps neither.
    static func diskLine(_ fields: [String: String]) -> String? {
        var parts: [String] = []
        if let bytes = fields["disk_cache_bytes"].flatMap(UInt64.init) { parts.append("cached contents \(formatBytes(bytes))") }
        if let bytes = fields["thumbnail_bytes"].flatMap(UInt64.init) { parts.append("thumbnails \(formatBytes(bytes))") }
        if let bypassed = fields["disk_bypassed"].flatMap(Int.init), bypassed > 0 {
            parts.append("\(bypassed) \(bypassed == 1 ? "file" : "files") read from Dropbox because the cache disk did not answer")
        }
        return parts.isEmpty ? nil : "disk: " + parts.joined(separator: ", ")
    }

    /// "available offline: 2 pins, 3/5 files, 1.0 MiB of 2.0 MiB on disk" (`dropboxfs pinned` has
    /// each pin); nil when nothing is pinned.
    static func pinsLine(_ fields: [String: String]) -> String? {
        guard let pins = fields["pins"], let files = fields["pinned_files"], let present = fields["pinned_present_files"],
            let bytes = fields["pinned_bytes"].flatMap(UInt64.init),
            let presentBytes = fields["pinned_present_bytes"].flatMap(UInt64.init)
        else { return nil }
        return "available offline: \(pins) \(pins == "1" ? "pin" : "pins"), \(present)/\(files) files, "
            + "\(formatBytes(presentBytes)) of \(formatBytes(bytes)) on disk"
    }

    static func spaceLine(_ usage: SpaceUsage) -> String {
        let used = usage.effectiveUsed
        guard let limit = usage.effectiveLimit, limit > 0 else { return "\(formatBytes(used)) used" }
        let percent = Double(used) * 100 / Double(limit)
        return "\(formatBytes(used)) used of \(formatBytes(limit)) (\(String(format: "%.1f", percent))%)"
    }

    static func formatBytes(_ bytes: UInt64) -> String { ByteCount.readable(bytes) }

    /// This user's mount points of type fuse.dropboxfs (other users' mounts are theirs to ask).
    static func mountedDropboxfs() -> [String] { dropboxfsMounts().map(\.mountPoint) }

    /// This user's dropboxfs mounts, as the mount table has them.
    static func dropboxfsMounts() -> [MountEntry] {
        let me = getuid()
        return MountTable.entries().filter { $0.fileSystemType == "fuse.dropboxfs" && $0.fuseUserID == me }
    }

    /// How long `status` waits for a mount to answer: a stuck daemon must not hang the command.
    static let mountAnswerTimeout = 3.0

    /// The mount's status attribute, asked on a thread of its own; "(not answering)" when the mount
    /// does not answer in time (that thread is left behind, and ends with the process).
    static func readStatus(_ mountpoint: String) -> String? {
        let answer = Mutex<String??>(nil)
        let done = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            let text = attribute(mountpoint, "user.dropboxfs.status").map { String(decoding: $0, as: UTF8.self) }
            answer.withLock { $0 = .some(text) }
            done.signal()
        }
        guard done.wait(timeout: .now() + mountAnswerTimeout) == .success else {
            return "(not answering within \(Int(mountAnswerTimeout)) s: the daemon may be stuck)"
        }
        return answer.withLock { $0 } ?? nil
    }
}
