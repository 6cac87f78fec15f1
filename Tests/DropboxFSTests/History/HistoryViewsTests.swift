// The history views (History/HistoryViews.swift) on the in-memory Dropbox: revisions are
// read-only files named by time and rev with the file's extension, read byte for byte through the
// reader; deleted files and a deleted folder's contents appear under the hidden deleted view; the
// hidden names are never listed and entering one costs no request; an expired revision or a name
// that is not canonical is ENOENT; hundreds of revisions are fetched a page at a time as the
// listing reaches them.

import DropboxAPI
import DropboxTestSupport
import Foundation
import Testing

@testable import DropboxFS

extension CoreTests {
    @Suite struct HistoryViewsTests {
        static func readWhole(_ fs: Filesystem, _ inode: UInt64) async throws -> [UInt8] {
            let handle = try await fs.openFile(inode).handle
            defer { fs.releaseFile(handle: handle) }
            var out: [UInt8] = []
            while true {
                let piece = try await fs.read(handle: handle, offset: UInt64(out.count), size: 1000)
                if piece.isEmpty { return out }
                out += piece
            }
        }

        /// Every entry of a view folder but "." and "..".
        static func listing(_ fs: Filesystem, _ inode: UInt64) async throws -> [DirectoryEntry] {
            try await fs.readDirectory(inode, from: 0, countingLookups: false, caller: .anonymous, into: EntryNames()).value
                .entries.filter { $0.name != "." && $0.name != ".." }
        }

        @Test func revisionsAreReadOnlyFilesNamedByTimeAndRev() async throws {
            let fake = InMemoryDropbox()
            let texts = ["first draft\n", "second draft, longer\n", "final\n"]
            for text in texts { fake.addFile("/docs/note.txt", contents: Array(text.utf8)) }
            let fs = Filesystem(client: fake, options: options())
            let docs = try await inode(fs, "/docs")
            _ = try await names(fs, docs)
            let before = fake.calls
            let versions = try await fs.lookup(parent: docs, name: HistoryNames.versions)
            #expect(versions.kind == .folder && versions.permissions == 0o555)
            let note = try await fs.lookup(parent: versions.inode, name: "note.txt")
            #expect(fake.calls == before, "in a listed folder, the hidden folder and a file's versions folder cost no request")
            #expect(try await Self.listing(fs, versions.inode).map(\.name) == ["note.txt"])
            let revisions = try await Self.listing(fs, note.inode)
            #expect(revisions.count == 3)
            let pattern = /^\d{4}-\d{2}-\d{2}T\d{6}Z_[0-9a-f]{9,}\.txt$/
            #expect(revisions.allSatisfy { $0.name.wholeMatch(of: pattern) != nil }, "\(revisions.map(\.name))")
            #expect(revisions.map(\.name) == revisions.map(\.name).sorted(by: >), "newest first, and names sort by time")
            for (entry, text) in zip(revisions, texts.reversed()) {
                #expect(entry.attributes.kind == .file && entry.attributes.permissions == 0o444)
                #expect(entry.attributes.size == UInt64(text.utf8.count))
                #expect(try await Self.readWhole(fs, entry.attributes.inode) == Array(text.utf8))
                // Looked up by name (as `cat` does), the same inode, answered now.
                let found = try #require(try fs.lookup(parent: note.inode, name: entry.name, caller: .anonymous).now())
                #expect(found.inode == entry.attributes.inode)
                let facts = Dictionary(uniqueKeysWithValues: try fs.extendedAttributes(of: found.inode).map { ($0.name, $0.value) })
                #expect(facts["user.dropbox.rev"].map { entry.name.contains("_" + $0 + ".") } == true)
                #expect(facts["user.dropbox.content_hash"] == ContentHasher.hash(Array(text.utf8)).hex)
                #expect(try fs.extendedAttribute("user.dropbox.rev", of: found.inode) == facts["user.dropbox.rev"])
            }
            #expect(fake.callCount(.listRevisions) == 2, "the path's history, then one id-mode call")
            // ls -l asks for ACLs and labels: EOPNOTSUPP, as for any entry, not a stale handle.
            #expect(throws: FilesystemError.notSupported) { try fs.extendedAttribute("system.posix_acl_access", of: note.inode) }
            #expect(try fs.extendedAttributes(of: versions.inode).isEmpty)
        }

        @Test func hiddenNamesAreNeverListedAndWalksCostNothing() async throws {
            let fake = InMemoryDropbox()
            fake.addFile("/a/x.txt", contents: [1])
            fake.addFile("/a/b/y.txt", contents: [2])
            let fs = Filesystem(client: fake, options: options())
            for path in ["/", "/a", "/a/b"] {
                let folder = path == "/" ? Filesystem.rootInode : try await inode(fs, path)
                let names = try await names(fs, folder)
                #expect(!names.contains(HistoryNames.versions) && !names.contains(HistoryNames.deleted), "\(names)")
            }
            #expect(fake.callCount(.listRevisions) == 0 && fake.callCount(.getMetadata) == 0)
            // Reachable by name in every folder, the root too, at once.
            for folder in [Filesystem.rootInode, try await inode(fs, "/a/b")] {
                for name in [HistoryNames.versions, HistoryNames.deleted] {
                    #expect(try fs.lookup(parent: folder, name: name, caller: .anonymous).now()?.kind == .folder)
                }
            }
            // Not inside a file.
            let file = try await inode(fs, "/a/x.txt")
            await #expect(throws: FilesystemError.notADirectory) { try await fs.lookup(parent: file, name: HistoryNames.versions) }
        }

        @Test func deletedFilesAndADeletedFoldersContentsAppearUnderTheDeletedView() async throws {
            let fake = InMemoryDropbox()
            fake.addFile("/w/keep.txt", contents: Array("keep".utf8))
            fake.addFile("/w/gone.txt", contents: Array("gone v1".utf8))
            fake.modifyFile("/w/gone.txt", contents: Array("gone v2".utf8))
            fake.addFile("/w/old/a.txt", contents: Array("A".utf8))
            fake.addFile("/w/old/sub/b.bin", contents: Array("BBB".utf8))
            fake.addFile("/w/live/c.txt", contents: [9])
            fake.delete("/w/gone.txt")
            fake.delete("/w/old")
            fake.delete("/w/live/c.txt")
            let fs = Filesystem(client: fake, options: options())
            let w = try await inode(fs, "/w")
            let deleted = try await fs.lookup(parent: w, name: HistoryNames.deleted)
            let top = try await Self.listing(fs, deleted.inode)
            #expect(top.map(\.name).sorted() == ["gone.txt", "old"], "a file deleted in a live subfolder is that folder's")
            #expect(top.first { $0.name == "old" }?.attributes.kind == .folder)
            #expect(top.first { $0.name == "gone.txt" }?.lean == true, "named without asking Dropbox")
            let gone = try await fs.lookup(parent: deleted.inode, name: "gone.txt")
            #expect(gone.size == 7 && gone.permissions == 0o444)
            #expect(try await Self.readWhole(fs, gone.inode) == Array("gone v2".utf8))
            let old = try await fs.lookup(parent: deleted.inode, name: "old")
            #expect(try await Self.listing(fs, old.inode).map(\.name).sorted() == ["a.txt", "sub"])
            let sub = try await fs.lookup(parent: old.inode, name: "sub")
            let b = try await fs.lookup(parent: sub.inode, name: "b.bin")
            #expect(try await Self.readWhole(fs, b.inode) == Array("BBB".utf8))
            await #expect(throws: FilesystemError.notFound) { try await fs.lookup(parent: deleted.inode, name: "keep.txt") }
            #expect(fake.listFolderArgs.filter(\.includeDeleted).count == 1, "one listing serves the whole view")
            // The deleted file's versions are reachable by its name too.
            let versions = try await fs.lookup(parent: w, name: HistoryNames.versions)
            let goneVersions = try await fs.lookup(parent: versions.inode, name: "gone.txt")
            #expect(try await Self.listing(fs, goneVersions.inode).count == 2)
            await #expect(throws: FilesystemError.notFound) { try await fs.lookup(parent: versions.inode, name: "never.txt") }
        }

        @Test func anExpiredRevisionOrANameThatIsNotCanonicalIsENOENT() async throws {
            let fake = InMemoryDropbox()
            fake.addFile("/f.md", contents: Array("old".utf8))
            let old = fake.modifyFile("/f.md", contents: Array("new".utf8))
            _ = old
            let fs = Filesystem(client: fake, options: options())
            let versions = try await fs.lookup(parent: Filesystem.rootInode, name: HistoryNames.versions)
            let file = try await fs.lookup(parent: versions.inode, name: "f.md")
            let listed = try await Self.listing(fs, file.inode).map(\.name)
            #expect(listed.count == 2)
            // A fresh mount looks the older one up by name: one get_metadata; once expired, ENOENT.
            let fs2 = Filesystem(client: fake, options: options())
            let versions2 = try await fs2.lookup(parent: Filesystem.rootInode, name: HistoryNames.versions)
            let file2 = try await fs2.lookup(parent: versions2.inode, name: "f.md")
            #expect(try await fs2.lookup(parent: file2.inode, name: listed[1]).size == 3)
            let wrongExtension = String(listed[1].dropLast(3)) + ".txt"
            await #expect(throws: FilesystemError.notFound) { try await fs2.lookup(parent: file2.inode, name: wrongExtension) }
            await #expect(throws: FilesystemError.notFound) { try await fs2.lookup(parent: file2.inode, name: "notes.md") }
            let rev = try #require(HistoryNames.rev(inRevisionName: listed[1]))
            #expect(fake.expireRevision(rev))
            let fs3 = Filesystem(client: fake, options: options())
            let versions3 = try await fs3.lookup(parent: Filesystem.rootInode, name: HistoryNames.versions)
            let file3 = try await fs3.lookup(parent: versions3.inode, name: "f.md")
            await #expect(throws: FilesystemError.notFound) { try await fs3.lookup(parent: file3.inode, name: listed[1]) }
            #expect(try await Self.listing(fs3, file3.inode).map(\.name) == [listed[0]])
        }

        @Test func aMovedFilesVersionsIncludeThoseFromBeforeTheMove() async throws {
            let fake = InMemoryDropbox()
            fake.addFile("/old name.txt", contents: Array("one".utf8))
            fake.modifyFile("/old name.txt", contents: Array("two".utf8))
            fake.move(from: "/old name.txt", to: "/dir/new name.txt")
            fake.modifyFile("/dir/new name.txt", contents: Array("three".utf8))
            let fs = Filesystem(client: fake, options: options())
            let dir = try await inode(fs, "/dir")
            _ = try await names(fs, dir)
            let versions = try await fs.lookup(parent: dir, name: HistoryNames.versions)
            let file = try await fs.lookup(parent: versions.inode, name: "new name.txt")
            let listed = try await Self.listing(fs, file.inode)
            var contents: [String] = []
            for entry in listed {
                #expect(entry.name.hasSuffix(".txt"))
                contents.append(String(decoding: try await Self.readWhole(fs, entry.attributes.inode), as: UTF8.self))
            }
            #expect(contents.first == "three" && contents.last == "one", "\(contents)")
            #expect(Set(contents) == ["one", "two", "three"])
            #expect(listed.map(\.name) == listed.map(\.name).sorted(by: >))
            #expect(fake.callCount(.listRevisions) == 2, "the path's history, then one id-mode call")
            // A version from before the move, looked up by name on a fresh mount: found by its id.
            let fresh = Filesystem(client: fake, options: options())
            let dir2 = try await inode(fresh, "/dir")
            _ = try await names(fresh, dir2)
            let versions2 = try await fresh.lookup(parent: dir2, name: HistoryNames.versions)
            let file2 = try await fresh.lookup(parent: versions2.inode, name: "new name.txt")
            #expect(try await fresh.lookup(parent: file2.inode, name: try #require(listed.last).name).size == 3)
        }

        @Test func hundredsOfRevisionsArePagedAsTheListingReachesThem() async throws {
            let fake = InMemoryDropbox()
            for i in 0..<250 { fake.addFile("/many.log", contents: Array("line \(i)\n".utf8)) }
            let fs = Filesystem(client: fake, options: options())
            let versions = try await fs.lookup(parent: Filesystem.rootInode, name: HistoryNames.versions)
            let file = try await fs.lookup(parent: versions.inode, name: "many.log")
            // The kernel's first small piece: one page.
            var piece = EntryNames()
            piece.entries.reserveCapacity(10)
            struct Few: DirectoryPiece {
                var taken = 0
                mutating func add(_ entry: DirectoryEntry, nextOffset: UInt64) -> Bool {
                    guard taken < 10 else { return false }
                    taken += 1
                    return true
                }
            }
            _ = try await fs.readDirectory(file.inode, from: 0, countingLookups: false, caller: .anonymous, into: Few()).value
            #expect(fake.callCount(.listRevisions) == 1)
            let all = try await Self.listing(fs, file.inode)
            #expect(all.count == 250 && Set(all.map(\.name)).count == 250)
            #expect(fake.callCount(.listRevisions) == 4, "pages of 100, then one id-mode call")
            #expect(try await Self.readWhole(fs, all[249].attributes.inode) == Array("line 0\n".utf8))
        }
    }
}
