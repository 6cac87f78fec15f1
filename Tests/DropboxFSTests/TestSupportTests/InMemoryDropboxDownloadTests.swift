// Tests of InMemoryDropbox get_metadata, download (paths, ids, revisions, ranges, errors), the
// account routes, and latency.

import DropboxAPI
import DropboxTestSupport
import Testing

extension TestSupportTests {
    @Suite struct InMemoryDropboxDownloadTests {
        private let ten: [UInt8] = Array(0..<10)

        @Test func wholeAndRangedDownloads() async throws {
            let fake = InMemoryDropbox()
            let file = fake.addFile("/d/ten.bin", contents: ten)
            let whole = try await fake.download(path: "/D/TEN.bin", range: nil)
            #expect(whole.data == ten)
            #expect(whole.metadata == file)
            func read(_ offset: UInt64, _ length: UInt64) async throws -> [UInt8] {
                try await fake.download(path: "/d/ten.bin", range: ByteRange(offset: offset, length: length)).data
            }
            #expect(try await read(3, 4) == [3, 4, 5, 6])
            #expect(try await read(8, 100) == [8, 9])
            #expect(try await read(9, 1) == [9])
            #expect(try await fake.download(path: file.id, range: nil).data == ten)
        }

        @Test func rangesAtOrPastTheEndAreNotSatisfiable() async throws {
            let fake = InMemoryDropbox()
            fake.addFile("/ten", contents: ten)
            fake.addFile("/empty", contents: [])
            await #expect(throws: DropboxError.rangeNotSatisfiable) {
                try await fake.download(path: "/ten", range: ByteRange(offset: 10, length: 1))
            }
            await #expect(throws: DropboxError.rangeNotSatisfiable) {
                try await fake.download(path: "/empty", range: ByteRange(offset: 0, length: 1))
            }
            #expect(try await fake.download(path: "/empty", range: nil).data.isEmpty)
        }

        @Test func generatedContentServesAnyRange() async throws {
            let fake = InMemoryDropbox()
            let file = fake.addFile("/big.bin", size: 5_000_000)
            let all = try #require(fake.contents(of: "/big.bin"))
            let tail = try await fake.download(path: "/big.bin", range: ByteRange(offset: 4_999_990, length: 100))
            #expect(tail.data == Array(all[4_999_990...]))
            let middle = try await fake.download(path: "/big.bin", range: ByteRange(offset: 4_194_301, length: 7))
            #expect(middle.data == Array(all[4_194_301..<4_194_308]))
            #expect(InMemoryDropbox().addFile("/copy", contents: all).contentHash == file.contentHash)
        }

        @Test func oldRevisionsStayDownloadable() async throws {
            let fake = InMemoryDropbox()
            let first = fake.addFile("/f", contents: [1, 1])
            let second = fake.modifyFile("/f", contents: [2, 2, 2])
            #expect(try await fake.download(path: "rev:" + first.rev, range: nil).data == [1, 1])
            #expect(
                try await fake.download(path: "rev:" + second.rev, range: ByteRange(offset: 1, length: 1)).data == [2])
            #expect(try await fake.download(path: "/f", range: nil).metadata.rev == second.rev)
            fake.delete("/f")
            let old = try await fake.download(path: "rev:" + first.rev, range: nil)
            #expect(old.data == [1, 1])
            #expect(old.metadata == first)
            await #expect(throws: DropboxError.lookup(.notFound)) { try await fake.download(path: "/f", range: nil) }
            await #expect(throws: DropboxError.lookup(.notFound)) {
                try await fake.download(path: first.id, range: nil)
            }
            await #expect(throws: DropboxError.lookup(.notFound)) {
                try await fake.download(path: "rev:0123456789", range: nil)
            }
        }

        @Test func downloadErrors() async throws {
            let fake = InMemoryDropbox()
            let folder = fake.addFolder("/dir")
            fake.addNonDownloadable("/doc.paper", exportAs: "html")
            await #expect(throws: DropboxError.lookup(.notFile)) { try await fake.download(path: "/dir", range: nil) }
            await #expect(throws: DropboxError.lookup(.notFile)) {
                try await fake.download(path: folder.id, range: nil)
            }
            await #expect(throws: DropboxError.unsupportedFile) {
                try await fake.download(path: "/doc.paper", range: nil)
            }
            await #expect(throws: DropboxError.lookup(.notFound)) { try await fake.download(path: "/nope", range: nil) }
            await #expect(throws: DropboxError.self) { try await fake.download(path: "", range: nil) }
            #expect(fake.callCount(.download) == 5)
        }

        @Test func symlinkDownloadsItsTarget() async throws {
            let fake = InMemoryDropbox()
            let link = fake.addSymlink("/l", target: "../t")
            #expect(try await fake.download(path: "/l", range: nil).data == Array("../t".utf8))
            #expect(try await fake.getMetadata(path: "/l") == .file(link))
            let byRev = try await fake.getMetadata(path: "rev:" + link.rev)
            #expect(byRev.fileMetadata?.symlinkTarget == nil)
        }

        @Test func metadataByPathIdAndRev() async throws {
            let fake = smallTree()
            let folder = try #require(fake.entry("/A/Sub"))
            #expect(try await fake.getMetadata(path: "/a/sub") == folder)
            #expect(try await fake.getMetadata(path: try #require(folder.id)) == folder)
            let file = try #require(fake.entry("/A/b.txt")?.fileMetadata)
            fake.modifyFile("/A/b.txt", contents: [0])
            #expect(try await fake.getMetadata(path: "rev:" + file.rev) == .file(file))
            await #expect(throws: DropboxError.self) { try await fake.getMetadata(path: "") }
            await #expect(throws: DropboxError.self) { try await fake.getMetadata(path: "/") }
            await #expect(throws: DropboxError.lookup(.notFound)) { try await fake.getMetadata(path: "/A/none") }
            await #expect {
                try await fake.getMetadata(path: "A/b.txt")
            } throws: { error in
                if case .badRequest = error as? DropboxError { true } else { false }
            }
            #expect(fake.calls["get_metadata"] == 7)
        }

        @Test func accountAndSpaceUsage() async throws {
            let fake = InMemoryDropbox(allocation: .individual(allocated: 1000))
            fake.addFile("/a", size: 100)
            fake.addFile("/b/c", contents: [1, 2, 3])
            fake.addFile("/A", size: 10)
            #expect(try await fake.getSpaceUsage() == SpaceUsage(used: 13, allocation: .individual(allocated: 1000)))
            fake.delete("/b")
            fake.allocation = .team(used: 5000, allocated: 9000, userLimit: 0)
            #expect(
                try await fake.getSpaceUsage()
                    == SpaceUsage(used: 10, allocation: .team(used: 5000, allocated: 9000, userLimit: 0)))
            let account = try await fake.getCurrentAccount()
            #expect(account == InMemoryDropbox.defaultAccount)
            #expect(account.accountId.count == 40)
            #expect(fake.calls == ["get_space_usage": 2, "get_current_account": 1])
        }

        @Test func latencyDelaysEveryCall() async throws {
            let fake = smallTree()
            fake.latency = .milliseconds(50)
            let clock = ContinuousClock()
            let start = clock.now
            async let one = fake.download(path: "/top.txt", range: nil)
            async let two = fake.download(path: "/top.txt", range: nil)
            let results = try await [one, two]
            #expect(results.allSatisfy { $0.data == [1, 2, 3] })
            #expect(clock.now - start >= .milliseconds(50))
            #expect(fake.callCount(.download) == 2)
        }
    }
}
