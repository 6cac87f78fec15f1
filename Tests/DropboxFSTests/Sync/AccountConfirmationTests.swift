// A stored tree served before Dropbox named the credentials' account (an offline mount) is
// confirmed with one users/get_current_account before its first catch-up: the same account catches
// up as usual; another account's credentials drop the tree (never written to again) and fill the
// account Dropbox named into its own store (Sync/AccountConfirmation.swift).

import DropboxAPI
import DropboxTestSupport
import Foundation
import Synchronization
import Testing

@testable import DropboxFS

extension CoreTests {
    @Suite(.serialized) struct AccountConfirmationTests {
        static func bytes(_ path: String) -> Data {
            FileManager.default.contents(atPath: path) ?? Data()
        }

        @Test func theSameAccountCatchesUpAfterOneQuestion() async throws {
            let folder = TreeStoreTests.folder()
            defer { try? FileManager.default.removeItem(atPath: folder) }
            let (fake, store, stored) = try await TreeStoreTests.storedAccount(folder)
            defer { store.close() }
            fake.addFile("/made meanwhile.txt", size: 5)
            fake.resetCalls()
            let asked = Mutex(0)
            var options = CoreTests.options(pageLimit: 7, prefetch: true, watchChanges: true, longpollTimeout: 30)
            options.store = store
            options.accountConfirmation = AccountConfirmation(accountID: fake.account.accountId) { _ in
                asked.withLock { $0 += 1 }
                return nil
            }
            let fs = Filesystem(client: fake, options: options, restoring: stored)
            defer { fs.stop() }
            fs.startSync()
            #expect(await fs.waitUntilCaughtUp(seconds: 60))
            #expect(fake.callCount(.getCurrentAccount) == 1)
            #expect(fake.callCount(.listFolder) == 0, "caught up from the cursor, not listed")
            #expect(asked.withLock { $0 } == 0)
            #expect(differences(core: try await walk(fs), expected: try await reference(fake)) == [])
        }

        @Test func anotherAccountDropsTheTreeAndFillsItsOwnStore() async throws {
            let folder = TreeStoreTests.folder()
            defer { try? FileManager.default.removeItem(atPath: folder) }
            let (first, store, stored) = try await TreeStoreTests.storedAccount(folder)
            let (accounts, _, second) = InMemoryDropboxAccounts.twoAccounts()
            second.longpollSecond = .milliseconds(5)
            second.addFile("/B only/b.txt", contents: Array("b".utf8))
            second.addFile("/top of b.txt", size: 9)
            let client = accounts.client(token: InMemoryDropboxAccounts.secondToken)
            let firstPath = store.path
            let storedRows = stored.entryCount
            let opened = Mutex<TreeStore?>(nil)
            var options = CoreTests.options(pageLimit: 7, prefetch: true, watchChanges: true, longpollTimeout: 30)
            options.store = store
            options.accountConfirmation = AccountConfirmation(accountID: first.account.accountId) { account in
                store.close()  // as the mount does: the other account's database is let go
                let identity = TreeStoreIdentity(accountID: account.accountId, pathRoot: .home, endpoint: "memory:")
                let other = try? TreeStore.open(folder: folder, identity: identity, email: account.email, mountpoint: "/mnt")
                opened.withLock { $0 = other }
                return other
            }
            let fs = Filesystem(client: client, options: options, restoring: stored)
            #expect(try await walk(fs).count > 1, "the stored tree is served before Dropbox answers")
            fs.startSync()
            #expect(await fs.waitUntilCaughtUp(seconds: 60))
            #expect(second.callCount(.getCurrentAccount) == 1)
            // The other account's cursor never went to Dropbox: it would have been reset.
            #expect(fs.syncStatus().contains(" resets=0"), "\(fs.syncStatus())")
            #expect(!fs.syncStatus().contains("restored="))
            #expect(differences(core: try await walk(fs), expected: try await reference(second)) == [])
            fs.stop()
            let otherStore = try #require(opened.withLock { $0 })
            otherStore.close()
            // The first account's database was not written after the switch; the second's holds its tree.
            let firstInfo = try #require(TreeStore.info(path: firstPath))
            #expect(firstInfo.identity == TreeStoreTests.identity && firstInfo.complete)
            let reopened = try TreeStoreTests.open(folder)
            defer { reopened.close() }
            #expect(reopened.loadTree(folderTime: CoreTests.folderTime, now: 0)?.entryCount == storedRows)
            let check = try TreeStore.open(
                folder: folder, identity: otherStore.identity, email: "x", mountpoint: "/mnt")
            defer { check.close() }
            let secondTree = try #require(check.loadTree(folderTime: CoreTests.folderTime, now: 0))
            #expect(secondTree.entryCount == second.entryCount)
        }
    }
}
