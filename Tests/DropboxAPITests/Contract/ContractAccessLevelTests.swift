// Access levels, the same in both fakes (docs/SEMANTICS.md, "Access levels"): a folder's
// `sharing_info` carries traverse_only or no_access, a no_access folder cannot be listed, and a
// file whose content Dropbox blocks is listed but its download answers restricted_content.

import DropboxAPI
import DropboxTestSupport
import Testing

extension InMemoryFake {
    func addFolder(_ path: String, access: String) async throws {
        dropbox.addFolder(path)
        dropbox.setFolderAccess(path, traverseOnly: access == "traverse_only", noAccess: access == "no_access")
    }

    func addRestrictedFile(_ path: String, content: [UInt8]) async throws {
        dropbox.addFile(path, contents: content)
        dropbox.restrictContent(path)
    }
}

extension HTTPFake {
    func addFolder(_ path: String, access: String) async throws {
        try await server.addFolder(path, access: access)
    }

    func addRestrictedFile(_ path: String, content: [UInt8]) async throws {
        try await server.addRestrictedFile(path, content: content)
    }
}

@Suite struct ContractAccessLevelTests {
    @Test(arguments: FakeKind.allCases)
    func levelsAreListedAndEnforced(kind: FakeKind) async throws {
        let fake = try await kind.make()
        defer { fake.stop() }
        try await fake.addFolder("/team/Locked", access: "no_access")
        try await fake.addFolder("/team/Pass", access: "traverse_only")
        try await fake.addFile("/team/Pass/Open/a.txt", content: [1])
        try await fake.addRestrictedFile("/blocked.bin", content: [1, 2, 3])

        let listed = try await fake.client.listFolder(ListFolderArg(path: "/team")).entries
        var folders: [String: FolderMetadata] = [:]
        for case .folder(let folder) in listed { folders[folder.name] = folder }
        #expect(folders["Locked"]?.noAccess == true)
        #expect(folders["Locked"]?.traverseOnly == false)
        #expect(folders["Pass"]?.traverseOnly == true)
        #expect(folders["Pass"]?.noAccess == false)

        await #expect(throws: DropboxError.lookup(.restrictedContent)) {
            try await fake.client.listFolder(ListFolderArg(path: "/team/Locked"))
        }
        let root = try await fake.client.listFolder(ListFolderArg(path: "")).entries
        #expect(root.contains { $0.name == "blocked.bin" }, "a blocked file is still listed")
        await #expect(throws: DropboxError.lookup(.restrictedContent)) {
            try await fake.client.download(path: "/blocked.bin", range: nil)
        }
        #expect(try await fake.client.download(path: "/team/Pass/Open/a.txt", range: nil).data == [1])
    }
}
