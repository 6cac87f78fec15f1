// The core over a shared link (SharedLinkSource): the tree lists the link's folders one at a time
// (never recursively, never the reader's own account), reads its files through
// get_shared_link_file with the reader's content_hash check, mounts a link to a file as a folder
// holding it, and sees a change once a folder's listing is older than its lifetime.

import DropboxAPI
import DropboxTestSupport
import Testing

@testable import DropboxFS

#if canImport(Glibc)
    import Glibc
#endif

extension CoreTests {
    @Suite struct SharedLinkSourceTests {
        static func readAll(_ fs: Filesystem, _ inode: UInt64) async throws -> [UInt8] {
            let opened = try await fs.openFile(inode)
            defer { fs.releaseFile(handle: opened.handle) }
            var bytes: [UInt8] = []
            while true {
                let piece = try await fs.read(handle: opened.handle, offset: UInt64(bytes.count), size: 64 << 10)
                if piece.isEmpty { return bytes }
                bytes += piece
            }
        }

        @Test func theTreeReadsAFolderLinkFolderByFolder() async throws {
            let fake = InMemoryDropbox()
            fake.addFile("/mine/private.txt", contents: [9])
            fake.addFile("/Shared/a.txt", contents: Array("alpha".utf8))
            fake.addFile("/Shared/Sub/Deep/b.bin", contents: (0..<200_000).map { UInt8($0 % 251) })
            let url = fake.share("/Shared", password: "pw")
            let source = try await SharedLinkSource.open(SharedLinkArg(url: url, password: "pw"), routes: fake)
            #expect(!source.isFileLink && source.root.name == "Shared")
            let fs = Filesystem(client: source, options: options())
            #expect(try await names(fs, Filesystem.rootInode) == ["Sub", "a.txt"])
            let deep = try await inode(fs, "/Sub/Deep")
            #expect(try await names(fs, deep) == ["b.bin"])
            let blob = try await fs.lookup(parent: deep, name: "b.bin")
            #expect(try await Self.readAll(fs, blob.inode) == (0..<200_000).map { UInt8($0 % 251) })
            #expect(fake.callCount(.getSharedLinkFile) > 0 && fake.callCount(.download) == 0)
            #expect(fake.listFolderArgs.allSatisfy { !$0.recursive && $0.sharedLink?.url == url })
            #expect(fake.listFolderArgs.map(\.path) == ["", "/Sub", "/Sub/Deep"])
        }

        @Test func thumbnailsAreAskedOfTheLinkByTheFilesPath() async throws {
            let fake = InMemoryDropbox()
            fake.addFile("/Pics/a.jpg", size: 5000, seed: 1)
            fake.addFile("/Pics/b.txt", contents: [1])
            let source = try await SharedLinkSource.open(SharedLinkArg(url: fake.share("/Pics")), routes: fake)
            let listed = try await source.listFolder(ListFolderArg(path: ""))
            let revs = Dictionary(uniqueKeysWithValues: listed.entries.compactMap { entry -> (String, String)? in
                if case .file(let f) = entry { return (f.name, f.rev) }
                return nil
            })
            let results = try await source.getThumbnailBatch([
                ThumbnailArg(path: "rev:" + revs["a.jpg", default: ""]), ThumbnailArg(path: "rev:" + revs["b.txt", default: ""]),
                ThumbnailArg(path: "rev:0123456789ab"),
            ])
            #expect((try? results[0].get())?.isEmpty == false)
            #expect(results[1] == .failure(.unsupportedExtension))
            #expect(results[2] == .failure(.path(.notFound)), "a revision no listing showed")
        }

        @Test func aFileLinkIsAFolderHoldingTheFile() async throws {
            let fake = InMemoryDropbox()
            fake.addFile("/docs/report.pdf", contents: Array("%PDF".utf8))
            let source = try await SharedLinkSource.open(SharedLinkArg(url: fake.share("/docs/report.pdf")), routes: fake)
            #expect(source.isFileLink)
            let fs = Filesystem(client: source, options: options())
            #expect(try await names(fs, Filesystem.rootInode) == ["report.pdf"])
            let file = try await fs.lookup(parent: Filesystem.rootInode, name: "report.pdf")
            #expect(try await Self.readAll(fs, file.inode) == Array("%PDF".utf8))
        }

        @Test func aChangeIsSeenOnceTheListingIsOlderThanItsLifetime() async throws {
            let fake = InMemoryDropbox()
            fake.addFile("/S/one.txt", contents: [1])
            let source = try await SharedLinkSource.open(SharedLinkArg(url: fake.share("/S")), routes: fake)
            let clock = ManualClock()
            let fs = Filesystem(client: source, options: options(folderListingTTL: 30, clock: clock))
            #expect(try await names(fs, Filesystem.rootInode) == ["one.txt"])
            fake.addFile("/S/two.txt", contents: [2])
            clock.advance(by: 10)
            #expect(try await names(fs, Filesystem.rootInode) == ["one.txt"], "still within the lifetime")
            clock.advance(by: 25)
            #expect(try await names(fs, Filesystem.rootInode) == ["one.txt", "two.txt"])
        }

        @Test func refusalsOfTheLinkComeBeforeAnythingIsServed() async throws {
            let fake = InMemoryDropbox()
            fake.addFolder("/S")
            let url = fake.share("/S", password: "pw")
            await #expect(throws: DropboxError.sharedLink(.accessDenied)) {
                _ = try await SharedLinkSource.open(SharedLinkArg(url: url, password: "nope"), routes: fake)
            }
            fake.setLinkExpired(url)
            await #expect(throws: DropboxError.sharedLink(.notFound)) {
                _ = try await SharedLinkSource.open(SharedLinkArg(url: url, password: "pw"), routes: fake)
            }
            // During a mount the same refusals answer EACCES, a folder of the link EISDIR.
            #expect(FilesystemError(DropboxError.sharedLink(.notFound)).errno == EACCES)
            #expect(FilesystemError(DropboxError.sharedLink(.isDirectory)).errno == EISDIR)
            #expect(SharedLinkArg(url: "https://www.dropbox.com/scl/fo/x/y?rlkey=secret", password: "pw").description
                == "https://www.dropbox.com/scl/fo/x/y")
        }
    }
}
