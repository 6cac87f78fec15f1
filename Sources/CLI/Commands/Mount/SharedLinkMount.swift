// `dropboxfs mount --shared-link URL [--link-password-file F] MOUNTPOINT`: the link's checks, its
// password, and opening it before anything is mounted, so each way Dropbox refuses a link is one
// line naming it and an exit code of its own (ExitCode.swift). The password is read from a file
// (never the command line, which `ps` shows) and appears in no message or log line; neither does
// the URL's query (its `rlkey` grants access as the URL does). The mount then runs on the link's
// source (DropboxFS SharedLinkSource): no whole-tree fill, no watcher, folders listed again after
// --dir-cache-time.

import DropboxAPI
import DropboxFS
import Log

#if canImport(Glibc)
    import Glibc
#endif

struct SharedLinkMount {
    let link: SharedLinkArg

    /// The link of `--shared-link`, checked for shape only (Dropbox decides the rest).
    static func checkedURL(_ text: String) throws(UsageError) -> String {
        let url = text.trimmingWhitespace()
        guard url.hasPrefix("https://") || url.hasPrefix("http://"), url.count > "https://".count,
            !url.unicodeScalars.contains(where: { $0.properties.isWhitespace || $0.value < 0x20 || $0.value == 0x7F })
        else {
            throw UsageError(description: "--shared-link takes the link's URL (https://www.dropbox.com/...)")
        }
        return url
    }

    /// The link with the password from `passwordFile` (its first line, without the line end).
    static func resolve(url: String, passwordFile: String?) throws(CommandFailure) -> SharedLinkMount {
        guard let passwordFile else { return SharedLinkMount(link: SharedLinkArg(url: url)) }
        guard let handle = fopen(passwordFile, "r") else {
            throw CommandFailure(.usage, "cannot read the link password file \(passwordFile): \(String(cString: strerror(errno)))")
        }
        defer { fclose(handle) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while bytes.count <= 64 * 1024 {
            let n = fread(&buffer, 1, buffer.count, handle)
            if n <= 0 { break }
            bytes.append(contentsOf: buffer[0..<n])
        }
        let line = bytes.split(separator: UInt8(ascii: "\n"), maxSplits: 1, omittingEmptySubsequences: false).first ?? []
        var password = String(decoding: line, as: UTF8.self)
        if password.hasSuffix("\r") { password.removeLast() }
        guard !password.isEmpty else { throw CommandFailure(.usage, "the link password file \(passwordFile) is empty") }
        return SharedLinkMount(link: SharedLinkArg(url: url, password: password))
    }

    /// Asks Dropbox for the link: the source the core mounts, or the failure that names why not.
    func open(_ client: DropboxHTTPClient, endpoints: DropboxEndpoints) throws(CommandFailure) -> SharedLinkSource {
        do {
            return try runBlocking { [link] in try await SharedLinkSource.open(link, routes: client) }
        } catch let error as DropboxError {
            throw failure(error, endpoints: endpoints)
        } catch {
            throw CommandFailure(.failure, "\(error)")
        }
    }

    func failure(_ error: DropboxError, endpoints: DropboxEndpoints) -> CommandFailure {
        let name = "the shared link \(link)"
        switch error {
        case .sharedLink(.notFound):
            return CommandFailure(
                .linkNotFound, "\(name) has expired or does not exist (removed, or the URL is wrong): Dropbox answers the same for each")
        case .sharedLink(.accessDenied) where link.password != nil:
            return CommandFailure(.linkPassword, "wrong password for \(name) (or the link is not open to this account)")
        case .sharedLink(.accessDenied):
            return CommandFailure(
                .linkAccessDenied, "access denied to \(name): it needs a password (--link-password-file) or is not open to this account")
        case .sharedLink(.unsupportedLinkType), .sharedLink(.isDirectory):
            return CommandFailure(.linkUnsupported, "\(name) is a kind of link dropboxfs cannot mount (only links to a folder or a file)")
        case .authentication(.missingScope(let scope)):
            return CommandFailure(
                .credentials, "the Dropbox app lacks the permission '\(scope)', which reading a shared link needs: "
                    + "tick it on the app's Permissions tab, then run `dropboxfs auth` again")
        default:
            return AccountCheck.failure(error, endpoints: endpoints)
        }
    }

    /// What the mount shows, for its messages: "the shared folder NAME" or "the shared file NAME".
    static func describe(_ source: SharedLinkSource) -> String {
        "the shared \(source.isFileLink ? "file" : "folder") \(Log.quoted(source.root.name))"
    }
}
