// readdir and readdirplus: fill the kernel's buffer from the folder snapshot taken at opendir.
// Offsets are positions in the snapshot; readdirplus entries count as kernel lookups only when they
// fit in the buffer ("." and ".." carry inode 0 so they count as none).

import CFuse
import DropboxFS

enum DirectoryReplies {
    static func readdir(_ request: FUSERequest, handle: UInt64, size: Int, offset: Int) {
        fill(request, handle: handle, size: size, offset: offset, plus: false)
    }

    static func readdirplus(_ request: FUSERequest, handle: UInt64, size: Int, offset: Int) {
        fill(request, handle: handle, size: size, offset: offset, plus: true)
    }

    private static func fill(_ request: FUSERequest, handle: UInt64, size: Int, offset: Int, plus: Bool) {
        let fs = FUSEFilesystem.of(request.raw)
        do {
            var buffer = [CChar](repeating: 0, count: size)
            var used = 0
            try buffer.withUnsafeMutableBufferPointer { (buf) throws(FilesystemError) in
                try fs.core.readDirectory(handle: handle, from: offset, countingLookups: plus) { entry, nextOffset in
                    let remaining = size - used
                    let needed: Int
                    if plus {
                        var param = fuse_entry_param()
                        let isDot = nextOffset <= 2
                        param.ino = isDot ? 0 : entry.attributes.inode
                        param.generation = entry.attributes.generation
                        param.attr = StatConversion.stat(entry.attributes)
                        param.attr_timeout = fs.timeouts.attributes
                        param.entry_timeout = fs.timeouts.entry
                        needed = fuse_add_direntry_plus(
                            request.raw, buf.baseAddress! + used, remaining, entry.name, &param, off_t(nextOffset))
                    } else {
                        var st = StatConversion.stat(entry.attributes)
                        needed = fuse_add_direntry(
                            request.raw, buf.baseAddress! + used, remaining, entry.name, &st, off_t(nextOffset))
                    }
                    if needed > remaining { return false }
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
