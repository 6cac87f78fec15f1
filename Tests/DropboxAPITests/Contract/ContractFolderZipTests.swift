// files/download_zip held to one contract in both fakes (ContractFakes.swift), as the daemon's
// folder zips rely on it (docs/DROPBOX-API.md, "A folder as one zip"): members named
// `<folder name>/<path below it>` with the bytes a download gives, subfolders with entries of their
// own, export-only documents and restricted files left out; a file or a missing path is a lookup
// error; a reply longer than the caller allows fails.

import DropboxAPI
import DropboxTestSupport
import Testing

@Suite struct ContractFolderZipTests {
    static func route(_ fake: any FakeUnderTest) throws -> any FolderZipRoute {
        try #require(fake.client as? any FolderZipRoute)
    }

    @Test(arguments: FakeKind.allCases)
    func aFolderIsOneZipOfItsFiles(kind: FakeKind) async throws {
        let fake = try await kind.make()
        defer { fake.stop() }
        try await fake.addFile("/Work/notes.txt", content: Array("notes\n".utf8))
        try await fake.addFile("/Work/Résumé 2019.pdf", size: 70_000, seed: 3)
        try await fake.addFile("/Work/deep/inner.bin", size: 5000, seed: 4)
        try await fake.addExportOnly("/Work/Plan.paper", exportAs: "md")
        try await fake.addRestrictedFile("/Work/blocked.mp3", content: [1, 2, 3])
        try await fake.addFile("/Elsewhere.txt", content: [9])
        let zip = try await Self.route(fake).downloadZip(path: "/Work", maxBytes: 1 << 20)
        let archive = try ZipArchive(zip)
        let names = Set(archive.members.map(\.name))
        #expect(names == ["Work/", "Work/deep/", "Work/notes.txt", "Work/Résumé 2019.pdf", "Work/deep/inner.bin"])
        for member in archive.members where !member.isDirectory {
            let path = "/" + member.name
            let download = try await fake.client.download(path: path, range: nil)
            #expect(try archive.contents(of: member, limit: 1 << 20) == download.data, "\(path)")
            #expect(member.size == download.metadata.size)
        }
    }

    @Test(arguments: FakeKind.allCases)
    func notAFolderIsALookupError(kind: FakeKind) async throws {
        let fake = try await kind.make()
        defer { fake.stop() }
        try await fake.addFile("/a.txt", content: [1])
        let route = try Self.route(fake)
        for (path, expected) in [("/a.txt", LookupFailure.notFolder), ("/missing", .notFound)] {
            do {
                _ = try await route.downloadZip(path: path, maxBytes: 1 << 20)
                Issue.record("\(path): a zip")
            } catch {
                #expect(error == .lookup(expected), "\(path)")
            }
        }
    }

    @Test(arguments: FakeKind.allCases)
    func aReplyLongerThanAllowedFails(kind: FakeKind) async throws {
        let fake = try await kind.make()
        defer { fake.stop() }
        try await fake.addFile("/Big/one.bin", size: 200_000, seed: 1)
        await #expect(throws: DropboxError.self) {
            _ = try await Self.route(fake).downloadZip(path: "/Big", maxBytes: 100_000)
        }
    }
}
