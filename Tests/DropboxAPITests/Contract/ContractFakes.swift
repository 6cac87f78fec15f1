// The two fake Dropboxes behind one interface, so every contract scenario (ContractTests.swift,
// ContractAdversarialTests.swift) runs against both: the in-memory one, called directly, and the HTTP
// fake server (tools/fakedropbox), reached through the real DropboxHTTPClient over libcurl and set
// up through its /_control/ API. A scenario builds the account, changes it, and reads back what the
// fake itself holds (`account()`), which is what every listing and delta must add up to.

import DropboxAPI
import DropboxTestSupport
import Foundation
import Testing

/// One entry of the account as the fake itself holds it (not as a listing shows it).
struct AccountEntry: Sendable, Hashable {
    var id: String
    var isFolder: Bool
    /// The fake's own key of the entry; in the `fold` mode it may fold otherwise than listings do.
    var pathLower: String
    var name: String
    var rev: String?
    var size: UInt64?
    var contentHash: ContentHash?
}

/// A fake Dropbox under test: its client, and the calls that build and change its account.
protocol FakeUnderTest: Sendable {
    var client: any DropboxClient { get }
    func addFile(_ path: String, content: [UInt8]) async throws
    /// A file of `size` bytes the fake generates itself (each fake its own bytes).
    func addFile(_ path: String, size: Int, seed: Int) async throws
    /// A file with `symlink_info.target`; its bytes are the target's text.
    func addSymlink(_ path: String, target: String) async throws
    /// An export-only document (`is_downloadable` false) whose default export format is `exportAs`.
    func addExportOnly(_ path: String, exportAs: String) async throws
    /// mkdir -p; an existing folder stays.
    func addFolder(_ path: String) async throws
    /// A new folder with an access level: "traverse_only" or "no_access" (ContractAccessLevelTests).
    func addFolder(_ path: String, access: String) async throws
    /// A file whose content Dropbox blocks (restricted_content).
    func addRestrictedFile(_ path: String, content: [UInt8]) async throws
    func delete(_ path: String) async throws
    func move(from: String, to: String) async throws
    /// Every cursor issued so far expires.
    func resetCursors() async throws
    /// Every live file and folder, the root not included.
    func account() async throws -> [AccountEntry]
    func stop()
}

/// The fakes, as a test argument.
enum FakeKind: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case inMemory = "in-memory"
    case http = "HTTP"

    var testDescription: String { rawValue }

    func make(adversarial: AdversarialModes = [], seed: UInt64 = 1) async throws -> any FakeUnderTest {
        switch self {
        case .inMemory:
            return InMemoryFake(InMemoryDropbox(adversarial: adversarial, adversarialSeed: seed))
        case .http:
            var arguments: [String] = []
            if !adversarial.isEmpty {
                arguments += ["--adversarial", adversarial.description, "--adversarial-seed", String(seed)]
            }
            return HTTPFake(try await FakeDropboxServer.start(arguments: arguments))
        }
    }
}

struct InMemoryFake: FakeUnderTest {
    let dropbox: InMemoryDropbox

    init(_ dropbox: InMemoryDropbox) {
        self.dropbox = dropbox
    }

    var client: any DropboxClient { dropbox }

    func addFile(_ path: String, content: [UInt8]) async throws {
        dropbox.addFile(path, contents: content)
    }

    func addFile(_ path: String, size: Int, seed: Int) async throws {
        dropbox.addFile(path, size: UInt64(size), seed: UInt64(seed))
    }

    func addSymlink(_ path: String, target: String) async throws {
        dropbox.addSymlink(path, target: target)
    }

    func addExportOnly(_ path: String, exportAs: String) async throws {
        dropbox.addNonDownloadable(path, exportAs: exportAs, size: 100)
    }

    func addFolder(_ path: String) async throws {
        dropbox.addFolder(path)
    }

    func delete(_ path: String) async throws {
        dropbox.delete(path)
    }

    func move(from: String, to: String) async throws {
        dropbox.move(from: from, to: to)
    }

    func resetCursors() async throws {
        dropbox.resetCursors()
    }

    func account() async throws -> [AccountEntry] {
        dropbox.entries.compactMap { entry in
            switch entry {
            case .file(let f):
                return AccountEntry(
                    id: f.id, isFolder: false, pathLower: f.pathLower ?? "", name: f.name, rev: f.rev, size: f.size,
                    contentHash: f.contentHash)
            case .folder(let f):
                return AccountEntry(id: f.id, isFolder: true, pathLower: f.pathLower ?? "", name: f.name)
            case .deleted:
                return nil
            }
        }
    }

    func stop() {}
}

struct HTTPFake: FakeUnderTest {
    let server: FakeDropboxServer
    let client: any DropboxClient

    init(_ server: FakeDropboxServer) {
        self.server = server
        self.client = liveClient(server)
    }

    func addFile(_ path: String, content: [UInt8]) async throws {
        try await server.addFile(path, content: content)
    }

    func addFile(_ path: String, size: Int, seed: Int) async throws {
        try await server.addFile(path, size: size, seed: seed)
    }

    func addSymlink(_ path: String, target: String) async throws {
        _ = try await server.controlRaw(
            .post, "files",
            json: ["path": path, "content_b64": Data(target.utf8).base64EncodedString(), "symlink_target": target])
    }

    func addExportOnly(_ path: String, exportAs: String) async throws {
        _ = try await server.controlRaw(
            .post, "files",
            json: [
                "path": path, "content_b64": Data(repeating: 0x61, count: 100).base64EncodedString(),
                "export_as": exportAs,
            ])
    }

    func addFolder(_ path: String) async throws {
        try await server.addFolder(path)
    }

    func delete(_ path: String) async throws {
        try await server.delete(path)
    }

    func move(from: String, to: String) async throws {
        try await server.move(from: from, to: to)
    }

    func resetCursors() async throws {
        try await server.resetCursors()
    }

    func account() async throws -> [AccountEntry] {
        try await server.tree().map { entry in
            AccountEntry(
                id: entry.id, isFolder: entry.tag == "folder", pathLower: entry.pathLower, name: entry.name,
                rev: entry.rev, size: entry.size, contentHash: entry.contentHash.flatMap(ContentHash.init(hex:)))
        }
    }

    func stop() {
        server.stop()
    }
}
