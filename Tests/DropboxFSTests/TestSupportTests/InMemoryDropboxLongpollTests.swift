// Tests of InMemoryDropbox longpoll: changes reported at once or while waiting, scope, timeout and
// cancellation. Timeouts are shrunk with `longpollSecond` so the tests take milliseconds.

import DropboxAPI
import DropboxTestSupport
import Testing

extension TestSupportTests {
    @Suite struct InMemoryDropboxLongpollTests {
        private func fastFake() -> InMemoryDropbox {
            let fake = smallTree()
            fake.longpollSecond = .milliseconds(10)
            return fake
        }

        @Test func timesOutWithoutChanges() async throws {
            let fake = fastFake()
            let cursor = try await listAll(fake, ListFolderArg(path: "", recursive: true)).cursor
            let clock = ContinuousClock()
            let start = clock.now
            let result = try await fake.listFolderLongpoll(cursor: cursor, timeoutSeconds: 3)
            #expect(result == LongpollResult(changes: false))
            #expect(clock.now - start >= .milliseconds(30))
        }

        @Test func reportsAnEarlierChangeAtOnce() async throws {
            let fake = fastFake()
            fake.longpollSecond = .seconds(60)
            let cursor = try await listAll(fake, ListFolderArg(path: "", recursive: true)).cursor
            fake.addFile("/new", size: 1)
            #expect(try await fake.listFolderLongpoll(cursor: cursor, timeoutSeconds: 480).changes)
        }

        @Test func wakesUpOnAChangeWhileWaiting() async throws {
            let fake = fastFake()
            fake.longpollSecond = .seconds(60)
            let cursor = try await listAll(fake, ListFolderArg(path: "", recursive: true)).cursor
            let poll = Task { try await fake.listFolderLongpoll(cursor: cursor, timeoutSeconds: 480) }
            try await Task.sleep(for: .milliseconds(20))
            fake.modifyFile("/top.txt", contents: [4])
            #expect(try await poll.value.changes)
        }

        @Test func ignoresChangesOutsideTheCursorsFolder() async throws {
            let fake = fastFake()
            let cursor = try await listAll(fake, ListFolderArg(path: "/A/Sub", recursive: false)).cursor
            fake.addFile("/A/b2.txt", size: 1)
            fake.addFile("/other.txt", size: 1)
            #expect(try await !fake.listFolderLongpoll(cursor: cursor, timeoutSeconds: 1).changes)
            fake.addFile("/A/Sub/inside.txt", size: 1)
            #expect(try await fake.listFolderLongpoll(cursor: cursor, timeoutSeconds: 1).changes)
        }

        @Test func reportsTheDeletionOfAnAncestor() async throws {
            let fake = fastFake()
            let cursor = try await listAll(fake, ListFolderArg(path: "/A/Sub")).cursor
            fake.delete("/A")
            #expect(try await fake.listFolderLongpoll(cursor: cursor, timeoutSeconds: 1).changes)
        }

        @Test func aCursorWithPagesLeftHasChanges() async throws {
            let fake = fastFake()
            let first = try await fake.listFolder(ListFolderArg(path: "", recursive: true, limit: 1))
            #expect(first.hasMore)
            #expect(try await fake.listFolderLongpoll(cursor: first.cursor, timeoutSeconds: 1).changes)
        }

        @Test func cancellationEndsTheWait() async throws {
            let fake = fastFake()
            fake.longpollSecond = .seconds(60)
            let cursor = try await listAll(fake, ListFolderArg(path: "")).cursor
            let poll = Task { () async throws(DropboxError) -> LongpollResult in
                try await fake.listFolderLongpoll(cursor: cursor, timeoutSeconds: 480)
            }
            try await Task.sleep(for: .milliseconds(10))
            poll.cancel()
            let outcome = await poll.result
            #expect(
                throws: DropboxError.transport(TransportError(kind: .cancelled, message: "the request was cancelled"))
            ) {
                try outcome.get()
            }
            #expect(fake.callCount(.listFolderLongpoll) == 1)
        }
    }
}
