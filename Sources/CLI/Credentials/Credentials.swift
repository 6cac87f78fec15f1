// Which credentials a command uses, in this order: --access-token-file, DROPBOXFS_ACCESS_TOKEN, then
// the sign-in stored by `dropboxfs auth` (a refresh token, renewed access tokens). Tokens are never
// printed, logged, or put on a command line; a token from the environment is taken out of it at start
// (Secrets.swift), and the background daemon receives it over a pipe.

import DropboxAPI
import Log
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// The credentials in use and where they came from (for `dropboxfs status`).
struct ResolvedCredentials {
    var tokens: any AccessTokenProvider
    var source: String
    /// The account the stored sign-in belongs to (nil for a bare access token): how an offline
    /// mount finds its stored tree without asking Dropbox.
    var accountID: String? = nil
    /// For a bare access token, its keyed tag (CredentialTag.swift), when asked for: how an
    /// offline mount finds the stored tree of the token's account without asking Dropbox.
    var tokenTag: String? = nil
    /// What to do when Dropbox refuses these credentials while mounted (the log says it).
    var advice = "sign in again with `dropboxfs auth`"
}

/// The account a mount shows, once known: credentials replaced while it runs are used only when
/// Dropbox says they are of this account (a tree is never shown to another account's credentials,
/// nor another account's changes written into it).
final class MountedAccount: Sendable {
    private let id = Mutex<String?>(nil)

    func set(_ accountID: String) { id.withLock { $0 = accountID } }

    /// Whether `provider`'s credentials are of the mounted account: one users/get_current_account.
    func judge(_ provider: any AccessTokenProvider, endpoints: DropboxEndpoints) async -> ReloadingTokenProvider.Acceptance {
        guard let want = id.withLock({ $0 }) else { return .accepted }
        let client = DropboxHTTPClient(endpoints: endpoints, tokens: provider, transport: Shared.transport)
        do {
            let account = try await client.getCurrentAccount()
            guard account.accountId != want else { return .accepted }
            return .refused(
                "they are of the account \(Log.quoted(account.email)), not of the mounted one: unmount and mount "
                    + "again to show that account")
        } catch .authentication(let failure) {
            return .refused("Dropbox refuses them (\(failure))")
        } catch {
            return .unknown
        }
    }
}

enum Credentials {
    /// `timeouts`: of the OAuth token requests that renew a stored sign-in's access token.
    /// `tagFolder`: the cache folder whose key tags a bare access token (mounts with a stored tree).
    static func resolve(
        file: String?, profile: Profile, endpoints: DropboxEndpoints,
        timeouts: HTTPTimeouts = DropboxHTTPClient.Configuration().rpcTimeouts, tagFolder: String? = nil,
        mounted: MountedAccount? = nil
    ) throws(CommandFailure) -> ResolvedCredentials {
        let accept: @Sendable (any AccessTokenProvider) async -> ReloadingTokenProvider.Acceptance = { provider in
            guard let mounted else { return .accepted }
            return await mounted.judge(provider, endpoints: endpoints)
        }
        if let token = try accessToken(file: file) {
            let tokenTag = tagFolder.flatMap { CredentialTag.of(token: token, cacheFolder: $0) }
            guard let file else {
                return ResolvedCredentials(
                    tokens: StaticTokenProvider(token: token), source: "access token from DROPBOXFS_ACCESS_TOKEN",
                    tokenTag: tokenTag,
                    advice: "the token came from DROPBOXFS_ACCESS_TOKEN, which a running mount cannot read again: "
                        + "unmount, then mount with a new token (or use --access-token-file, which is read again)")
            }
            // Read again when it changes (ReloadingTokenProvider.swift); the daemon leaves the
            // working folder, so the path is made absolute now.
            let path = absolute(file)
            let tokens = ReloadingTokenProvider(
                initial: StaticTokenProvider(token: token), source: "the access token file \(path)",
                version: { fileVersion(path) },
                load: { (try? accessToken(file: path)).flatMap { $0 }.map { StaticTokenProvider(token: $0) } },
                accept: accept)
            return ResolvedCredentials(
                tokens: tokens, source: "access token from the file \(file)", tokenTag: tokenTag,
                advice: "write a new access token to \(path): the running mount reads it again")
        }
        if let stored = try CredentialStore.load(profile) {
            let oauth = OAuthClient(
                appKey: stored.appKey, endpoints: endpoints, transport: Shared.transport, timeouts: timeouts)
            let path = CredentialStore.path(profile)
            let tokens = ReloadingTokenProvider(
                initial: RefreshingTokenProvider(refreshToken: stored.refreshToken, oauth: oauth),
                source: "the stored sign-in \(path)", version: { fileVersion(path) },
                load: {
                    guard let again = try? CredentialStore.load(profile) else { return nil }
                    let oauth = OAuthClient(
                        appKey: again.appKey, endpoints: endpoints, transport: Shared.transport, timeouts: timeouts)
                    return RefreshingTokenProvider(refreshToken: again.refreshToken, oauth: oauth)
                }, accept: accept)
            return ResolvedCredentials(
                tokens: tokens, source: "stored sign-in\(profile.suffix) (\(path))", accountID: stored.accountId,
                advice: "run `dropboxfs auth\(profile.flag)` to sign in again: the running mount reads the new sign-in")
        }
        throw CommandFailure(
            .credentials,
            "no Dropbox credentials\(profile.suffix): run `dropboxfs auth\(profile.flag)` to sign in, or set DROPBOXFS_ACCESS_TOKEN, or pass --access-token-file FILE")
    }

    /// `path` made absolute against the working folder.
    static func absolute(_ path: String) -> String {
        guard !path.hasPrefix("/"), let cwd = getcwd(nil, 0) else { return path }
        defer { free(cwd) }
        return String(cString: cwd) + "/" + path
    }

    /// The identity, size and change time of the file at `path` (nil when it cannot be read):
    /// a rewrite in place or a rename over it changes it.
    static func fileVersion(_ path: String) -> String? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        return "\(info.st_dev):\(info.st_ino):\(info.st_size):\(info.st_ctim.tv_sec).\(info.st_ctim.tv_nsec)"
            + ":\(info.st_mtim.tv_sec).\(info.st_mtim.tv_nsec)"
    }

    /// The explicitly given access token, nil when neither the file nor the variable is given.
    static func accessToken(file: String?) throws(CommandFailure) -> String? {
        if let file {
            guard let handle = fopen(file, "r") else {
                let reason = String(cString: strerror(errno))
                // A token given where its file's name belongs must not end in a log or a journal.
                let named = file.count >= 40 && !file.contains("/") ? "(its name is not shown: it looks like a token)" : file
                throw CommandFailure(.credentials, "cannot read access token file \(named): \(reason)")
            }
            defer { fclose(handle) }
            var bytes: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 4096)
            while true {
                let n = fread(&buffer, 1, buffer.count, handle)
                if n <= 0 { break }
                bytes.append(contentsOf: buffer[0..<n])
                if bytes.count > 64 * 1024 { break }
            }
            let token = String(decoding: bytes, as: UTF8.self).trimmingWhitespace()
            guard !token.isEmpty else { throw CommandFailure(.credentials, "access token file \(file) is empty") }
            return token
        }
        if let token = Secrets.environmentToken?.trimmingWhitespace(), !token.isEmpty {
            return token
        }
        return nil
    }
}

extension String {
    func trimmingWhitespace() -> String {
        let scalars = unicodeScalars
        guard let first = scalars.firstIndex(where: { !$0.properties.isWhitespace }) else { return "" }
        let last = scalars.lastIndex(where: { !$0.properties.isWhitespace })!
        return String(scalars[first...last])
    }
}
