// Tests of FaultInjectingClient: each kind of scripted fault, call counting, and pass-through.

import DropboxAPI
import DropboxTestSupport
import Testing

extension TestSupportTests {
    @Suite struct FaultInjectingClientTests {
        private let timeout = DropboxError.transport(TransportError(kind: .timeout, message: "timed out"))

        @Test func failNextFailsThatManyCallsWithoutReachingTheBase() async throws {
            let client = FaultInjectingClient(smallTree())
            client.failNext(.download, with: timeout, count: 2)
            for _ in 0..<2 {
                await #expect(throws: timeout) { try await client.download(path: "/top.txt", range: nil) }
            }
            #expect(try await client.download(path: "/top.txt", range: nil).data == [1, 2, 3])
            #expect(client.callCount(.download) == 3)
            #expect(client.base.callCount(.download) == 1)
        }

        @Test func faultsOfOneMethodLeaveOthersAlone() async throws {
            let client = FaultInjectingClient(smallTree())
            client.failNext(.getMetadata, with: .rateLimited(retryAfter: 1))
            #expect(try await client.download(path: "/top.txt", range: nil).data == [1, 2, 3])
            await #expect(throws: DropboxError.rateLimited(retryAfter: 1)) { try await client.getMetadata(path: "/A") }
            #expect(try await client.getMetadata(path: "/A").name == "A")
        }

        @Test func failCallFailsOnlyTheNumberedCall() async throws {
            let client = FaultInjectingClient(smallTree())
            client.failCall(number: 3, of: .listFolderContinue, with: .serverError(status: 503))
            let first = try await client.listFolder(ListFolderArg(path: "", recursive: true, limit: 1))
            let second = try await client.listFolderContinue(cursor: first.cursor)
            let third = try await client.listFolderContinue(cursor: second.cursor)
            await #expect(throws: DropboxError.serverError(status: 503)) {
                try await client.listFolderContinue(cursor: third.cursor)
            }
            let retried = try await client.listFolderContinue(cursor: third.cursor)
            #expect(!retried.entries.isEmpty)
            #expect(client.calls == ["list_folder": 1, "list_folder/continue": 4])
            #expect(client.base.calls == ["list_folder": 1, "list_folder/continue": 3])
        }

        @Test func callNumbersRestartAfterResetCalls() async throws {
            let client = FaultInjectingClient(smallTree())
            _ = try await client.getSpaceUsage()
            client.resetCalls()
            client.failCall(number: 1, of: .getSpaceUsage, with: .unexpectedStatus(418))
            await #expect(throws: DropboxError.unexpectedStatus(418)) { try await client.getSpaceUsage() }
        }

        @Test func truncateNextDownloadShortensOneReply() async throws {
            let fake = InMemoryDropbox()
            fake.addFile("/f", contents: Array(0..<100))
            let client = FaultInjectingClient(fake)
            client.truncateNextDownload(to: 7)
            let short = try await client.download(path: "/f", range: ByteRange(offset: 10, length: 50))
            #expect(short.data == Array(10..<17))
            #expect(short.metadata.size == 100)
            #expect(
                try await client.download(path: "/f", range: ByteRange(offset: 10, length: 50)).data == Array(10..<60))
        }

        @Test func delayHoldsEveryCallOfThatMethod() async throws {
            let client = FaultInjectingClient(smallTree())
            client.delay(method: .getCurrentAccount, by: .milliseconds(40))
            let clock = ContinuousClock()
            for _ in 0..<2 {
                let start = clock.now
                _ = try await client.getCurrentAccount()
                #expect(clock.now - start >= .milliseconds(40))
            }
            client.delay(method: .getCurrentAccount, by: .zero)
            _ = try await client.getCurrentAccount()
            #expect(client.callCount(.getCurrentAccount) == 3)
        }

        @Test func clearFaultsRemovesPendingFaults() async throws {
            let client = FaultInjectingClient(smallTree())
            client.failNext(.listFolderGetLatestCursor, with: .cursorReset)
            client.failCall(number: 1, of: .listFolderLongpoll, with: .cursorReset)
            client.truncateNextDownload(to: 0)
            client.clearFaults()
            let cursor = try await client.listFolderGetLatestCursor(ListFolderArg(path: ""))
            client.base.longpollSecond = .milliseconds(1)
            #expect(try await !client.listFolderLongpoll(cursor: cursor, timeoutSeconds: 1).changes)
            #expect(try await client.download(path: "/top.txt", range: nil).data == [1, 2, 3])
        }

        @Test func errorsOfTheBaseClientPassThrough() async throws {
            let client = FaultInjectingClient(smallTree())
            await #expect(throws: DropboxError.lookup(.notFound)) {
                try await client.download(path: "/missing", range: nil)
            }
            await #expect(throws: DropboxError.cursorReset) {
                client.base.resetCursors()
                let cursor = try await client.listFolderGetLatestCursor(ListFolderArg(path: ""))
                client.base.resetCursors()
                return try await client.listFolderContinue(cursor: cursor)
            }
        }

        @Test func wrappersCanBeStacked() async throws {
            let inner = FaultInjectingClient(smallTree())
            let outer = FaultInjectingClient(inner)
            inner.failNext(.getMetadata, with: .lookup(.locked))
            await #expect(throws: DropboxError.lookup(.locked)) { try await outer.getMetadata(path: "/A") }
            #expect(outer.callCount(.getMetadata) == 1)
            #expect(inner.base.callCount(.getMetadata) == 0)
        }
    }
}
