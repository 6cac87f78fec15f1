// opendir, readdir and readdirplus. There are no folder handles: every piece of a listing is served
// from the core by offset (Filesystem+Directories.swift). The first piece of a folder not listed
// yet is answered from a Task once the listing arrives (an interrupt answers EINTR and leaves the
// listing to other requests waiting for it). readdirplus entries count as kernel lookups only when
// they fit in the buffer ("." and ".." carry inode 0 so they count as none). A listing started by
// a file manager (the first piece, or an answered opendir) asks the core for the folder's
// thumbnails (FileManagers.swift) and is answered once they are written, or after a short wait:
// a file manager looks for thumbnails as soon as it has the listing, and reads every image whose
// thumbnail is not there yet.

import CFuse
import DropboxFS

#if canImport(Glibc)
    import Glibc
#endif

enum DirectoryReplies {
    /// opendir is only answered with a handle where the kernel cannot open folders itself, or
    /// where listings expire and opendir is the point to list a folder again.
    static func opendir(_ request: FUSERequest, ino: UInt64, info: FileInfo) {
        let fs = request.filesystem
        if fs.kernelOpensFolders.load(ordering: .relaxed) {
            request.fail(errno: ENOSYS)  // "success, and no more opendir or releasedir"
            return
        }
        whenListed(request, ino: ino, thumbnailsFirst: isFileManager(request)) { request in
            replyOpendir(request, ino: ino, info: info)
        }
    }

    private static func replyOpendir(_ request: FUSERequest, ino: UInt64, info: FileInfo) {
        var reply = info.value
        reply.fh = 0
        // The kernel caches this folder's listing until invalidated, and keeps an earlier cached
        // listing only when the core says it is still the current one.
        reply.cache_readdir = 1
        reply.keep_cache = request.filesystem.core.kernelMayKeepListing(ino) ? 1 : 0
        request.open(reply)
    }

    static func readdir(_ request: FUSERequest, ino: UInt64, size: Int, offset: Int, plus: Bool) {
        // Later pieces are served from the listing the first one came from, even once it expired.
        let first = offset == 0
        whenListed(request, ino: ino, expiredIsReady: !first, thumbnailsFirst: first && isFileManager(request)) { request in
            fill(request, ino: ino, size: size, offset: offset, plus: plus)
        }
    }

    /// Whether the request comes from a file manager, which wants thumbnails (only asked while the
    /// core writes them).
    private static func isFileManager(_ request: FUSERequest) -> Bool {
        let fs = request.filesystem
        guard fs.core.wantsThumbnails else { return false }
        let caller = request.caller
        return fs.fileManagers.isFileManager(pid: caller.pid, uid: caller.uid)
    }

    /// Calls `reply` once the folder can be served: on this thread when it is listed, else from a
    /// Task once it is. With `thumbnailsFirst`, from a Task once the core wrote the folder's
    /// thumbnails (or gave up waiting for them). A failure answers the request instead.
    private static func whenListed(
        _ request: FUSERequest, ino: UInt64, expiredIsReady: Bool = false, thumbnailsFirst: Bool = false,
        _ reply: @escaping @Sendable (FUSERequest) -> Void
    ) {
        let core = request.filesystem.core
        if !thumbnailsFirst {
            do {
                if try core.isDirectoryReady(ino, expiredIsReady: expiredIsReady) {
                    reply(request)
                    return
                }
            } catch {
                request.fail(error)
                return
            }
        }
        request.later { request in
            if thumbnailsFirst {
                await core.thumbnailsWanted(folder: ino)
                // Interrupted while it waited (the thumbnails go on).
                if Task.isCancelled {
                    request.fail(FilesystemError.interrupted)
                    return
                }
            }
            do {
                try await core.prepareDirectory(ino)
                reply(request)
            } catch {
                request.fail(error)
            }
        }
    }

    private static func fill(_ request: FUSERequest, ino: UInt64, size: Int, offset: Int, plus: Bool) {
        let fs = request.filesystem
        do {
            var buffer = [CChar](repeating: 0, count: size)
            var used = 0
            try buffer.withUnsafeMutableBufferPointer { (buf) throws(FilesystemError) in
                try fs.core.readDirectory(ino, from: UInt64(truncatingIfNeeded: offset), countingLookups: plus) { entry, nextOffset in
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
                            request.raw.pointer, buf.baseAddress! + used, remaining, entry.name, &param, off_t(nextOffset))
                    } else {
                        var st = StatConversion.stat(entry.attributes)
                        needed = fuse_add_direntry(
                            request.raw.pointer, buf.baseAddress! + used, remaining, entry.name, &st, off_t(nextOffset))
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
