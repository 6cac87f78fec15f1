// Tests of InMemoryDropboxAccounts: a token signs in to one account, each account has its own id,
// tree, contents and cursors, a cursor of one account is reset in the other, and a token no account
// accepts is refused the way Dropbox refuses it.

import DropboxAPI
import DropboxTestSupport
import Testing

extension TestSupportTests {
    @Suite struct InMemoryDropboxAccountsTests {
        @Test func eachTokenSignsInToItsAccount() async throws {
            let (accounts, first, second) = InMemoryDropboxAccounts.twoAccounts()
            let a = try await accounts.client(token: InMemoryDropboxAccounts.firstToken).getCurrentAccount()
            let b = try await accounts.client(token: InMemoryDropboxAccounts.secondToken).getCurrentAccount()
            #expect(a == first.account)
            #expect(b == second.account)
            #expect(a.accountId != b.accountId)
            #expect(a.rootInfo.rootNamespaceId != b.rootInfo.rootNamespaceId)
            #expect(accounts.account(for: "test-token-b") === second)
        }

        @Test func eachAccountHasItsOwnTreeAndContents() async throws {
            let (accounts, first, second) = InMemoryDropboxAccounts.twoAccounts()
            first.addFile("/notes.txt", contents: Array("first".utf8))
            second.addFile("/notes.txt", contents: Array("second".utf8))
            second.addFile("/only-second.txt", size: 3)
            let clientA = accounts.client(token: InMemoryDropboxAccounts.firstToken)
            let clientB = accounts.client(token: InMemoryDropboxAccounts.secondToken)
            #expect(try await clientA.download(path: "/notes.txt", range: nil).data == Array("first".utf8))
            #expect(try await clientB.download(path: "/notes.txt", range: nil).data == Array("second".utf8))
            let namesA = try await listAll(clientA, ListFolderArg(path: "", recursive: true)).entries.map(\.name)
            let namesB = try await listAll(clientB, ListFolderArg(path: "", recursive: true)).entries.map(\.name)
            #expect(namesA.sorted() == ["notes.txt"])
            #expect(namesB.sorted() == ["notes.txt", "only-second.txt"])
            await #expect(throws: DropboxError.lookup(.notFound)) {
                try await clientA.getMetadata(path: "/only-second.txt")
            }
        }

        @Test func aCursorOfOneAccountIsResetInTheOther() async throws {
            let (accounts, first, second) = InMemoryDropboxAccounts.twoAccounts()
            first.addFile("/a.txt", size: 1)
            second.addFile("/b.txt", size: 1)
            let cursorA = try await listAll(first, ListFolderArg(path: "")).cursor
            let cursorB = try await listAll(second, ListFolderArg(path: "")).cursor
            await #expect(throws: DropboxError.cursorReset) { try await second.listFolderContinue(cursor: cursorA) }
            await #expect(throws: DropboxError.cursorReset) {
                try await second.listFolderLongpoll(cursor: cursorA, timeoutSeconds: 1)
            }
            #expect(try await first.listFolderContinue(cursor: cursorA).entries.isEmpty)
            // The longpoll carries no token: it reaches the account that issued the cursor.
            second.longpollSecond = .milliseconds(10)
            first.addFile("/a2.txt", size: 1)
            let anyone = accounts.client(token: "a-token-of-nobody")
            #expect(try await !anyone.listFolderLongpoll(cursor: cursorB, timeoutSeconds: 1).changes)
            second.addFile("/b2.txt", size: 1)
            #expect(try await anyone.listFolderLongpoll(cursor: cursorB, timeoutSeconds: 1).changes)
            _ = accounts
        }

        @Test func anUnknownTokenIsRefused() async throws {
            let (accounts, first, _) = InMemoryDropboxAccounts.twoAccounts()
            first.addFile("/a.txt", size: 1)
            let client = accounts.client(token: "revoked")
            let rejected = DropboxError.authentication(.invalidAccessToken)
            await #expect(throws: rejected) { try await client.getCurrentAccount() }
            await #expect(throws: rejected) { try await client.listFolder(ListFolderArg(path: "")) }
            await #expect(throws: rejected) { try await client.download(path: "/a.txt", range: nil) }
            await #expect(throws: DropboxError.badRequest(message: "cursor: not a cursor this server issued")) {
                try await client.listFolderLongpoll(cursor: "fake1.e30=", timeoutSeconds: 1)
            }
            #expect(accounts.account(for: "revoked") == nil)
        }

        @Test func anAccountAloneKeepsItsCursorsAsBefore() async throws {
            // Default cursors carry no account stamp: two unrelated fakes accept each other's
            // cursors exactly as before (an old test may rely on it).
            let one = InMemoryDropbox()
            let other = InMemoryDropbox()
            let cursor = try await listAll(one, ListFolderArg(path: "")).cursor
            #expect(try await other.listFolderContinue(cursor: cursor).entries.isEmpty)
        }
    }
}
