// Downloads against the fake over real HTTP: ranges (head, middle, tail, past the end, whole)
// match the fake's own copy of the bytes, `id:` and `rev:` paths, content hashes, non-downloadable
// files and empty files.

import DropboxAPI
import DropboxTestSupport
import Testing

@Suite struct LiveDownloadTests {
    @Test func rangesMatchTheContent() async throws {
        let fake = try await FakeDropboxServer.start()
        try await fake.addFile("/data/blob.bin", size: 300_000, seed: 11)
        let expected = try await fake.content("/data/blob.bin")
        let client = liveClient(fake)
        let whole = try await client.download(path: "/data/blob.bin", range: nil)
        #expect(whole.data == expected)
        #expect(whole.metadata.size == 300_000)
        #expect(whole.metadata.contentHash == ContentHasher.hash(expected))
        let ranges: [(UInt64, UInt64)] = [
            (0, 16), (0, 1), (4096, 8192), (123_457, 1), (299_990, 10), (299_990, 100_000), (0, 300_000),
        ]
        for (offset, length) in ranges {
            let part = try await client.download(
                path: "/data/blob.bin", range: ByteRange(offset: offset, length: length))
            let end = Int(min(offset + length, 300_000))
            #expect(part.data == Array(expected[Int(offset)..<end]), "range \(offset)+\(length)")
            #expect(part.metadata.rev == whole.metadata.rev)
        }
        await #expect(throws: DropboxError.rangeNotSatisfiable) {
            try await client.download(path: "/data/blob.bin", range: ByteRange(offset: 300_000, length: 1))
        }
    }

    @Test func downloadByIdAndRevision() async throws {
        let fake = try await FakeDropboxServer.start()
        guard case .file(let first) = try await fake.addFile("/v.txt", content: Array("version one".utf8)) else {
            Issue.record("not a file")
            return
        }
        try await fake.addFile("/v.txt", content: Array("version two!".utf8))
        let client = liveClient(fake)
        let byId = try await client.download(path: first.id, range: nil)
        #expect(byId.data == Array("version two!".utf8))
        let old = try await client.download(path: "rev:\(first.rev)", range: nil)
        #expect(old.data == Array("version one".utf8))
        #expect(old.metadata.rev == first.rev)
        let oldPart = try await client.download(path: "rev:\(first.rev)", range: ByteRange(offset: 8, length: 3))
        #expect(oldPart.data == Array("one".utf8))
        #expect(try await fake.content("rev:\(first.rev)") == Array("version one".utf8))
    }

    @Test func unicodePathsAndEmptyFiles() async throws {
        let fake = try await FakeDropboxServer.start()
        let path = "/Fotos/Zürich 🍺/héllø wörld.txt"
        try await fake.addFile(path, content: Array("grüezi".utf8))
        try await fake.addFile("/empty.txt", content: [])
        let client = liveClient(fake)
        #expect(try await client.download(path: path, range: nil).data == Array("grüezi".utf8))
        let empty = try await client.download(path: "/empty.txt", range: nil)
        #expect(empty.data.isEmpty && empty.metadata.size == 0)
        await #expect(throws: DropboxError.rangeNotSatisfiable) {
            try await client.download(path: "/empty.txt", range: ByteRange(offset: 0, length: 1))
        }
    }

    @Test func lookupAndExportOnlyErrors() async throws {
        let fake = try await FakeDropboxServer.start(arguments: ["--sample-account"])
        let client = liveClient(fake)
        await #expect(throws: DropboxError.unsupportedFile) {
            try await client.download(path: "/Documents/Project plan.paper", range: nil)
        }
        await #expect(throws: DropboxError.lookup(.notFile)) {
            try await client.download(path: "/Documents", range: nil)
        }
        await #expect(throws: DropboxError.lookup(.notFound)) { try await client.download(path: "/none", range: nil) }
    }
}
