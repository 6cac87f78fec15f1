// Tests of the on-disk content cache: a file read once is served from disk after a "remount" (a new
// Filesystem on the same folder) with no download; entries are named by content_hash with private
// modes; damaged or truncated entries are detected and downloaded again; temporary files of dead
// processes are cleaned; the size cap evicts least recently used entries.

import Dispatch
import DropboxAPI
@testable import DropboxFS
import DropboxTestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

private let K = 1 << 10
private let M = 1 << 20

@Suite struct ReaderDiskCacheTests {
    @Test func aFileReadOnceIsServedFromDiskAfterARemount() async throws {
        let folder = try TemporaryFolder()
        let fake = InMemoryDropbox()
        let file = fake.addFile("/docs/report.pdf", size: UInt64(9 * M + 17), seed: 1)
        let options = ReaderOptions(diskCache: DiskCacheOptions(directory: folder.path + "/cache/content", capacity: UInt64(64 * M)))
        let first = ReaderFixture(options: options, fake: fake)
        #expect(try await first.readAll("/docs/report.pdf") == fake.contents(of: "/docs/report.pdf"))
        first.fs.finishDiskCacheWrites()

        let name = try #require(file.contentHash).hex
        let entry = folder.path + "/cache/content/" + name
        #expect(try folder.items("cache/content") == [name])
        #expect(try mode(of: entry) == 0o600)
        #expect(try mode(of: folder.path + "/cache/content") == 0o700)
        #expect(try mode(of: folder.path + "/cache") == 0o700)

        let second = ReaderFixture(options: options, fake: fake)
        #expect(try await second.readAll("/docs/report.pdf") == fake.contents(of: "/docs/report.pdf"))
        #expect(second.recorder.ranges.isEmpty)
        // A reopen in the same mount, at any offset, does not download either.
        let opened = try await second.open("/docs/report.pdf")
        _ = try await second.fs.read(handle: opened.handle, offset: UInt64(5 * M), size: 4 * K)
        #expect(second.recorder.ranges.isEmpty)
    }

    /// Reading many files one after another keeps no cache file open once each is closed and
    /// written: a long-running mount must not hold a descriptor per file it ever read.
    @Test func closedFilesKeepNoCacheFileOpen() async throws {
        let folder = try TemporaryFolder()
        let fake = InMemoryDropbox()
        for i in 0..<60 { fake.addFile("/many/f\(i).bin", size: UInt64(3 * K + i), seed: UInt64(100 + i)) }
        let options = ReaderOptions(diskCache: DiskCacheOptions(directory: folder.path, capacity: UInt64(64 * M)))
        let fixture = ReaderFixture(options: options, fake: fake)
        for i in 0..<60 {
            #expect(try await fixture.readAll("/many/f\(i).bin") == fake.contents(of: "/many/f\(i).bin"))
        }
        fixture.fs.finishDiskCacheWrites()
        #expect(try folder.items("").count == 60, "every file was cached")
        // Contents are what hold cache files open (counting the process's descriptors would race
        // with the tests running beside this one).
        #expect(fixture.fs.reader.state.withLock { $0.contents.count } == 0, "contents kept after closing every file")
        // Read again: from the disk, with no download.
        let downloads = fixture.recorder.ranges.count
        #expect(try await fixture.readAll("/many/f7.bin") == fake.contents(of: "/many/f7.bin"))
        #expect(fixture.recorder.ranges.count == downloads)
    }

    /// `head -c 4096` of big files: a closed file gives up its disk entry, which no read would
    /// finish, with its descriptor and the room it reserved, so a file read whole afterwards is
    /// still cached.
    @Test func aClosedPartlyReadFileGivesUpItsDiskEntry() async throws {
        let folder = try TemporaryFolder()
        let fake = InMemoryDropbox()
        for i in 0..<3 { fake.addFile("/head\(i).bin", size: UInt64(20 * M), seed: UInt64(30 + i)) }
        let whole = fake.addFile("/whole.bin", size: UInt64(20 * M), seed: 40)
        let options = ReaderOptions(diskCache: DiskCacheOptions(directory: folder.path, capacity: UInt64(64 * M)))
        let fixture = ReaderFixture(options: options, fake: fake)
        for i in 0..<3 {
            let opened = try await fixture.open("/head\(i).bin")
            _ = try await fixture.fs.read(handle: opened.handle, offset: 0, size: 4 * K)
            fixture.fs.releaseFile(handle: opened.handle)
        }
        fixture.fs.finishDiskCacheWrites()
        try await Task.sleep(for: .milliseconds(200))
        fixture.fs.finishDiskCacheWrites()
        let partials = fixture.fs.reader.state.withLock { s in
            s.contents.values.filter { if case .partial = $0.disk.state { return true } else { return false } }.count
        }
        #expect(partials == 0, "closed files still hold a disk entry (and its descriptor) open")
        #expect(fixture.fs.reader.diskCache?.usedBytes == 0, "closed, unfinished entries keep their room reserved")
        #expect(try await fixture.readAll("/whole.bin") == fake.contents(of: "/whole.bin"))
        fixture.fs.finishDiskCacheWrites()
        #expect(try folder.items().contains(try #require(whole.contentHash).hex), "a file read whole was not cached")
    }

    @Test func aSameContentUnderAnotherNameSharesTheEntry() async throws {
        let folder = try TemporaryFolder()
        let fake = InMemoryDropbox()
        fake.addFile("/a/one.bin", size: UInt64(2 * M), seed: 9)
        fake.addFile("/b/two.bin", size: UInt64(2 * M), seed: 9)
        let options = ReaderOptions(diskCache: DiskCacheOptions(directory: folder.path, capacity: UInt64(64 * M)))
        let fixture = ReaderFixture(options: options, fake: fake)
        _ = try await fixture.readAll("/a/one.bin")
        #expect(try await fixture.readAll("/b/two.bin") == fake.contents(of: "/b/two.bin"))
        #expect(fixture.recorder.ranges.reduce(0) { $0 + $1.length } == 2 * UInt64(M))
    }

    @Test func aDamagedEntryIsDetectedAndDownloadedAgain() async throws {
        let folder = try TemporaryFolder()
        let fake = InMemoryDropbox()
        let file = fake.addFile("/damaged/photo.jpg", size: UInt64(5 * M), seed: 2)
        let options = ReaderOptions(diskCache: DiskCacheOptions(directory: folder.path, capacity: UInt64(64 * M)))
        let first = ReaderFixture(options: options, fake: fake)
        _ = try await first.readAll("/damaged/photo.jpg")
        first.fs.finishDiskCacheWrites()
        let entry = folder.path + "/" + (try #require(file.contentHash).hex)
        try overwrite(entry, at: 4 * M, with: [0, 1, 2, 3])

        LogCapture.start()
        let remounted = ReaderFixture(options: options, fake: fake)
        #expect(try await remounted.readAll("/damaged/photo.jpg") == fake.contents(of: "/damaged/photo.jpg"))
        #expect(!remounted.recorder.ranges.isEmpty)
        remounted.fs.finishDiskCacheWrites()
        #expect(LogCapture.lines(containing: "/damaged/photo.jpg").contains { $0.contains("does not match") })
        // The new download replaced the entry with good bytes.
        let again = ReaderFixture(options: options, fake: fake)
        #expect(try await again.readAll("/damaged/photo.jpg") == fake.contents(of: "/damaged/photo.jpg"))
        #expect(again.recorder.ranges.isEmpty)
    }

    @Test func aTruncatedEntryIsNeverServed() async throws {
        let folder = try TemporaryFolder()
        let fake = InMemoryDropbox()
        let file = fake.addFile("/truncated.bin", size: UInt64(3 * M), seed: 3)
        let name = try #require(file.contentHash).hex
        let bytes = try #require(fake.contents(of: "/truncated.bin"))
        try folder.write(name, Array(bytes[0..<M]))
        let options = ReaderOptions(diskCache: DiskCacheOptions(directory: folder.path, capacity: UInt64(64 * M)))
        let fixture = ReaderFixture(options: options, fake: fake)
        #expect(try await fixture.readAll("/truncated.bin") == bytes)
        #expect(!fixture.recorder.ranges.isEmpty)
    }

    /// An entry that cannot be opened for a reason that says nothing of it (too many open files,
    /// no memory, no permission) is kept: that open reads from Dropbox and writes no new entry over
    /// it, and the next mount that can open it reads it without a download. Deleting it would throw
    /// good content away whenever the process ran short of descriptors.
    @Test(arguments: [EMFILE, ENFILE, ENOMEM, EACCES])
    func anEntryThatCannotBeOpenedForNowIsKept(code: Int32) async throws {
        let folder = try TemporaryFolder()
        let fake = InMemoryDropbox()
        let file = fake.addFile("/kept.bin", size: UInt64(3 * M), seed: 11)
        let options = ReaderOptions(diskCache: DiskCacheOptions(directory: folder.path, capacity: UInt64(64 * M)))
        let first = ReaderFixture(options: options, fake: fake)
        _ = try await first.readAll("/kept.bin")
        first.fs.finishDiskCacheWrites()
        let entry = folder.path + "/" + (try #require(file.contentHash).hex)
        // Held open, so a file written in its place cannot get its inode number.
        let written = open(entry, O_RDONLY)
        try #require(written >= 0)
        defer { close(written) }

        let busy = ReaderFixture(options: options, fake: fake)
        let cache = try #require(busy.fs.reader.diskCache)
        cache.openEntry.withLock { $0.call = { path in .failure(CacheIOError(operation: "open \(path)", code: code)) } }
        let opened = try await busy.open("/kept.bin")
        #expect(try isSameFile(entry, as: written), "the entry was deleted at open")
        busy.fs.releaseFile(handle: opened.handle)
        #expect(try await busy.readAll("/kept.bin") == fake.contents(of: "/kept.bin"))
        #expect(!busy.recorder.ranges.isEmpty, "read from Dropbox while the entry cannot be opened")
        busy.fs.finishDiskCacheWrites()
        #expect(try isSameFile(entry, as: written), "the entry was written again")

        let later = ReaderFixture(options: options, fake: fake)
        #expect(try await later.readAll("/kept.bin") == fake.contents(of: "/kept.bin"))
        #expect(later.recorder.ranges.isEmpty)
    }

    /// An entry opened again and again over a long uptime: the open goes through a replaceable
    /// function, which, held bare in a Mutex, grew two thunks per open until the stack overflowed
    /// (Support/StoredClosure.swift).
    @Test func anEntryOpenedAHundredThousandTimesStillOpens() throws {
        let folder = try TemporaryFolder()
        let key = String(repeating: "c", count: 64)
        try folder.write(key, [1, 2, 3])
        let queue = DispatchQueue(label: "disk")
        let cache = try #require(DiskCache.open(DiskCacheOptions(directory: folder.path, capacity: UInt64(M)), queue: queue))
        var hits = 0
        for _ in 0..<100_000 {
            if case .hit = queue.sync(execute: { cache.entry(key: key, size: 3) }) { hits += 1 }
        }
        #expect(hits == 100_000)
    }

    /// What does show an entry is bad drops it: a file gone from the folder, or one of another
    /// size, is forgotten (its room given back) and deleted.
    @Test func anEntryGoneOrOfAnotherSizeIsForgotten() throws {
        let folder = try TemporaryFolder()
        let short = String(repeating: "a", count: 64)
        let gone = String(repeating: "b", count: 64)
        try folder.write(short, [1, 2, 3])
        try folder.write(gone, [1, 2, 3])
        let queue = DispatchQueue(label: "disk")
        let cache = try #require(DiskCache.open(DiskCacheOptions(directory: folder.path, capacity: UInt64(M)), queue: queue))
        #expect(cache.usedBytes == 6)
        unlink(folder.path + "/" + gone)
        for (key, size) in [(short, 4), (gone, 3)] as [(String, UInt64)] {
            guard case .miss = queue.sync(execute: { cache.entry(key: key, size: size) }) else {
                Issue.record("\(key.prefix(1)): not a miss")
                continue
            }
        }
        queue.sync {}  // the deletions are queued there
        #expect(cache.usedBytes == 0)
        #expect(try folder.items().isEmpty)
        for code in [EMFILE, ENFILE, ENOMEM, EACCES, EPERM, EIO] { #expect(!DiskCache.showsEntryIsBad(code)) }
        for code in [ENOENT, EISDIR, ELOOP, ENXIO] { #expect(DiskCache.showsEntryIsBad(code)) }
    }

    @Test func temporaryFilesOfDeadProcessesAreDeleted() async throws {
        let folder = try TemporaryFolder()
        try folder.write(".partial-999999999-1", [1, 2, 3])
        try folder.write(".partial-1-7", [1, 2, 3])  // pid 1 always exists
        try folder.write("unrelated.txt", [1])
        _ = Filesystem(
            client: InMemoryDropbox(),
            options: FilesystemOptions(
                reader: ReaderOptions(diskCache: DiskCacheOptions(directory: folder.path, capacity: UInt64(M)))))
        #expect(try folder.items() == [".partial-1-7", "unrelated.txt"])
    }

    @Test func theCapEvictsTheLeastRecentlyUsedEntries() async throws {
        let folder = try TemporaryFolder()
        let fake = InMemoryDropbox()
        var names: [String: String] = [:]
        for (index, path) in ["/a", "/b", "/c", "/d"].enumerated() {
            names[path] = try #require(fake.addFile(path, size: UInt64(M), seed: UInt64(index + 1)).contentHash).hex
        }
        let options = ReaderOptions(diskCache: DiskCacheOptions(directory: folder.path, capacity: UInt64(3 * M + M / 2)))
        let fixture = ReaderFixture(options: options, fake: fake)
        for path in ["/a", "/b", "/c"] {
            _ = try await fixture.readAll(path)
            fixture.fs.finishDiskCacheWrites()
        }
        let openC = try await fixture.open("/c")
        for path in ["/b", "/a", "/d"] {
            _ = try await fixture.readAll(path)
            fixture.fs.finishDiskCacheWrites()
        }
        let expected = ["/a", "/b", "/d"].compactMap { names[$0] }.sorted()
        #expect(try folder.items() == expected)
        #expect(fixture.fs.reader.diskCache?.usedBytes == UInt64(3 * M))
        // An entry evicted while open keeps serving its open handle, without a download.
        let downloads = fixture.recorder.ranges.count
        let c = try await fixture.fs.read(handle: openC.handle, offset: 0, size: M)
        #expect(c == fake.contents(of: "/c"))
        #expect(fixture.recorder.ranges.count == downloads)
    }

    @Test func filesLargerThanTheCacheOrReadInTheMiddleAreNotCached() async throws {
        let folder = try TemporaryFolder()
        let fake = InMemoryDropbox()
        fake.addFile("/huge.bin", size: UInt64(12 * M), seed: 5)
        fake.addFile("/middle.bin", size: UInt64(9 * M), seed: 6)
        let options = ReaderOptions(diskCache: DiskCacheOptions(directory: folder.path, capacity: UInt64(10 * M)))
        let fixture = ReaderFixture(options: options, fake: fake)
        #expect(try await fixture.readAll("/huge.bin") == fake.contents(of: "/huge.bin"))
        let opened = try await fixture.open("/middle.bin")
        _ = try await fixture.fs.read(handle: opened.handle, offset: UInt64(4 * M), size: 4 * K)
        fixture.fs.releaseFile(handle: opened.handle)
        fixture.fs.finishDiskCacheWrites()
        #expect(try folder.items().isEmpty)
    }

    @Test func aFileThatFailsItsCheckIsNotCached() async throws {
        LogCapture.start()
        let folder = try TemporaryFolder()
        let fake = InMemoryDropbox()
        fake.addFile("/cache-bad.bin", size: UInt64(2 * M), seed: 7)
        let options = ReaderOptions(diskCache: DiskCacheOptions(directory: folder.path, capacity: UInt64(64 * M)))
        let fixture = ReaderFixture(options: options, fake: fake, corruptAt: 5)
        await #expect(throws: FilesystemError.self) { try await fixture.readAll("/cache-bad.bin") }
        fixture.fs.finishDiskCacheWrites()
        #expect(try folder.items().isEmpty)
    }
}

// MARK: - Helpers

/// A fresh folder under /tmp, deleted (with everything in it) when the value goes away.
final class TemporaryFolder: Sendable {
    let path: String

    init() throws {
        var template = Array("/tmp/dropboxfs-reader-XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { throw FolderError.failed("mkdtemp") }
        path = String(cString: made)
    }

    deinit {
        Self.remove(path)
    }

    /// Names in the folder (or a subfolder), sorted, without "." and "..".
    func items(_ subfolder: String = "") throws -> [String] {
        let target = subfolder.isEmpty ? path : path + "/" + subfolder
        guard let folder = opendir(target) else { throw FolderError.failed("opendir \(target)") }
        defer { closedir(folder) }
        var names: [String] = []
        while let entry = readdir(folder) {
            let name = withUnsafePointer(to: entry.pointee.d_name) {
                $0.withMemoryRebound(to: CChar.self, capacity: 256) { String(cString: $0) }
            }
            if name != ".", name != ".." { names.append(name) }
        }
        return names.sorted()
    }

    func write(_ name: String, _ bytes: [UInt8]) throws {
        let descriptor = open(path + "/" + name, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        guard descriptor >= 0 else { throw FolderError.failed("open \(name)") }
        defer { close(descriptor) }
        guard bytes.withUnsafeBytes({ Glibc.write(descriptor, $0.baseAddress, $0.count) }) == bytes.count else {
            throw FolderError.failed("write \(name)")
        }
    }

    private static func remove(_ path: String) {
        var info = stat()
        guard lstat(path, &info) == 0 else { return }
        if info.st_mode & S_IFMT == S_IFDIR, let folder = opendir(path) {
            var names: [String] = []
            while let entry = readdir(folder) {
                let name = withUnsafePointer(to: entry.pointee.d_name) {
                    $0.withMemoryRebound(to: CChar.self, capacity: 256) { String(cString: $0) }
                }
                if name != ".", name != ".." { names.append(name) }
            }
            closedir(folder)
            for name in names { remove(path + "/" + name) }
            rmdir(path)
        } else {
            unlink(path)
        }
    }
}

enum FolderError: Error {
    case failed(String)
}

func mode(of path: String) throws -> UInt32 {
    var info = stat()
    guard stat(path, &info) == 0 else { throw FolderError.failed("stat \(path)") }
    return info.st_mode & 0o777
}

/// Whether `path` names the file open as `descriptor` (false when nothing is there).
func isSameFile(_ path: String, as descriptor: Int32) throws -> Bool {
    var named = stat()
    var held = stat()
    guard fstat(descriptor, &held) == 0 else { throw FolderError.failed("fstat") }
    guard stat(path, &named) == 0 else { return false }
    return named.st_dev == held.st_dev && named.st_ino == held.st_ino
}

func overwrite(_ path: String, at offset: Int, with bytes: [UInt8]) throws {
    let descriptor = open(path, O_WRONLY)
    guard descriptor >= 0 else { throw FolderError.failed("open \(path)") }
    defer { close(descriptor) }
    guard bytes.withUnsafeBytes({ pwrite(descriptor, $0.baseAddress, $0.count, off_t(offset)) }) == bytes.count else {
        throw FolderError.failed("pwrite \(path)")
    }
}

