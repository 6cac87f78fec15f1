// An export too big for the read-buffer cap, kept in a file with no name in the disk cache folder
// (Exports.swift): nothing is left behind when the daemon stops or is killed, since the kernel
// frees an unlinked file with its last descriptor. The descriptor closes when the last reference
// goes (the exports table's entry, and any read in progress), so a read never meets a closed file.
// Written and read from the request's task, never on the FUSE thread. The writes and reads go
// through the system layer (SystemCalls), which holds the retry rules (EINTR, short transfers).

import SystemCalls

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
        // A write that takes nothing fails as EIO (it is not made again forever).
        let failure = bytes.withUnsafeBytes { all -> CacheIOError? in
            do throws(Errno) {
                try FileDescriptor(rawValue: descriptor).writeAll(toAbsoluteOffset: 0, all)
                return nil
            } catch {
                return CacheIOError(operation: "write an export to \(directory)", code: error.rawValue)
            }
        }
        if let failure { return .failure(failure) }
        return .success(file)
    }

    /// Up to `size` bytes at `offset`; fewer only at the end.
    func read(offset: UInt64, size: Int) -> Result<[UInt8], CacheIOError> {
        guard offset < self.size, size > 0 else { return .success([]) }
        let count = Int(min(UInt64(size), self.size - offset))
        var out = [UInt8](repeating: 0, count: count)
        let done = out.withUnsafeMutableBytes { buffer -> Result<Int, CacheIOError> in
            do throws(Errno) {
                return .success(try FileDescriptor(rawValue: descriptor).read(fromAbsoluteOffset: Int64(offset), filling: buffer))
            } catch {
                return .failure(CacheIOError(operation: "read a spilled export", code: error.rawValue))
            }
        }
        switch done {
        case .failure(let failure): return .failure(failure)
        case .success(let read) where read < count:
            return .failure(CacheIOError(operation: "read a spilled export (cut short)", code: EIO))
        case .success: return .success(out)
        }
    }
}
