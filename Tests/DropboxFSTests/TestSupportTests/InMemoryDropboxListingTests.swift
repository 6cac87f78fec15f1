// Tests of InMemoryDropbox listings: paging, order, scope, path forms, errors and scale.

import DropboxAPI
import DropboxTestSupport
import Testing

extension TestSupportTests {
    @Suite struct InMemoryDropboxListingTests {
        /// 1,234 files in 12 folders of 3 levels, plus the folders themselves.
        private func wideTree() -> InMemoryDropbox {
            let fake = InMemoryDropbox()
            for i in 0..<1234 {
                fake.addFile("/L\(i % 3)/M\(i % 4)/file\(i).txt", size: UInt64(i % 7))
            }
            return fake
        }

        @Test func pagingCoversEveryEntryExactlyOnce() async throws {
            let fake = wideTree()
            let drained = try await listAll(fake, ListFolderArg(path: "", recursive: true, limit: 100))
            let keys = drained.entries.compactMap(\.pathLower)
            #expect(keys.count == fake.entryCount)
            #expect(Set(keys).count == keys.count)
            #expect(drained.pages.count == (fake.entryCount + 99) / 100)
            #expect(drained.pages.dropLast().allSatisfy { $0.hasMore && $0.entries.count == 100 })
            #expect(drained.pages.last?.hasMore == false)
            #expect(fake.calls == ["list_folder": 1, "list_folder/continue": drained.pages.count - 1])
        }

        @Test func recursiveListingPutsEveryFolderBeforeItsChildren() async throws {
            let fake = wideTree()
            let entries = try await listAll(fake, ListFolderArg(path: "", recursive: true, limit: 7)).entries
            var seen: Set<String> = [""]
            for entry in entries {
                let key = try #require(entry.pathLower)
                let parent = String(key[..<key.lastIndex(of: "/")!])
                #expect(seen.contains(parent), "\(key) came before its parent")
                seen.insert(key)
            }
        }

        @Test func recursiveListingOfAFolderStartsWithTheFolder() async throws {
            let fake = smallTree()
            let entries = try await listAll(fake, ListFolderArg(path: "/a", recursive: true)).entries
            #expect(entries.map(describe) == ["folder:/A", "file:/A/b.txt", "folder:/A/Sub", "file:/A/Sub/c.txt"])
        }

        @Test func nonRecursiveListingHoldsDirectChildrenOnly() async throws {
            let fake = smallTree()
            let root = try await listAll(fake, ListFolderArg(path: "")).entries
            #expect(root.map(describe) == ["folder:/A", "file:/top.txt"])
            let folder = try await listAll(fake, ListFolderArg(path: "/A")).entries
            #expect(folder.map(describe) == ["file:/A/b.txt", "folder:/A/Sub"])
        }

        @Test func emptyFolderListsNothing() async throws {
            let fake = InMemoryDropbox()
            fake.addFolder("/empty")
            let page = try await fake.listFolder(ListFolderArg(path: "/empty"))
            #expect(page.entries.isEmpty)
            #expect(!page.hasMore)
        }

        @Test func defaultPageSizeIs500() async throws {
            let fake = InMemoryDropbox()
            for i in 0..<600 { fake.addFile("/f\(i)", size: 0) }
            let first = try await fake.listFolder(ListFolderArg(path: "", limit: nil))
            #expect(first.entries.count == 500)
            #expect(first.hasMore)
        }

        @Test func folderCanBeNamedByIdAnyCaseOrRepeatedSlashes() async throws {
            let fake = smallTree()
            let id = try #require(fake.entry("/A/Sub")?.id)
            for path in [
                id, "/a/SUB", "//A//Sub", "id:" + String(try #require(fake.entry("/A")?.id).dropFirst(3)) + "/sub",
            ] {
                let entries = try await listAll(fake, ListFolderArg(path: path)).entries
                #expect(entries.map(describe) == ["file:/A/Sub/c.txt"], "listing \(path)")
            }
        }

        @Test func listingErrors() async throws {
            let fake = smallTree()
            let fileId = try #require(fake.entry("/top.txt")?.id)
            await #expect(
                throws: DropboxError.badRequest(message: "path: '/' is not a valid path; use \"\" for the root")
            ) {
                try await fake.listFolder(ListFolderArg(path: "/"))
            }
            await #expect(throws: DropboxError.lookup(.notFound)) {
                try await fake.listFolder(ListFolderArg(path: "/nope"))
            }
            await #expect(throws: DropboxError.lookup(.notFound)) {
                try await fake.listFolder(ListFolderArg(path: "id:missing"))
            }
            await #expect(throws: DropboxError.lookup(.notFolder)) {
                try await fake.listFolder(ListFolderArg(path: "/top.txt"))
            }
            await #expect(throws: DropboxError.lookup(.notFolder)) {
                try await fake.listFolder(ListFolderArg(path: fileId))
            }
            // Not of any form the route's pattern allows: refused before any lookup.
            await #expect {
                try await fake.listFolder(ListFolderArg(path: "A"))
            } throws: { error in
                if case .badRequest = error as? DropboxError { true } else { false }
            }
            await #expect(throws: DropboxError.lookup(.malformedPath)) {
                try await fake.listFolder(ListFolderArg(path: "/A/"))
            }
            await #expect(throws: DropboxError.self) { try await fake.listFolder(ListFolderArg(path: "", limit: 0)) }
            await #expect(throws: DropboxError.self) { try await fake.listFolder(ListFolderArg(path: "", limit: 2001)) }
            await #expect(throws: DropboxError.self) { try await fake.listFolderContinue(cursor: "not a cursor") }
        }

        @Test func nonDownloadableFilesCanBeHidden() async throws {
            let fake = smallTree()
            fake.addNonDownloadable("/Doc.paper", exportAs: "md")
            let shown = try await listAll(fake, ListFolderArg(path: "")).entries
            #expect(shown.map(describe).contains("file:/Doc.paper"))
            let hidden = try await listAll(fake, ListFolderArg(path: "", includeNonDownloadableFiles: false)).entries
            #expect(hidden.map(describe) == ["folder:/A", "file:/top.txt"])
        }

        @Test func recordsListFolderArguments() async throws {
            let fake = smallTree()
            _ = try await fake.listFolder(ListFolderArg(path: ""))
            _ = try await fake.listFolder(ListFolderArg(path: "/A", recursive: true))
            #expect(fake.listFolderPaths == ["", "/A"])
            #expect(fake.listFolderArgs.last?.recursive == true)
            fake.resetCalls()
            #expect(fake.listFolderPaths.isEmpty)
            #expect(fake.calls.isEmpty)
        }

        @Test func onlyRecentPagedListingsCanBeContinued() async throws {
            let fake = smallTree()
            let arg = ListFolderArg(path: "", recursive: true, limit: 1)
            let oldest = try await fake.listFolder(arg)
            for _ in 0..<256 { _ = try await fake.listFolder(arg) }
            let newest = try await fake.listFolder(arg)
            await #expect(throws: DropboxError.cursorReset) { try await fake.listFolderContinue(cursor: oldest.cursor) }
            #expect(try await continueAll(fake, from: newest.cursor).entries.count == fake.entryCount - 1)
        }

        @Test func hundredThousandEntriesListCompletely() async throws {
            let fake = InMemoryDropbox()
            for folder in 0..<100 {
                for file in 0..<999 {
                    fake.addFile("/d\(folder)/f\(file)", size: 0)
                }
            }
            #expect(fake.entryCount == 100_000)
            let drained = try await listAll(fake, ListFolderArg(path: "", recursive: true, limit: 2000))
            #expect(drained.entries.count == 100_000)
            #expect(Set(drained.entries.compactMap(\.pathLower)).count == 100_000)
            #expect(drained.pages.count == 50)
        }
    }
}
