// open, read, release and the extended-attribute calls. Reads run in a Task and reply from there,
// so a FUSE thread never waits for a download; an interrupted read answers EINTR. open and the
// extended attributes are answered from memory, except the open of an export-only document, which
// exports it first (from a Task). Opening for writing (or with O_TRUNC) answers EROFS.

import CFuse
import DropboxFS

#if canImport(Glibc)
    import Glibc
#endif

enum FileOperations {
    static func open(_ request: FUSERequest, ino: UInt64, info: FileInfo) {
        let flags = info.value.flags
        if flags & O_ACCMODE != O_RDONLY || flags & O_TRUNC != 0 {
            request.fail(.readOnly)
            return
        }
        let core = request.filesystem.core
        do {
            replyOpen(request, info: info, opened: try core.openFile(ino))
        } catch .notDownloadable {
            // An export-only document: exported now, from a task (Exports.swift).
            request.later { request in
                do {
                    replyOpen(request, info: info, opened: try await core.openExport(ino))
                } catch {
                    request.fail(error)
                }
            }
        } catch {
            request.fail(error)
        }
    }

    private static func replyOpen(_ request: FUSERequest, info: FileInfo, opened: OpenedFile) {
        var reply = info.value
        reply.fh = opened.handle
        // The page cache is per inode while a handle is pinned to one revision: keep it only
        // when it holds this revision, and bypass it while another revision is open (and for
        // exports, whose size the kernel does not know yet).
        switch opened.pageCache {
        case .keep: reply.keep_cache = 1
        case .drop: reply.keep_cache = 0
        case .bypass: reply.direct_io = 1
        }
        request.open(reply)
    }

    static func read(_ request: FUSERequest, ino: UInt64, size: Int, offset: Int, handle: UInt64) {
        let core = request.filesystem.core
        request.later { request in
            do {
                let bytes = try await core.read(handle: handle, offset: UInt64(max(0, offset)), size: size)
                bytes.withUnsafeBytes { request.buffer($0) }
            } catch {
                request.fail(error)
            }
        }
    }

    static func release(_ fs: FUSEFilesystem, handle: UInt64) {
        fs.core.releaseFile(handle: handle)
    }

    static func getxattr(_ request: FUSERequest, ino: UInt64, name: String, size: Int) {
        do {
            let value = try request.filesystem.core.extendedAttribute(name, of: ino)
            replyXattr(request, bytes: Array(value.utf8), size: size)
        } catch {
            request.fail(error)
        }
    }

    static func listxattr(_ request: FUSERequest, ino: UInt64, size: Int) {
        do {
            var bytes: [UInt8] = []
            for attribute in try request.filesystem.core.extendedAttributes(of: ino) {
                bytes.append(contentsOf: attribute.name.utf8)
                bytes.append(0)
            }
            replyXattr(request, bytes: bytes, size: size)
        } catch {
            request.fail(error)
        }
    }

    /// The xattr reply protocol: size 0 asks for the length, a short buffer is ERANGE.
    private static func replyXattr(_ request: FUSERequest, bytes: [UInt8], size: Int) {
        if size == 0 {
            request.xattrSize(bytes.count)
        } else if size < bytes.count {
            request.fail(.bufferTooSmall)
        } else {
            bytes.withUnsafeBytes { request.buffer($0) }
        }
    }
}
