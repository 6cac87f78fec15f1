// Several in-memory Dropbox accounts behind one fake service, where an access token signs in to one
// of them, so tests can show what a client does when the credentials in hand belong to another
// account than the one it met before (a stored tree, cached bytes, a cursor). Each account is an
// InMemoryDropbox of its own: its own account id, tree, cursors and contents. A cursor of one
// account is `reset` in another, as Dropbox answers it. A token no account accepts gets a client
// whose every authenticated call fails with invalid_access_token; its longpoll, which Dropbox
// answers without a token, goes to the account that issued the cursor. Mirrors the Python fake's
// --second-account (tools/fakedropbox/README.md), down to the default tokens.

import DropboxAPI
import Synchronization

public final class InMemoryDropboxAccounts: Sendable {
    /// The tokens of `twoAccounts()`, the same as the Python fake's defaults.
    public static let firstToken = "test-token"
    public static let secondToken = "test-token-b"

    /// Guards the token table: access token -> the account it signs in to.
    private let byToken: Mutex<[String: InMemoryDropbox]>

    public init() {
        byToken = Mutex([:])
    }

    /// Two accounts with different account ids (InMemoryDropbox.defaultAccount and
    /// .secondAccount), empty, signed in to by `firstToken` and `secondToken`.
    public static func twoAccounts() -> (accounts: InMemoryDropboxAccounts, first: InMemoryDropbox, second: InMemoryDropbox) {
        let accounts = InMemoryDropboxAccounts()
        let first = InMemoryDropbox(account: InMemoryDropbox.defaultAccount)
        let second = InMemoryDropbox(account: InMemoryDropbox.secondAccount)
        accounts.add(first, tokens: [firstToken])
        accounts.add(second, tokens: [secondToken])
        return (accounts, first, second)
    }

    /// Makes `tokens` sign in to `account` (a token already taken moves to it). The account's
    /// cursors are stamped with its account id from now on.
    public func add(_ account: InMemoryDropbox, tokens: [String]) {
        account.stampCursors(account.account.accountId)
        byToken.withLock { table in
            for token in tokens { table[token] = account }
        }
    }

    /// The account `token` signs in to, or nil.
    public func account(for token: String) -> InMemoryDropbox? {
        byToken.withLock { $0[token] }
    }

    /// The client a program holding `token` talks to: the account it signs in to, or one that
    /// rejects every authenticated call.
    public func client(token: String) -> any DropboxClient {
        account(for: token) ?? RejectedTokenClient(accounts: self)
    }

    /// Every account, for the longpoll of a client without one.
    fileprivate var all: [InMemoryDropbox] {
        byToken.withLock { table in
            var seen = Set<ObjectIdentifier>()
            return table.values.filter { seen.insert(ObjectIdentifier($0)).inserted }
        }
    }
}

/// What a token no account accepts gets: Dropbox's 401 invalid_access_token on every call that
/// carries the token.
private struct RejectedTokenClient: DropboxClient {
    let accounts: InMemoryDropboxAccounts

    private static let rejected = DropboxError.authentication(.invalidAccessToken)

    func listFolder(_ arg: ListFolderArg) async throws(DropboxError) -> ListFolderResult { throw Self.rejected }
    func listFolderContinue(cursor: String) async throws(DropboxError) -> ListFolderResult { throw Self.rejected }
    func listFolderGetLatestCursor(_ arg: ListFolderArg) async throws(DropboxError) -> String { throw Self.rejected }
    func listFolderLongpoll(cursor: String, timeoutSeconds: Int) async throws(DropboxError) -> LongpollResult {
        guard let issuer = accounts.all.first(where: { $0.issued(cursor: cursor) }) else {
            throw .badRequest(message: "cursor: not a cursor this server issued")
        }
        return try await issuer.listFolderLongpoll(cursor: cursor, timeoutSeconds: timeoutSeconds)
    }
    func getMetadata(path: String) async throws(DropboxError) -> Metadata { throw Self.rejected }
    func download(path: String, range: ByteRange?) async throws(DropboxError) -> DownloadResult { throw Self.rejected }
    func export(path: String) async throws(DropboxError) -> ExportResult { throw Self.rejected }
    func getThumbnailBatch(_ entries: [ThumbnailArg]) async throws(DropboxError) -> [Result<[UInt8], ThumbnailFailure>] {
        throw Self.rejected
    }
    func listRevisions(_ arg: ListRevisionsArg) async throws(DropboxError) -> ListRevisionsResult { throw Self.rejected }
    func getCurrentAccount() async throws(DropboxError) -> FullAccount { throw Self.rejected }
    func getSpaceUsage() async throws(DropboxError) -> SpaceUsage { throw Self.rejected }
}
