// `dropboxfs pin PATH...`, `dropboxfs unpin PATH...` and `dropboxfs pinned [MOUNTPOINT...]`: folders
// (or files) kept available offline (docs/SEMANTICS.md, "Available offline"). The mount is
// read-only, so these talk to the daemon as `status` does, by reading extended attributes of the
// path on the mount (the daemon's side is DropboxFS's Filesystem+Pins.swift): reading
// `user.dropboxfs.pin.NONCE` pins the entry and answers what was done or why it was refused, once
// per nonce (a random one per request). A daemon of before nonces knows only the bare name: the
// command asks that when the daemon knows no such attribute. Each read runs on a thread of its
// own, so a daemon that does not answer cannot hang the command.

import CShim
import Dispatch
import DropboxFS
import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

enum PinCommand {
    /// How long a pin request waits for the daemon (it sums the sizes of the folder's files).
    static let answerTimeout = 30.0

    static func run(_ command: String, _ arguments: [String]) throws -> ExitCode {
        let spec = command == "pin" ? Options.pin : command == "unpin" ? Options.unpin : Options.pinned
        let parsed = try spec.parse(arguments)
        if parsed.has("help") {
            printOut(Help.command(spec))
            return .success
        }
        try LogOptions.apply(parsed)
        if command == "pinned" { return try list(parsed.positionals, json: parsed.has("json")) }
        guard !parsed.positionals.isEmpty else { throw UsageError(description: "\(command) takes one or more PATHs on a dropboxfs mount") }
        let kind = command == "pin" ? Filesystem.pinRequestAttribute : Filesystem.unpinRequestAttribute
        var result = ExitCode.success
        for path in parsed.positionals {
            do {
                let (resolved, _) = try onMount(path)
                let attribute = Filesystem.requestAttribute(kind, nonce: nonce())
                let answer = try ask(resolved, attribute, olderDaemon: kind)
                if answer.hasPrefix("refused: ") {
                    printError(String(answer.dropFirst("refused: ".count)))
                    result = .failure
                } else {
                    printOut(answer)
                }
            } catch {
                printError(error.message)
                if result == .success { result = error.code }
            }
        }
        return result
    }

    /// `path` resolved, and the dropboxfs mount of yours it is on.
    static func onMount(_ path: String) throws(CommandFailure) -> (path: String, mount: String) {
        guard let pointer = realpath(path, nil) else {
            throw CommandFailure(.mountPoint, "\(path): \(String(cString: strerror(errno)))")
        }
        let resolved = String(cString: pointer)
        free(pointer)
        let mounts = StatusCommand.mountedDropboxfs().filter { mount in
            resolved == mount || resolved.hasPrefix(mount.hasSuffix("/") ? mount : mount + "/")
        }
        guard let mount = mounts.max(by: { $0.utf8.count < $1.utf8.count }) else {
            throw CommandFailure(.mountPoint, "\(path) is not on a dropboxfs mount of yours (see `dropboxfs status`)")
        }
        return (resolved, mount)
    }

    /// A fresh request nonce: 16 random hex digits.
    static func nonce() -> String {
        let digits = String(UInt64.random(in: 0...UInt64.max), radix: 16)
        return String(repeating: "0", count: 16 - digits.count) + digits
    }

    /// The daemon's answer to reading `attribute` of `path`; when the daemon knows no such
    /// attribute and `olderDaemon` is given, its answer to that name instead.
    static func ask(
        _ path: String, _ attribute: String, olderDaemon: String? = nil, timeout: Double = answerTimeout
    ) throws(CommandFailure) -> String {
        let answer = Mutex<Result<String, CommandFailure>?>(nil)
        let done = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            // One read with the largest buffer (the daemon answers a request once per nonce; an
            // older one carried it out at every read).
            var buffer = [UInt8](repeating: 0, count: StatusCommand.attributeLimit)
            var n = dbx_getxattr(path, attribute, &buffer, buffer.count)
            var code = errno
            if n < 0, code == ENODATA || code == ENOTSUP, let olderDaemon {
                n = dbx_getxattr(path, olderDaemon, &buffer, buffer.count)
                code = errno
            }
            let result: Result<String, CommandFailure>
            if n >= 0 {
                result = .success(String(decoding: buffer[0..<n], as: UTF8.self))
            } else if code == ENODATA || code == ENOTSUP {
                result = .failure(
                    CommandFailure(.failure, "\(path): the daemon of this mount does not keep files offline (an older dropboxfs?)"))
            } else {
                result = .failure(CommandFailure(.failure, "\(path): \(String(cString: strerror(code)))"))
            }
            answer.withLock { $0 = result }
            done.signal()
        }
        guard done.wait(timeout: .now() + timeout) == .success, let result = answer.withLock({ $0 }) else {
            throw CommandFailure(.failure, "\(path): the mount did not answer within \(Int(timeout)) s (the daemon may be stuck)")
        }
        return try result.get()
    }

    /// One pin as the daemon lists it (Filesystem.pinsAttribute: tab-separated, path percent-encoded).
    struct Pin {
        var path: String
        var state: String
        var files: Int
        var presentFiles: Int
        var bytes: UInt64
        var presentBytes: UInt64
        var unavailable: Int

        init?(line: Substring) {
            let parts = line.split(separator: "\t", omittingEmptySubsequences: false)
            guard parts.count >= 7, let files = Int(parts[2]), let presentFiles = Int(parts[3]),
                let bytes = UInt64(parts[4]), let presentBytes = UInt64(parts[5]), let unavailable = Int(parts[6])
            else { return nil }
            path = String(parts[0]).removingPercentEncoding ?? String(parts[0])
            state = String(parts[1])
            (self.files, self.presentFiles, self.bytes, self.presentBytes, self.unavailable) =
                (files, presentFiles, bytes, presentBytes, unavailable)
        }

        var json: [String: Any] {
            [
                "path": path, "state": state, "files": files, "present_files": presentFiles, "bytes": bytes,
                "present_bytes": presentBytes, "unavailable": unavailable,
            ]
        }

        var text: String {
            var line = "\(path): \(state), \(presentFiles)/\(files) files, "
                + "\(StatusCommand.formatBytes(presentBytes)) of \(StatusCommand.formatBytes(bytes)) on disk"
            if unavailable > 0 { line += ", \(unavailable) export-only documents not kept" }
            return line
        }
    }

    static func list(_ mountpoints: [String], json: Bool) throws -> ExitCode {
        let mounts = mountpoints.isEmpty ? StatusCommand.mountedDropboxfs() : try mountpoints.map(StatusCommand.dropboxfsMount)
        var objects: [[String: Any]] = []
        var result = ExitCode.success
        for mount in mounts {
            var object: [String: Any] = ["path": mount]
            do {
                let text = try ask(mount, Filesystem.pinsAttribute, timeout: StatusCommand.mountAnswerTimeout)
                let pins = text.split(separator: "\n").compactMap(Pin.init(line:))
                object["pins"] = pins.map(\.json)
                if !json {
                    printOut("\(mount):" + (pins.isEmpty ? " nothing pinned" : ""))
                    for pin in pins { printOut("  " + pin.text) }
                }
            } catch {
                object["error"] = error.message
                if !json { printError(error.message) }
                result = .failure
            }
            objects.append(object)
        }
        if json {
            StatusWatch.printJSON(StatusWatch.encode(["mounts": objects]))
        } else if mounts.isEmpty {
            printOut("no dropboxfs mount")
        }
        return result
    }
}
