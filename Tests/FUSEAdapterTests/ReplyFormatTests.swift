// The kernel formats the thin FUSE layer builds from core values, checked without a kernel: `struct
// stat` and `statvfs` (StatConversion), the entry parameters of a lookup, the packed entries of a
// readdir and readdirplus piece (DirectoryBuffer, through libfuse's own packing functions: sizes,
// 8-byte alignment, offsets, inode 0 for "." and ".."), the xattr reply protocol and the open flags.

import CFuse
import Testing

@testable import DropboxFS
@testable import FUSEAdapter

#if canImport(Glibc)
    import Glibc
#endif

@Suite struct ReplyFormatTests {
    static let timeouts = CacheTimeouts(entry: 3.5, attributes: 2.25, negative: 1)

    static func attributes(
        _ inode: UInt64, kind: NodeKind = .file, size: UInt64 = 12, nanoseconds: UInt32 = 0
    ) -> FileAttributes {
        FileAttributes(
            inode: inode, generation: 7, kind: kind, permissions: kind == .folder ? 0o555 : 0o444,
            linkCount: kind == .folder ? 2 : 1, uid: 1000, gid: 1001, size: size, blocks: size / 512 + (size % 512 == 0 ? 0 : 1),
            blockSize: 4096, atime: 1_700_000_000, mtime: 1_700_000_001, ctime: 1_700_000_002,
            timeNanoseconds: nanoseconds)
    }

    // MARK: - stat

    @Test(arguments: [(NodeKind.file, 0o100444 as UInt32), (.folder, 0o040555), (.symlink, 0o120444)])
    func statCarriesTypeAndPermissionBits(kind: NodeKind, mode: UInt32) {
        let st = StatConversion.stat(Self.attributes(42, kind: kind))
        #expect(st.st_mode == mode)
        #expect(st.st_mode & S_IFMT == (kind == .file ? S_IFREG : kind == .folder ? S_IFDIR : S_IFLNK))
    }

    @Test func statCarriesEveryField() {
        let st = StatConversion.stat(Self.attributes(42, kind: .folder, size: 1025, nanoseconds: 17))
        #expect(st.st_ino == 42)
        #expect(st.st_nlink == 2)
        #expect(st.st_uid == 1000 && st.st_gid == 1001)
        #expect(st.st_size == 1025)
        #expect(st.st_blocks == 3)
        #expect(st.st_blksize == 4096)
        #expect(st.st_atim.tv_sec == 1_700_000_000 && st.st_mtim.tv_sec == 1_700_000_001 && st.st_ctim.tv_sec == 1_700_000_002)
        // A folder's nanoseconds count its changes, on all three times.
        #expect(st.st_atim.tv_nsec == 17 && st.st_mtim.tv_nsec == 17 && st.st_ctim.tv_nsec == 17)
    }

    @Test func hugeSizesAreClamped() {
        var huge = Self.attributes(42, size: UInt64.max)
        huge.blocks = UInt64.max
        let st = StatConversion.stat(huge)
        #expect(st.st_size == Int.max)
        #expect(st.st_blocks == Int.max)
    }

    @Test func entryCarriesInodeGenerationAndTimeouts() {
        let param = StatConversion.entry(Self.attributes(42), timeouts: Self.timeouts)
        #expect(param.ino == 42)
        #expect(param.generation == 7)
        #expect(param.entry_timeout == 3.5)
        #expect(param.attr_timeout == 2.25)
        #expect(param.attr.st_ino == 42)
    }

    @Test func statvfsCarriesTheAccountsNumbers() {
        let stats = FilesystemStats(blockSize: 4096, totalBlocks: 1000, freeBlocks: 250, files: 77, maxNameLength: 255)
        let st = StatConversion.statvfs(stats)
        #expect(st.f_bsize == 4096 && st.f_frsize == 4096)
        #expect(st.f_blocks == 1000 && st.f_bfree == 250 && st.f_bavail == 250)
        #expect(st.f_files == 77 && st.f_ffree == 0 && st.f_favail == 0)
        #expect(st.f_namemax == 255)
    }

    // MARK: - directory entries

    /// One packed entry as the kernel reads it (include/uapi/linux/fuse.h).
    struct Packed: Equatable {
        var nodeid: UInt64?  // readdirplus only
        var entryValid: UInt64?
        var ino: UInt64
        var offset: UInt64
        var type: UInt32
        var name: String
        var length: Int
    }

    /// Reads back packed entries: fuse_direntplus is a fuse_entry_out (128 bytes) and a fuse_dirent
    /// (ino, off, namelen, type, then the name), each padded to 8 bytes.
    static func unpack(_ bytes: [UInt8], plus: Bool) -> [Packed] {
        func u64(_ at: Int) -> UInt64 { (0..<8).reduce(0) { $0 | UInt64(bytes[at + $1]) << (8 * $1) } }
        func u32(_ at: Int) -> UInt32 { (0..<4).reduce(0) { $0 | UInt32(bytes[at + $1]) << (8 * $1) } }
        var result: [Packed] = []
        var at = 0
        while at < bytes.count {
            let dirent = plus ? at + 128 : at
            let namelen = Int(u32(dirent + 16))
            let length = (dirent + 24 + namelen - at + 7) / 8 * 8
            result.append(
                Packed(
                    nodeid: plus ? u64(at) : nil, entryValid: plus ? u64(at + 16) : nil, ino: u64(dirent),
                    offset: u64(dirent + 8), type: u32(dirent + 20),
                    name: String(decoding: bytes[(dirent + 24)..<(dirent + 24 + namelen)], as: UTF8.self), length: length))
            at += length
        }
        return result
    }

    static let listing: [(DirectoryEntry, UInt64)] = [
        (DirectoryEntry(name: ".", attributes: attributes(5, kind: .folder)), 1),
        (DirectoryEntry(name: "..", attributes: attributes(1, kind: .folder)), 2),
        (DirectoryEntry(name: "a.txt", attributes: attributes(9)), (9 << 32) | 3),
        (DirectoryEntry(name: "sixteen-bytes.md", attributes: attributes(10)), (10 << 32) | 4),
    ]

    @Test func readdirplusEntriesArePackedWithTheirAttributes() {
        var piece = DirectoryBuffer(size: 4096, plus: true, timeouts: Self.timeouts)
        for (entry, next) in Self.listing {
            let fitted = piece.add(entry, nextOffset: next)
            #expect(fitted)
        }
        let packed = Self.unpack(piece.bytes, plus: true)
        #expect(packed.map(\.name) == [".", "..", "a.txt", "sixteen-bytes.md"])
        #expect(packed.map(\.offset) == Self.listing.map(\.1))
        // "." and ".." carry node id 0, so the kernel counts no lookup for them.
        #expect(packed.map(\.nodeid) == [0, 0, 9, 10])
        #expect(packed.map(\.ino) == [5, 1, 9, 10])
        #expect(packed.map(\.type) == [UInt32(DT_DIR), UInt32(DT_DIR), UInt32(DT_REG), UInt32(DT_REG)])
        #expect(packed[2].entryValid == 3)
        // 152 bytes before the name, padded to 8.
        #expect(packed.map(\.length) == [160, 160, 160, 168])
        #expect(piece.used == 648)
    }

    @Test func readdirEntriesArePackedWithoutAttributes() {
        var piece = DirectoryBuffer(size: 4096, plus: false, timeouts: Self.timeouts)
        for (entry, next) in Self.listing {
            let fitted = piece.add(entry, nextOffset: next)
            #expect(fitted)
        }
        let packed = Self.unpack(piece.bytes, plus: false)
        #expect(packed.map(\.name) == [".", "..", "a.txt", "sixteen-bytes.md"])
        #expect(packed.map(\.ino) == [5, 1, 9, 10])
        #expect(packed.map(\.offset) == Self.listing.map(\.1))
        #expect(packed.map(\.length) == [32, 32, 32, 40])
    }

    @Test func anEntryThatDoesNotFitIsRefusedWhole() {
        // Room for two readdirplus entries and most of a third.
        var piece = DirectoryBuffer(size: 2 * 160 + 150, plus: true, timeouts: Self.timeouts)
        let fitted = (0..<3).map { piece.add(Self.listing[$0].0, nextOffset: Self.listing[$0].1) }
        #expect(fitted == [true, true, false])
        #expect(piece.used == 320)
        #expect(Self.unpack(piece.bytes, plus: true).map(\.name) == [".", ".."])

        var exact = DirectoryBuffer(size: 32, plus: false, timeouts: Self.timeouts)
        let exactly = [exact.add(Self.listing[2].0, nextOffset: 3), exact.add(Self.listing[0].0, nextOffset: 1)]
        #expect(exactly == [true, false])
        #expect(exact.bytes.count == 32)

        var tiny = DirectoryBuffer(size: 0, plus: false, timeouts: Self.timeouts)
        let none = tiny.add(Self.listing[0].0, nextOffset: 1)
        #expect(!none)
        #expect(tiny.bytes.isEmpty)
    }

    // MARK: - xattr and open replies

    @Test func xattrProtocol() throws {
        let value: [UInt8] = Array("abc".utf8)
        guard case .xattrSize(3) = try Reply.xattr(value, size: 0) else { Issue.record("size 0 asks for the length"); return }
        guard case .bytes(let bytes) = try Reply.xattr(value, size: 3) else { Issue.record("a buffer that fits"); return }
        #expect(bytes == value)
        #expect(throws: FilesystemError.bufferTooSmall) { try Reply.xattr(value, size: 2) }
    }

    @Test func openFlagsFollowTheCore() {
        let info = FileInfo(fuse_file_info())
        let kept = info.opened(OpenedFile(handle: 9, pageCache: .keep)).value
        #expect(kept.fh == 9 && kept.keep_cache == 1 && kept.direct_io == 0)
        let dropped = info.opened(OpenedFile(handle: 9, pageCache: .drop)).value
        #expect(dropped.keep_cache == 0 && dropped.direct_io == 0)
        let bypassed = info.opened(OpenedFile(handle: 9, pageCache: .bypass)).value
        #expect(bypassed.direct_io == 1)
        let folder = info.opened(Filesystem.OpenedDirectory(cacheListing: true, keepCachedListing: false)).value
        #expect(folder.fh == 0 && folder.cache_readdir == 1 && folder.keep_cache == 0)
        #expect(info.opened(Filesystem.OpenedDirectory(cacheListing: true, keepCachedListing: true)).value.keep_cache == 1)
    }

    @Test(arguments: [(O_RDONLY, false), (O_WRONLY, true), (O_RDWR, true), (O_RDONLY | O_TRUNC, true)])
    func openingForWritingIsRefused(flags: Int32, refused: Bool) {
        var raw = fuse_file_info()
        raw.flags = flags
        #expect(FileInfo(raw).wantsWriting == refused)
    }
}
