// Access levels through the core's entries (docs/SEMANTICS.md, "Access levels"): a `no_access`
// folder shows mode 000 and answers EACCES without a request, or is left out when the mount hides
// them; a traverse-only folder shows only its folders; a file whose content Dropbox blocks answers
// EACCES, asked of Dropbox once. The levels survive a stored tree.

import DropboxAPI
import DropboxTestSupport
import Foundation
import Testing

@testable import DropboxFS

#if canImport(Glibc)
    import Glibc
#endif

extension CoreTests {
    @Suite struct AccessLevelTests {
        /// /team/Locked (no_access), /team/Pass (traverse_only, holding Open/a.txt and a file),
        /// /team/Open/b.txt, and /blocked.bin whose content Dropbox blocks.
        static func account() -> InMemoryDropbox {
            let fake = InMemoryDropbox()
            fake.addFolder("/team/Locked")
            fake.setFolderAccess("/team/Locked", noAccess: true)
            fake.addFile("/team/Pass/Open/a.txt", contents: Array("a".utf8))
            fake.addFile("/team/Pass/unreadable.txt", contents: Array("x".utf8))
            fake.setFolderAccess("/team/Pass", traverseOnly: true)
            fake.addFile("/team/Open/b.txt", contents: Array("b".utf8))
            fake.addFile("/blocked.bin", contents: Array(repeating: 7, count: 5000))
            fake.restrictContent("/blocked.bin")
            return fake
        }

        @Test(arguments: [false, true])
        func aFolderWithoutAccessIsShownClosedAndNeverListed(prefetch: Bool) async throws {
            let fake = Self.account()
            let fs = Filesystem(client: fake, options: options(prefetch: prefetch))
            let team = try await inode(fs, "/team")
            #expect(try await names(fs, team) == ["Locked", "Open", "Pass"])
            let locked = try await resolve(fs, "/team/Locked")
            #expect(locked.kind == .folder)
            #expect(locked.permissions == 0, "mode 000")
            #expect(try fs.extendedAttribute("user.dropbox.access", of: locked.inode) == "no_access")
            let listingsBefore = fake.callCount(.listFolder)
            await #expect(throws: FilesystemError.restricted(.noAccessFolder("/team/Locked"))) {
                try await fs.openDirectory(locked.inode, caller: .anonymous).value
            }
            await #expect(throws: FilesystemError.restricted(.noAccessFolder("/team/Locked"))) {
                try await fs.readDirectory(locked.inode, from: 0, countingLookups: false, caller: .anonymous, into: EntryNames())
                    .value
            }
            await #expect(throws: FilesystemError.restricted(.noAccessFolder("/team/Locked"))) {
                try await fs.lookup(parent: locked.inode, name: "anything")
            }
            #expect(FilesystemError.restricted(.noAccessFolder("/team/Locked")).errno == EACCES)
            #expect(fake.callCount(.listFolder) == listingsBefore, "a folder without access is never listed")
        }

        @Test func hiddenFoldersWithoutAccessAreNotThereAtAll() async throws {
            var settings = options()
            settings.hideNoAccess = true
            let fs = Filesystem(client: Self.account(), options: settings)
            let team = try await inode(fs, "/team")
            #expect(try await names(fs, team) == ["Open", "Pass"])
            await #expect(throws: FilesystemError.notFound) { try await fs.lookup(parent: team, name: "Locked") }
        }

        @Test func aTraverseOnlyFolderShowsOnlyItsFolders() async throws {
            let fs = Filesystem(client: Self.account(), options: options())
            let pass = try await resolve(fs, "/team/Pass")
            #expect(pass.permissions == 0o555)
            #expect(try fs.extendedAttribute("user.dropbox.access", of: pass.inode) == "traverse_only")
            #expect(try await names(fs, pass.inode) == ["Open"])
            await #expect(throws: FilesystemError.notFound) { try await fs.lookup(parent: pass.inode, name: "unreadable.txt") }
            let file = try await inode(fs, "/team/Pass/Open/a.txt")
            let opened = try await fs.openFile(file)
            #expect(try await fs.read(handle: opened.handle, offset: 0, size: 10) == Array("a".utf8))
            fs.releaseFile(handle: opened.handle)
        }

        @Test func blockedContentAnswersEACCESAndIsAskedForOnce() async throws {
            let fake = Self.account()
            let fs = Filesystem(client: fake, options: options())
            let file = try await inode(fs, "/blocked.bin")
            let opened = try await fs.openFile(file)
            await #expect(throws: FilesystemError.restricted(.restrictedContent)) {
                try await fs.read(handle: opened.handle, offset: 0, size: 4096)
            }
            let downloads = fake.callCount(.download)
            #expect(downloads >= 1)
            await #expect(throws: FilesystemError.restricted(.restrictedContent)) {
                try await fs.read(handle: opened.handle, offset: 0, size: 4096)
            }
            fs.releaseFile(handle: opened.handle)
            await #expect(throws: FilesystemError.restricted(.restrictedContent)) { try await fs.openFile(file) }
            #expect(fake.callCount(.download) == downloads, "never asked for again")
            #expect(FilesystemError.restricted(.restrictedContent).errno == EACCES)
        }

        @Test func levelsSurviveAStoredTree() async throws {
            let folder = TreeStoreTests.folder()
            defer { try? FileManager.default.removeItem(atPath: folder) }
            let fake = Self.account()
            let store = try TreeStoreTests.open(folder)
            let fs = TreeStoreTests.mount(fake, store: store, stored: nil)
            fs.startSync()
            #expect(await fs.waitUntilCaughtUp(seconds: 60))
            fs.stop()
            store.close()

            let reopened = try TreeStoreTests.open(folder)
            defer { reopened.close() }
            let stored = try #require(reopened.loadTree(folderTime: CoreTests.folderTime, now: 0))
            let offline = InMemoryDropbox()  // nothing to list: the answers must come from the store
            let restored = TreeStoreTests.mount(offline, store: reopened, stored: stored)
            #expect(try await resolve(restored, "/team/Locked").permissions == 0)
            let pass = try await inode(restored, "/team/Pass")
            #expect(try restored.extendedAttribute("user.dropbox.access", of: pass) == "traverse_only")
            restored.stop()
        }
    }
}
