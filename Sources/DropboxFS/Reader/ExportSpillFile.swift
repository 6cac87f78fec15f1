// An export too big for the read-buffer cap, kept in a file with no name in the disk cache folder
// (Exports.swift): nothing is left behind when the daemon stops or is killed, since the kernel
// frees an unlinked file with its last descriptor. The descriptor closes when the last reference
// goes (the exports table's entry, and any read in progress), so a read never meets a closed file.
// Written and read from the request's task, never on the FUSE thread.

#if canImport(Glibc)
    import Glibc
#endif

final class ExportSpillFile: Sendable {
    let descriptor: Int32
    let size: UInt64

    private init(descriptor: Int32, size: UInt64) {
        self.descriptor = descriptor
        self.size = size
    }

    deinit { close(descriptor) }

    /// Glibc's O_TMPFILE (`__O_TMPFILE | O_DIRECTORY`), a macro Swift does not import.
    private static let temporaryFileFlag: Int32 = 0o20_000_000 | O_DIRECTORY

    /// The bytes in a new unnamed file in `directory`: O_TMPFILE where the filesystem has it, else
    /// a new name removed at once.
    static func write(_ bytes: [UInt8], in directory: String) -> Result<ExportSpillFile, CacheIOError> {
        var descriptor = open(directory, temporaryFileFlag | O_RDWR | O_CLOEXEC, 0o600)
        if descriptor < 0 {
            var random = SystemRandomNumberGenerator()
            let path = directory + "/.export-" + String(random.next(), radix: 16)
            descriptor = open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
            guard descriptor >= 0 else { return .failure(CacheIOError(operation: "create \(path)", code: errno)) }
            unlink(path)
        }
        let file = ExportSpillFile(descriptor: descriptor, size: UInt64(bytes.count))
        var written = 0
        while written < bytes.count {
            let n = bytes.withUnsafeBytes { all in
                pwrite(descriptor, all.baseAddress! + written, all.count - written, off_t(written))
            }
            if n < 0 {
                if errno == EINTR { continue }
                return .failure(CacheIOError(operation: "write an export to \(directory)", code: errno))
            }
            written += n
        }
        return .success(file)
    }

    /// Up to `size` bytes at `offset`; fewer only at the end.
    func read(offset: UInt64, size: Int) -> Result<[UInt8], CacheIOError> {
        guard offset < self.size, size > 0 else { return .success([]) }
        let count = Int(min(UInt64(size), self.size - offset))
        var out = [UInt8](repeating: 0, count: count)
        var done = 0
        while done < count {
            let n = out.withUnsafeMutableBytes { buffer in
                pread(descriptor, buffer.baseAddress! + done, count - done, off_t(offset) + off_t(done))
            }
            if n < 0 {
                if errno == EINTR { continue }
                return .failure(CacheIOError(operation: "read a spilled export", code: errno))
            }
            if n == 0 { return .failure(CacheIOError(operation: "read a spilled export (cut short)", code: EIO)) }
            done += n
        }
        return .success(out)
    }
}
