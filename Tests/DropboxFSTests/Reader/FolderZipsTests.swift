// FolderZips against the in-memory Dropbox: which folders are worth a zip, members served once
// and only when they match the listing, every failure a fallback to downloads of single files,
// the memory bound, the time members are kept, and interrupted waiters.

import DropboxAPI
import DropboxTestSupport
import Synchronization
import Testing

@testable import DropboxFS

@Suite struct FolderZipsTests {
    /// A folder of `count` small files on the fake, and the plan the tree would make of it.
    static func folder(
        _ fake: InMemoryDropbox, _ path: String = "/Docs", count: Int = 6, size: UInt64 = 3000
    ) -> FolderZipPlan {
        _ = fake.addFolder(path)
        // The tree's index of the folder: any number, one per path.
        let index = path.unicodeScalars.reduce(UInt32(7)) { $0 &* 31 &+ $1.value }
        var plan = FolderZipPlan(folder: index, path: path, entries: 1 + count, totalBytes: 0, files: [])
        for i in 0..<count {
            let file = fake.addFile("\(path)/file \(i).txt", size: size + UInt64(i), seed: UInt64(100 + i))
            plan.totalBytes += file.size
            plan.files.append(("file \(i).txt", pinned(file, inode: UInt64(10 + i))))
        }
        return plan
    }

    static func pinned(_ file: FileMetadata, inode: UInt64) -> PinnedFile {
        PinnedFile(
            inode: inode, path: file.pathDisplay ?? file.name, rev: file.rev, size: file.size, contentHash: file.contentHash)
    }

    final class Clock: Sendable {
        let seconds = Mutex(100.0)
        func now() -> Double { seconds.withLock { $0 } }
        func advance(_ by: Double) { seconds.withLock { $0 += by } }
    }

    static func zips(_ route: any FolderZipRoute, clock: Clock = Clock(), memory: UInt64 = 48 << 20) -> FolderZips {
        FolderZips(
            options: FolderZipOptions(route: route, memory: memory, keep: 30), smallFileLimit: 1 << 20,
            now: { clock.now() })
    }

    static func whole(_ file: PinnedFile) -> Range<UInt64> { 0..<file.size }

    @Test func aFolderIsOneRequestAndEachMemberIsServedOnce() async throws {
        let fake = InMemoryDropbox()
        let plan = Self.folder(fake)
        let zips = Self.zips(fake)
        let wanted = try #require(zips.wanted(plan, held: { _ in false }))
        #expect(wanted.count == 6)
        #expect(zips.fetch(plan, wanted: wanted))
        #expect(!zips.fetch(plan, wanted: wanted), "a folder is not asked for twice within its time")
        for (name, file) in plan.files {
            let bytes = try await zips.bytes(of: file, range: Self.whole(file))
            #expect(bytes == fake.contents(of: "/Docs/" + name), "\(name)")
            #expect(try await zips.bytes(of: file, range: Self.whole(file)) == nil, "served once, then forgotten")
        }
        #expect(fake.callCount(.downloadZip) == 1)
        #expect(fake.callCount(.download) == 0)
        #expect(zips.statusFields == "zip_folders=1 zip_files=6 zip_failures=0 zip_pauses=0")
    }

    @Test func aPartOfAMemberIsServedAndTheMemberKept() async throws {
        let fake = InMemoryDropbox()
        let plan = Self.folder(fake, count: 4)
        let zips = Self.zips(fake)
        zips.fetch(plan, wanted: try #require(zips.wanted(plan, held: { _ in false })))
        let file = plan.files[2].file
        let all = try #require(fake.contents(of: "/Docs/file 2.txt"))
        #expect(try await zips.bytes(of: file, range: 100..<200) == Array(all[100..<200]))
        #expect(try await zips.bytes(of: file, range: Self.whole(file)) == all)
    }

    @Test(arguments: [
        ("too few files", 3, UInt64(3000), 0),
        ("files over the small-file limit", 6, UInt64(2 << 20), 0),
        ("the folder's bytes over the bound", 6, UInt64(900_000), 0),
        ("most of its bytes held already", 8, UInt64(3000), 5),
    ])
    func aFolderNotWorthAZipIsNotAskedFor(_ why: String, count: Int, size: UInt64, held: Int) throws {
        let fake = InMemoryDropbox()
        let plan = Self.folder(fake, count: count, size: size)
        let zips = FolderZips(
            options: FolderZipOptions(route: fake, maxFolderBytes: 4 << 20), smallFileLimit: 1 << 20, now: { 0 })
        let heldRevs = Set(plan.files.prefix(held).map(\.file.rev))
        #expect(zips.wanted(plan, held: { heldRevs.contains($0.rev) }) == nil, "\(why)")
    }

    @Test func aMemberThatDiffersFromTheListingIsNotServed() async throws {
        let fake = InMemoryDropbox()
        let plan = Self.folder(fake)
        // Changed on Dropbox after the tree listed it: the zip holds the new bytes.
        _ = fake.modifyFile("/Docs/file 1.txt", contents: Array("new bytes".utf8))
        let zips = Self.zips(fake)
        zips.fetch(plan, wanted: try #require(zips.wanted(plan, held: { _ in false })))
        #expect(try await zips.bytes(of: plan.files[1].file, range: Self.whole(plan.files[1].file)) == nil)
        #expect(try await zips.bytes(of: plan.files[0].file, range: Self.whole(plan.files[0].file)) != nil)
    }

    @Test func aMemberMatchesByItsNameCaseFolded() throws {
        let fake = InMemoryDropbox()
        var plan = Self.folder(fake, count: 4)
        plan.files[0].name = "FILE 0.TXT"
        let archive = try ZipArchive(
            ZipWriter.archive(
                plan.files.enumerated().map { i, entry in
                    ZipWriter.Entry(name: "Docs/file \(i).txt", bytes: fake.contents(of: "/Docs/file \(i).txt"))
                }))
        let found = FolderZips.members(of: archive, wanted: plan.files, folder: "/Docs")
        #expect(Set(found.keys) == Set(plan.files.map(\.file.rev)))
    }

    @Test(arguments: [
        ("a server error", DropboxError.serverError(status: 503), false),
        ("a folder too large", DropboxError.routeError(summary: "too_large/"), false),
        ("the route refused", DropboxError.badRequest(message: "Unknown API function"), true),
    ])
    func aFailedZipIsAFallbackToSingleDownloads(_ why: String, error: DropboxError, disables: Bool) async throws {
        let fake = InMemoryDropbox()
        let plan = Self.folder(fake)
        let other = Self.folder(fake, "/Other")
        let faulty = FaultInjectingClient(fake)
        faulty.failNext(.downloadZip, with: error)
        let zips = Self.zips(faulty)
        zips.fetch(plan, wanted: try #require(zips.wanted(plan, held: { _ in false })))
        for (_, file) in plan.files {
            #expect(try await zips.bytes(of: file, range: Self.whole(file)) == nil, "\(why)")
        }
        #expect(zips.statusFields.contains("zip_failures=1"))
        // The route refused: no more zips in this mount; otherwise the next folder is asked for.
        let wanted = try #require(zips.wanted(other, held: { _ in false }))
        #expect(zips.fetch(other, wanted: wanted) == !disables, "\(why)")
        #expect(zips.mayAsk(other.folder + 1) == !disables)
    }

    @Test func aDamagedZipIsAFallback() async throws {
        final class Damaging: FolderZipRoute {
            let base: InMemoryDropbox
            init(_ base: InMemoryDropbox) { self.base = base }
            func downloadZip(path: String, maxBytes: Int) async throws(DropboxError) -> [UInt8] {
                let zip = try await base.downloadZip(path: path, maxBytes: maxBytes)
                return Array(zip.prefix(zip.count - 30))  // the end of the central directory cut off
            }
        }
        let fake = InMemoryDropbox()
        let plan = Self.folder(fake)
        let zips = Self.zips(Damaging(fake))
        zips.fetch(plan, wanted: try #require(zips.wanted(plan, held: { _ in false })))
        #expect(try await zips.bytes(of: plan.files[0].file, range: Self.whole(plan.files[0].file)) == nil)
        #expect(zips.statusFields.contains("zip_failures=1"))
    }

    @Test func membersBeyondTheMemoryBoundAreNotAskedFor() throws {
        let fake = InMemoryDropbox()
        let first = Self.folder(fake, "/A", count: 6, size: 5000)
        let second = Self.folder(fake, "/B", count: 6, size: 5000)
        let faulty = FaultInjectingClient(fake)
        faulty.hold(.downloadZip)
        defer { faulty.release(.downloadZip) }
        let zips = Self.zips(faulty, memory: first.totalBytes + 100)
        #expect(zips.fetch(first, wanted: try #require(zips.wanted(first, held: { _ in false }))))
        #expect(!zips.fetch(second, wanted: try #require(zips.wanted(second, held: { _ in false }))), "over the bound")
    }

    @Test func membersNotReadInTimeAreDropped() async throws {
        let fake = InMemoryDropbox()
        let plan = Self.folder(fake)
        let other = Self.folder(fake, "/Other")
        let clock = Clock()
        let zips = Self.zips(fake, clock: clock)
        zips.fetch(plan, wanted: try #require(zips.wanted(plan, held: { _ in false })))
        #expect(try await zips.bytes(of: plan.files[0].file, range: 0..<10) != nil, "arrived")
        clock.advance(31)
        // The next zip asked for sweeps what was kept past its time.
        zips.fetch(other, wanted: try #require(zips.wanted(other, held: { _ in false })))
        #expect(try await zips.bytes(of: plan.files[1].file, range: Self.whole(plan.files[1].file)) == nil)
    }

    @Test func anInterruptedWaiterStopsAtOnce() async throws {
        let fake = InMemoryDropbox()
        let plan = Self.folder(fake)
        let faulty = FaultInjectingClient(fake)
        faulty.hold(.downloadZip)
        defer { faulty.release(.downloadZip) }
        let zips = Self.zips(faulty)
        zips.fetch(plan, wanted: try #require(zips.wanted(plan, held: { _ in false })))
        let file = plan.files[0].file
        let waiter = Task { () -> FilesystemError? in
            do throws(FilesystemError) {
                _ = try await zips.bytes(of: file, range: 0..<file.size)
                return nil
            } catch {
                return error
            }
        }
        while faulty.callCount(.downloadZip) == 0 { await Task.yield() }
        waiter.cancel()
        #expect(await waiter.value == .interrupted)
    }

    /// Zips that answer much later than single downloads pause for a while (a walk would wait for
    /// them), then one is tried again; zips about as fast as a download go on.
    @Test func zipsSlowerThanDownloadsPause() async throws {
        let fake = InMemoryDropbox()
        let slow = FaultInjectingClient(fake)
        let clock = Clock()
        let zips = Self.zips(slow, clock: clock)
        zips.noteDownload(seconds: 0.03)
        // The clock moves while the zip is held on its way: it took 0.5 s.
        slow.hold(.downloadZip)
        let first = Self.folder(fake, "/First")
        zips.fetch(first, wanted: try #require(zips.wanted(first, held: { _ in false })))
        clock.advance(0.5)
        slow.release(.downloadZip)
        _ = try await zips.bytes(of: first.files[0].file, range: Self.whole(first.files[0].file))
        #expect(zips.statusFields.hasSuffix("zip_pauses=1"))
        let second = Self.folder(fake, "/Second")
        #expect(!zips.mayAsk(second.folder), "paused")
        #expect(!zips.fetch(second, wanted: try #require(zips.wanted(second, held: { _ in false }))))
        clock.advance(FolderZips.pause)
        #expect(zips.mayAsk(second.folder), "tried again after the pause")

        // 30 files: the read-ahead would fetch them in one round of downloads.
        #expect(!FolderZips.slower(zip: 0.08, files: 30, download: 0.03), "about two downloads' time: zips go on")
        #expect(FolderZips.slower(zip: 0.15, files: 30, download: 0.03))
        // 500 files take 11 rounds of 48 downloads: a zip may take 12 downloads' time.
        #expect(!FolderZips.slower(zip: 0.4, files: 500, download: 0.03))
        #expect(FolderZips.slower(zip: 0.45, files: 500, download: 0.03))
    }

    /// A zip not there when single downloads would have had its files is waited for no longer:
    /// its files are downloaded alone (nil), and zips pause.
    @Test func anOverdueZipIsNotWaitedForAndPausesZips() async throws {
        let fake = InMemoryDropbox()
        let held = FaultInjectingClient(fake)
        held.hold(.downloadZip)
        defer { held.release(.downloadZip) }
        let zips = Self.zips(held)
        zips.noteDownload(seconds: 0.01)  // patience: two downloads and 0.05 s, 0.07 s
        let plan = Self.folder(fake)
        zips.fetch(plan, wanted: try #require(zips.wanted(plan, held: { _ in false })))
        #expect(try await zips.bytes(of: plan.files[0].file, range: Self.whole(plan.files[0].file)) == nil)
        #expect(zips.statusFields.hasSuffix("zip_pauses=1"))
        #expect(!zips.mayAsk(plan.folder &+ 1))
    }

    /// The read-ahead weighs a folder once within its time, whatever it decided: a walk's every
    /// open through a folder not worth a zip would otherwise walk its entries again.
    @Test func aFolderIsWeighedOnceWithinItsTime() {
        let clock = Clock()
        let zips = Self.zips(InMemoryDropbox(), clock: clock)
        #expect(zips.consider(7))
        #expect(!zips.consider(7))
        #expect(zips.consider(8), "another folder")
        clock.advance(30)
        #expect(zips.consider(7))
    }
}
