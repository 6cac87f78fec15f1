// readdir and readdirplus: fill the kernel's buffer from the folder snapshot taken at opendir.
// Offsets are positions in the snapshot; readdirplus entries count as kernel lookups only when they
// fit in the buffer ("." and ".." carry inode 0 so they count as none).

import CFuse
import DropboxFS

enum DirectoryReplies {
    static func readdir(_ request: FUSERequest, handle: UInt64, size: Int, offset: Int) {
        let core = FUSEFilesystem.of(request.raw).core
        do {
            let entries = try core.directoryEntries(handle: handle, from: offset)
            var buffer = [CChar](repeating: 0, count: size)
            var used = 0
            buffer.withUnsafeMutableBufferPointer { buf in
                for (i, entry) in zip(entries.indices, entries) {
                    var st = StatConversion.stat(entry.attributes)
                    let needed = fuse_add_direntry(
                        request.raw, buf.baseAddress! + used, size - used, entry.name, &st, off_t(i + 1))
                    if needed > size - used { break }
                    used += needed
                }
            }
            buffer.withUnsafeBytes { request.buffer(UnsafeRawBufferPointer(rebasing: $0[0..<used])) }
        } catch {
            request.fail(error)
        }
    }

    static func readdirplus(_ request: FUSERequest, handle: UInt64, size: Int, offset: Int) {
        let fs = FUSEFilesystem.of(request.raw)
        do {
            var buffer = [CChar](repeating: 0, count: size)
            var used = 0
            try buffer.withUnsafeMutableBufferPointer { (buf) throws(FilesystemError) in
                try fs.core.directoryEntriesPlus(handle: handle, from: offset) { entry, nextOffset in
                    var param = fuse_entry_param()
                    let isDot = entry.name == "." || entry.name == ".."
                    param.ino = isDot ? 0 : entry.attributes.inode
                    param.generation = entry.attributes.generation
                    param.attr = StatConversion.stat(entry.attributes)
                    param.attr_timeout = fs.timeouts.attributes
                    param.entry_timeout = fs.timeouts.entry
                    let needed = fuse_add_direntry_plus(
                        request.raw, buf.baseAddress! + used, size - used, entry.name, &param, off_t(nextOffset))
                    if needed > size - used { return false }
                    used += needed
                    return true
                }
            }
            buffer.withUnsafeBytes { request.buffer(UnsafeRawBufferPointer(rebasing: $0[0..<used])) }
        } catch {
            request.fail(error)
        }
    }
}
