// Tests that a disk cache that stops answering never holds up the thread that opens files (the FUSE
// thread, which serves every request): an open that needs a disk cache entry says so without
// touching the disk and is finished from a task on the disk queue, which an interrupt stops waiting
// for; a FIFO or a symlink at an entry's name is refused at once and dropped.

import Dispatch
import DropboxAPI
@testable import DropboxFS
import DropboxTestSupport
import Synchronization
import Testing

#if canImport(Glibc)
    import Glibc
#endif

private let M = 1 << 20

@Suite struct ReaderDiskQueueTests {
    final class Counted: Sendable {
        static let alive = Synchronization.Atomic<Int>(0)
        init() { Self.alive.add(1, ordering: .relaxed) }
        deinit { Self.alive.subtract(1, ordering: .relaxed) }
    }

    /// A result handed to its waiter is not kept by the wait: the wait's timer lives on until its
    /// timeout, and a cache file kept that long held a descriptor per recent open (a long run of
    /// opens grew by thousands of descriptors).
    @Test func aDeliveredResultIsNotKeptUntilTheTimeout() async throws {
        let queue = DispatchQueue(label: "test.disk")
        for _ in 0..<50 {
            let got = try await DiskWork.run(on: queue, stall: DiskStall(), waitingAtMost: 3600) { Counted() }
            #expect(got != nil)
        }
        #expect(Counted.alive.load(ordering: .relaxed) == 0, "each result went with its waiter")
    }

    /// The disk queue held (as a disk that stopped answering holds it): the open of a file with a
    /// disk entry is not answered on the calling thread, its task stops waiting when cancelled, and
    /// once the disk answers again the same open reads from the entry without a download.
    @Test func anOpenThatNeedsTheDiskIsAnsweredLaterAndCanBeInterrupted() async throws {
        let folder = try TemporaryFolder()
        let fake = InMemoryDropbox()
        fake.addFile("/held.bin", size: UInt64(2 * M), seed: 3)
        fake.addFile("/other.bin", size: UInt64(M), seed: 4)
        let options = ReaderOptions(diskCache: DiskCacheOptions(directory: folder.path, capacity: UInt64(64 * M)))
        let first = ReaderFixture(options: options, fake: fake)
        _ = try await first.readAll("/held.bin")
        first.fs.finishDiskCacheWrites()

        let second = ReaderFixture(options: options, fake: fake)
        let held = try await second.inode("/held.bin")
        let other = try await second.inode("/other.bin")
        let release = DispatchSemaphore(value: 0)
        let holding = DispatchSemaphore(value: 0)
        second.fs.reader.diskQueue.async {
            holding.signal()
            release.wait()
        }
        holding.wait()
        // On the calling thread: no answer for the cached file, an answer at once for the other.
        #expect(try second.fs.openFileCached(held) == nil)
        let opened = try #require(try second.fs.openFileCached(other))
        second.fs.releaseFile(handle: opened.handle)  // its unfinished entry's deletion is queued

        let fs = second.fs
        let waiting = Task { try await fs.openFile(held) }
        waiting.cancel()
        await #expect(throws: FilesystemError.interrupted) { try await waiting.value }

        release.signal()
        let reopened = try await second.fs.openFile(held)
        let bytes = try await second.fs.read(handle: reopened.handle, offset: 0, size: 2 * M)
        #expect(bytes == fake.contents(of: "/held.bin"))
        #expect(second.recorder.ranges.isEmpty, "read from the disk entry")
    }

    /// A disk that does not answer within `diskWait`: the open reads from Dropbox, the queue counts
    /// as stalled (later opens and reads do not wait for it at all) until the stuck call returns.
    @Test func aDiskThatDoesNotAnswerIsWaitedForOnceThenGoneWithout() async throws {
        let folder = try TemporaryFolder()
        let fake = InMemoryDropbox()
        fake.addFile("/stuck.bin", size: UInt64(M), seed: 5)
        fake.addFile("/fresh.bin", size: UInt64(M), seed: 6)
        let options = ReaderOptions(diskCache: DiskCacheOptions(directory: folder.path, capacity: UInt64(64 * M)))
        let first = ReaderFixture(options: options, fake: fake)
        _ = try await first.readAll("/stuck.bin")
        first.fs.finishDiskCacheWrites()

        let second = ReaderFixture(options: options, fake: fake)
        let stuck = try await second.inode("/stuck.bin")
        let release = DispatchSemaphore(value: 0)
        second.fs.reader.diskQueue.async { release.wait() }
        let started = ContinuousClock.now
        let opened = try await second.fs.openFile(stuck)
        // Without the bound on the wait the open would never end; 20 s leaves room for a loaded machine.
        #expect(ContinuousClock.now - started < .seconds(FileReader.diskWait + 20))
        #expect(second.fs.reader.diskStall.isStalled)
        #expect(second.fs.reader.diskStall.bypassCount == 1, "the file read past the disk is counted")
        #expect(try await second.fs.read(handle: opened.handle, offset: 0, size: M) == fake.contents(of: "/stuck.bin"))
        #expect(!second.recorder.ranges.isEmpty, "read from Dropbox")
        // Stalled: another open answers on the calling thread, and a new content is not cached.
        let again = try #require(try second.fs.openFileCached(stuck))
        second.fs.releaseFile(handle: again.handle)
        #expect(try await second.readAll("/fresh.bin") == fake.contents(of: "/fresh.bin"))
        #expect(second.fs.reader.diskStall.bypassCount == 2, "the other open did not count; the new content did, once")
        #expect(second.fs.syncStatus().split(separator: " ").contains("disk_bypassed=2"))

        release.signal()
        second.fs.finishDiskCacheWrites()
        #expect(!second.fs.reader.diskStall.isStalled)
        second.fs.releaseFile(handle: opened.handle)
    }

    /// A FIFO (no writer) or a symlink put at a known entry's name is refused at once, as an entry
    /// that is bad: the open does not wait, the entry is forgotten and the name deleted.
    @Test func aFifoOrASymlinkAtAnEntryIsRefusedAtOnce() throws {
        let folder = try TemporaryFolder()
        let fifo = String(repeating: "d", count: 64)
        let link = String(repeating: "e", count: 64)
        let target = String(repeating: "f", count: 64)
        for name in [fifo, link, target] { try folder.write(name, [1, 2, 3]) }
        let queue = DispatchQueue(label: "disk")
        let cache = try #require(DiskCache.open(DiskCacheOptions(directory: folder.path, capacity: UInt64(M)), queue: queue))
        #expect(cache.usedBytes == 9)
        unlink(folder.path + "/" + fifo)
        unlink(folder.path + "/" + link)
        #expect(mkfifo(folder.path + "/" + fifo, 0o600) == 0)
        #expect(symlink(folder.path + "/" + target, folder.path + "/" + link) == 0)
        for key in [fifo, link] {
            guard case .failure(let error) = CacheFolder.openForReading(folder.path + "/" + key) else {
                Issue.record("\(key.prefix(1)): opened")
                continue
            }
            #expect(DiskCache.showsEntryIsBad(error.code), "\(error)")
            guard case .miss = queue.sync(execute: { cache.entry(key: key, size: 3) }) else {
                Issue.record("\(key.prefix(1)): served as an entry")
                continue
            }
        }
        queue.sync {}  // the deletions are queued there
        #expect(try folder.items() == [target])
        #expect(cache.usedBytes == 3)
        guard case .hit = queue.sync(execute: { cache.entry(key: target, size: 3) }) else {
            Issue.record("the regular entry was not served")
            return
        }
    }
}
