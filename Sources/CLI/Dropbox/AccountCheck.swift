// Asks users/get_current_account (and, before mounting, lists one entry) before doing anything
// else, so a bad token, a revoked sign-in, a missing permission or an unreachable server is one
// clear line and its own exit code.

import DropboxAPI

enum AccountCheck {
    static func verify(_ client: DropboxHTTPClient, endpoints: DropboxEndpoints) throws(CommandFailure) -> FullAccount {
        do {
            return try runBlocking { try await client.getCurrentAccount() }
        } catch let error as DropboxError {
            throw failure(error, endpoints: endpoints)
        } catch {
            throw CommandFailure(.failure, "\(error)")
        }
    }

    /// Asks for the root's cursor (a cheap call needing `files.metadata.read`), so an app without
    /// that permission fails here with it named, instead of mounting a folder where every listing
    /// is refused.
    static func verifyListing(_ client: DropboxHTTPClient, endpoints: DropboxEndpoints) throws(CommandFailure) {
        do {
            _ = try runBlocking { try await client.listFolderGetLatestCursor(ListFolderArg(path: "")) }
        } catch let error as DropboxError {
            throw failure(error, endpoints: endpoints)
        } catch {
            throw CommandFailure(.failure, "\(error)")
        }
    }

    static func failure(_ error: DropboxError, endpoints: DropboxEndpoints) -> CommandFailure {
        switch error {
        case .authentication(.noCredentials(let why)):
            return CommandFailure(.credentials, why)
        case .authentication(let failure):
            return CommandFailure(.credentials, "Dropbox rejected the credentials: \(DropboxError.authentication(failure))")
        case .oauth(let code, _) where code == "invalid_grant":
            return CommandFailure(.credentials, "the stored sign-in was revoked or has expired: run `dropboxfs auth` again")
        case .oauth:
            return CommandFailure(.credentials, error.description)
        case .transport(let failure):
            return CommandFailure(.unreachable, "cannot reach Dropbox at \(endpoints.api): \(failure.message)")
        case .badRequest(let message):
            return CommandFailure(.credentials, "Dropbox refused the request: \(message)")
        default:
            return CommandFailure(.unreachable, "Dropbox at \(endpoints.api) did not answer properly: \(error)")
        }
    }
}
