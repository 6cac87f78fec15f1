// Attributes (SEMANTICS.md "Types, permissions, sizes, times"): modes, owner, sizes, st_blocks,
// times from client_modified / server_modified, the folder time, link counts; and the extended
// attributes that expose Dropbox facts.

import DropboxAPI
import DropboxTestSupport
import Testing

@testable import DropboxFS

extension CoreTests {
    @Suite struct AttributeTests {
        @Test func attributesOfFilesFoldersAndSymlinks() async throws {
            let fake = InMemoryDropbox()
            let modified = DropboxTimestamp(secondsSinceEpoch: 1_500_000_000)
            let file = fake.addFile("/docs/report.pdf", size: 1000, clientModified: modified)
            fake.addFile("/docs/empty", contents: [])
            fake.addFile("/docs/exact", size: 512)
            fake.addFile("/docs/one-more", size: 513)
            let link = fake.addSymlink("/docs/link", target: "../elsewhere/\u{E9}")
            let paper = fake.addNonDownloadable("/docs/notes.paper", exportAs: "html", size: 77)
            let fs = Filesystem(client: fake, options: options())

            let root = try fs.attributes(of: Filesystem.rootInode)
            #expect(root.inode == 1 && root.kind == .folder && root.permissions == 0o555)
            #expect(root.mtime == folderTime && root.ctime == folderTime && root.atime == folderTime)

            let docs = try await resolve(fs, "/docs")
            #expect(docs.kind == .folder)
            #expect(docs.permissions == 0o555)
            #expect(docs.linkCount == 1)
            #expect((docs.uid, docs.gid) == (ownership.uid, ownership.gid))
            #expect(docs.mtime == folderTime && docs.ctime == folderTime)
            #expect(docs.blocks == 0)

            let report = try await resolve(fs, "/docs/report.pdf")
            #expect(report.kind == .file)
            #expect(report.permissions == 0o444)
            #expect(report.linkCount == 1)
            #expect((report.uid, report.gid) == (4242, 4343))
            #expect(report.size == 1000)
            #expect(report.blocks == 2)
            #expect(report.blockSize == 4096)
            #expect(report.mtime == 1_500_000_000, "mtime is client_modified")
            #expect(report.atime == report.mtime)
            #expect(report.ctime == file.serverModified.secondsSinceEpoch, "ctime is server_modified")
            #expect(report.ctime != report.mtime)
            #expect(try fs.attributes(of: report.inode) == report)

            #expect(try await resolve(fs, "/docs/empty").blocks == 0)
            #expect(try await resolve(fs, "/docs/exact").blocks == 1)
            #expect(try await resolve(fs, "/docs/one-more").blocks == 2)

            let symlink = try await resolve(fs, "/docs/link")
            #expect(symlink.kind == .symlink)
            #expect(symlink.permissions == 0o777)
            #expect(symlink.size == UInt64("../elsewhere/\u{E9}".utf8.count))
            #expect(symlink.mtime == link.clientModified.secondsSinceEpoch)
            #expect(try fs.readlink(symlink.inode) == "../elsewhere/\u{E9}")

            let notes = try await resolve(fs, "/docs/notes.paper")
            #expect(notes.kind == .file && notes.permissions == 0o444 && notes.size == 77)
            #expect(notes.ctime == paper.serverModified.secondsSinceEpoch)
        }

        @Test func extendedAttributesExposeDropboxFacts() async throws {
            let fake = InMemoryDropbox()
            let file = fake.addFile("/a/file.bin", contents: Array(repeating: 7, count: 100))
            let folder = fake.addFolder("/a/sub")
            let link = fake.addSymlink("/a/link", target: "file.bin")
            let paper = fake.addNonDownloadable("/a/doc.paper", exportAs: "md")
            let fs = Filesystem(client: fake, options: options())

            let fileAttributes = try await fs.extendedAttributes(of: inode(fs, "/a/file.bin"))
            #expect(fileAttributes.map(\.name) == ["user.dropbox.id", "user.dropbox.rev", "user.dropbox.content_hash"])
            #expect(fileAttributes.map(\.value) == [file.id, file.rev, file.contentHash!.hex])
            #expect(fileAttributes[2].value.count == 64)

            let folderAttributes = try await fs.extendedAttributes(of: inode(fs, "/a/sub"))
            #expect(folderAttributes.map(\.name) == ["user.dropbox.id"])
            #expect(folderAttributes.first?.value == folder.id)

            let linkAttributes = try await fs.extendedAttributes(of: inode(fs, "/a/link"))
            #expect(linkAttributes.prefix(2).map(\.value) == [link.id, link.rev])

            let paperAttributes = try await fs.extendedAttributes(of: inode(fs, "/a/doc.paper"))
            #expect(paperAttributes.map(\.name) == ["user.dropbox.id", "user.dropbox.rev"], "no content_hash")
            #expect(paperAttributes.map(\.value) == [paper.id, paper.rev])

            // The root carries the sync engine's status instead (SEMANTICS.md).
            let rootAttributes = try fs.extendedAttributes(of: Filesystem.rootInode)
            #expect(rootAttributes.map(\.name) == ["user.dropboxfs.status"])
            #expect(rootAttributes.first?.value.hasPrefix("phase=") == true)
        }

        @Test func aModifiedFileGetsANewInodeWithTheNewFacts() async throws {
            let fake = InMemoryDropbox()
            fake.addFile("/f.txt", contents: [1, 2, 3])
            let clock = ManualClock()
            let fs = Filesystem(client: fake, options: options(folderListingTTL: 10, clock: clock))
            // The kernel holds the old revision's inode (as an open file would).
            let before = try await fs.lookup(parent: Filesystem.rootInode, name: "f.txt")
            let newMeta = fake.modifyFile(
                "/f.txt", contents: Array(repeating: 9, count: 2000), clientModified: DropboxTimestamp(secondsSinceEpoch: 42))
            clock.advance(by: 11)
            _ = try await names(fs, 1)
            let after = try await resolve(fs, "/f.txt")
            #expect(after.inode != before.inode, "a new revision is a new inode")
            let old = try fs.attributes(of: before.inode)
            #expect(old.size == 3, "the held inode keeps its revision's size")
            #expect(after.size == 2000 && after.blocks == 4 && after.mtime == 42)
            #expect(after.ctime == newMeta.serverModified.secondsSinceEpoch)
            #expect(try fs.extendedAttributes(of: after.inode)[1].value == newMeta.rev)
        }
    }
}
