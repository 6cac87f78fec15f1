// Tests of how InMemoryDropbox builds entries: paths and case, ids, revs, content hashes, parents.

import DropboxAPI
import DropboxTestSupport
import Foundation
import Testing

extension TestSupportTests {
    @Suite struct InMemoryDropboxBuildingTests {
        @Test func fileFieldsFollowTheService() throws {
            let fake = InMemoryDropbox()
            let decomposed = "/Photos/Cafe\u{301}.JPG"
            let file = fake.addFile(decomposed, contents: [1, 2, 3])
            #expect(file.name == "Cafe\u{301}.JPG")
            #expect(file.pathDisplay == decomposed)
            #expect(file.pathLower == "/photos/caf\u{E9}.jpg")
            #expect(file.pathLower?.unicodeScalars.contains("\u{301}") == false)
            #expect(file.id.hasPrefix("id:"))
            #expect(file.rev.count >= 9)
            #expect(file.rev.allSatisfy { "0123456789abcdef".contains($0) })
            #expect(file.size == 3)
            #expect(file.isDownloadable)
            #expect(file.serverModified < DropboxTimestamp(secondsSinceEpoch: Int64(Date().timeIntervalSince1970)))
        }

        @Test func missingParentsBecomeFolders() throws {
            let fake = InMemoryDropbox()
            fake.addFile("/Docs/Work/plan.txt", size: 10)
            guard case .folder(let docs) = fake.entry("/docs"), case .folder(let work) = fake.entry("/DOCS/WORK") else {
                Issue.record("parents were not created as folders")
                return
            }
            #expect(docs.pathDisplay == "/Docs")
            #expect(work.pathDisplay == "/Docs/Work")
            #expect(docs.id != work.id)
            #expect(fake.entryCount == 3)
        }

        @Test func addingTheSamePathInAnotherCaseReplacesTheFile() throws {
            let fake = InMemoryDropbox()
            let first = fake.addFile("/a/b.txt", contents: [1])
            let second = fake.addFile("/A/B.txt", contents: [2, 2])
            #expect(fake.entryCount == 2)
            #expect(second.id == first.id)
            #expect(second.rev != first.rev)
            #expect(second.name == "B.txt")
            #expect(second.pathDisplay == "/a/B.txt")
            #expect(second.pathLower == "/a/b.txt")
            #expect(fake.contents(of: "/a/b.txt") == [2, 2])
        }

        @Test func aFileReplacesAFolderAndItsChildren() throws {
            let fake = InMemoryDropbox()
            let folder = fake.addFolder("/x")
            fake.addFile("/x/inner.txt", size: 4)
            let file = fake.addFile("/X", contents: [9])
            #expect(file.id != folder.id)
            #expect(fake.entry("/x/inner.txt") == nil)
            #expect(fake.entryCount == 1)
        }

        @Test func modifyKeepsIdAndChangesRevHashAndTime() throws {
            let fake = InMemoryDropbox()
            let before = fake.addFile("/f.txt", contents: Array("one".utf8))
            let after = fake.modifyFile("/F.TXT", contents: Array("two!".utf8))
            #expect(after.id == before.id)
            #expect(after.rev != before.rev)
            #expect(after.contentHash != before.contentHash)
            #expect(after.serverModified > before.serverModified)
            #expect(after.size == 4)
            #expect(fake.entry("/f.txt") == .file(after))
        }

        @Test func idsAreUniqueAndStable() throws {
            let fake = InMemoryDropbox()
            let ids = (0..<50).map { fake.addFile("/f\($0)", size: 1).id }
            #expect(Set(ids).count == 50)
            #expect(fake.entry("/f7")?.id == ids[7])
        }

        @Test(arguments: [
            (0, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"),
            (1, "1cd6ef71e6e0ff46ad2609d403dc3fee244417089aa4461245a4e4fe23a55e42"),
            (4_194_304, "d4d63bac5b866c71620185392a8a6218ac1092454a2d16f820363b69852befa3"),
            (4_194_305, "8f553da8d00d0bf509d8470e242888be33019c20c0544811f5b2b89e98360b92"),
        ])
        func contentHashMatchesDropboxVectors(count: Int, hex: String) throws {
            let fake = InMemoryDropbox()
            let file = fake.addFile("/a", contents: [UInt8](repeating: UInt8(ascii: "A"), count: count))
            #expect(file.contentHash?.hex == hex)
        }

        @Test func generatedContentIsDeterministicPerPathAndHashed() async throws {
            let one = InMemoryDropbox()
            let two = InMemoryDropbox()
            let a = one.addFile("/a.bin", size: 1000)
            let same = two.addFile("/a.bin", size: 1000)
            let other = one.addFile("/b.bin", size: 1000)
            #expect(a.contentHash == same.contentHash)
            #expect(a.contentHash != other.contentHash)
            let bytes = try #require(one.contents(of: "/a.bin"))
            #expect(bytes.count == 1000)
            #expect(bytes == two.contents(of: "/a.bin"))
            let check = InMemoryDropbox().addFile("/check", contents: bytes)
            #expect(check.contentHash == a.contentHash)
        }

        @Test func symlinksAndExportOnlyFiles() throws {
            let fake = InMemoryDropbox()
            let link = fake.addSymlink("/link", target: "/elsewhere/file")
            #expect(link.symlinkTarget == "/elsewhere/file")
            let paper = fake.addNonDownloadable("/Notes.paper", exportAs: "html", size: 42)
            #expect(!paper.isDownloadable)
            #expect(paper.exportAs == "html")
            #expect(paper.contentHash == nil)
            #expect(paper.size == 42)
        }
    }
}
