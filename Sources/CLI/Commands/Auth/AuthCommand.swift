// `dropboxfs auth`: sign in with OAuth 2 + PKCE (no client secret; docs/DROPBOX-API.md, "OAuth 2
// with PKCE"). It prints
// the authorize URL, reads the code the user pastes (or the code from stdin, for scripts),
// exchanges it for a refresh token and stores it privately. `--sign-out` revokes the sign-in at
// Dropbox and deletes the stored file.

import DropboxAPI
import Foundation
import Log

#if canImport(Glibc)
    import Glibc
#endif

enum AuthCommand {
    static func run(_ arguments: [String]) throws -> ExitCode {
        let parsed = try Options.auth.parse(arguments)
        if parsed.has("help") {
            printOut(Help.command(Options.auth))
            return .success
        }
        guard parsed.positionals.isEmpty else { throw UsageError(description: "auth takes no arguments (see auth --help)") }
        // A code is bound to the PKCE verifier of the run that printed its address, so a code given
        // on the command line (where `ps` also shows it) could never be accepted.
        if parsed.value("code") != nil {
            throw UsageError(
                description: "--code is not supported: a code only works in the run that printed its address "
                    + "(PKCE); run `dropboxfs auth` and paste the code, or pipe it on standard input")
        }
        let environment = ProcessInfo.processInfo.environment
        try LogOptions.apply(parsed)
        let profile = try Profile.resolve(parsed, environment: environment)
        var endpoints = DropboxEndpoints.fromEnvironment(environment)
        if let url = parsed.value("api-url") { endpoints.api = url }
        if let url = parsed.value("oauth-url") { endpoints.oauth = url }
        endpoints = try DropboxEndpoints(
            api: endpoints.api, content: endpoints.content, notify: endpoints.notify, oauth: endpoints.oauth
        ).approved()
        if parsed.has("purge"), !parsed.has("sign-out") {
            throw UsageError(description: "--purge goes with --sign-out (dropboxfs auth --sign-out --purge)")
        }
        if parsed.has("sign-out") {
            let result = try signOut(profile: profile, endpoints: endpoints)
            if parsed.has("purge") {
                for removed in try Purge.run(profile) { printOut(Purge.line(removed)) }
            }
            return result
        }

        let stored = try? CredentialStore.load(profile)
        guard let appKey = parsed.value("app-key") ?? environment["DROPBOXFS_APP_KEY"].flatMap({ $0.isEmpty ? nil : $0 })
            ?? stored?.appKey
        else {
            throw UsageError(
                description: "auth needs your Dropbox app key: --app-key KEY (or DROPBOXFS_APP_KEY); see README.md, \"Sign in\"")
        }
        let oauth = OAuthClient(appKey: appKey, endpoints: endpoints, transport: Shared.transport)
        let pkce: PKCE
        do { pkce = try PKCE() } catch { throw CommandFailure(.failure, "\(error)") }

        printOut("1. Open this address in a browser and allow dropboxfs to read your Dropbox:")
        printOut("   " + oauth.authorizeURL(pkce: pkce))
        printOut("2. Paste the code Dropbox shows you, then press Enter:")
        guard let code = readLine(strippingNewline: true)?.trimmingWhitespace(), !code.isEmpty else {
            throw CommandFailure(.credentials, "no code was entered")
        }

        let grant: TokenGrant
        do {
            grant = try runBlocking { try await oauth.exchange(code: code, pkce: pkce) }
        } catch let error as DropboxError {
            if case .oauth(let kind, _) = error, kind == "invalid_grant" {
                throw CommandFailure(.credentials, "Dropbox did not accept the code (expired, already used, or mistyped): run `dropboxfs auth\(profile.flag)` again")
            }
            throw AccountCheck.failure(error, endpoints: endpoints)
        }
        guard let refreshToken = grant.refreshToken, !refreshToken.isEmpty else {
            throw CommandFailure(.credentials, "Dropbox returned no refresh token (the app must allow offline access)")
        }
        let client = DropboxHTTPClient(
            endpoints: endpoints, tokens: StaticTokenProvider(token: grant.accessToken), transport: Shared.transport)
        let account = try AccountCheck.verify(client, endpoints: endpoints)
        try CredentialStore.save(
            StoredCredentials(appKey: appKey, refreshToken: refreshToken, accountId: account.accountId, email: account.email),
            profile)
        printOut("Signed in as \(Log.escaped(account.displayName)) <\(Log.escaped(account.email))>\(profile.suffix).")
        printOut("Credentials saved to \(CredentialStore.path(profile)); mount with: dropboxfs mount\(profile.flag)")
        return .success
    }

    private static func signOut(profile: Profile, endpoints: DropboxEndpoints) throws -> ExitCode {
        guard let stored = try CredentialStore.load(profile) else {
            printOut("Not signed in\(profile.suffix) (no \(CredentialStore.path(profile))).")
            return .success
        }
        let oauth = OAuthClient(appKey: stored.appKey, endpoints: endpoints, transport: Shared.transport)
        let client = DropboxHTTPClient(
            endpoints: endpoints, tokens: RefreshingTokenProvider(refreshToken: stored.refreshToken, oauth: oauth),
            transport: Shared.transport)
        var revoked = true
        do {
            // Revoking an access token made from the refresh token revokes the refresh token too.
            try runBlocking { try await client.revokeToken() }
        } catch {
            revoked = false
            printError("could not revoke the sign-in at Dropbox (\(error)); deleting it here anyway")
        }
        CredentialStore.delete(profile)
        printOut(revoked ? "Signed out: the sign-in was revoked and deleted." : "Signed out locally.")
        return revoked ? .success : .unreachable
    }
}
