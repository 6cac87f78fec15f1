// The libfuse lowlevel operations table. Each operation decodes its request, calls the core, and
// replies; nothing here knows about Dropbox or decides about caching. Operations that may wait on
// the network (lookup, opendir and readdir of a folder not listed yet, read, statfs) run in a Task
// and reply from there, so libfuse's threads are never held by a download or a listing; the request
// owner registers those Tasks, so an interrupt cancels them (the core then answers EINTR) and an
// unmount fails them (RequestOwner.swift). Every operation that would change the filesystem
// answers EROFS.
//
// The closures assigned to the table capture nothing (they are C function pointers): they reach the
// FUSEFilesystem through fuse_req_userdata (FUSERequest.init).

import CFuse
import DropboxFS
import Log

#if canImport(Glibc)
    import Glibc
#endif

enum FUSEOperations {
    static func table() -> fuse_lowlevel_ops {
        var ops = fuse_lowlevel_ops()
        ops.`init` = { userdata, conn in
            guard let userdata, let conn else { return }
            FUSEOperations.configure(conn, Unmanaged<FUSEFilesystem>.fromOpaque(userdata).takeUnretainedValue())
        }
        ops.lookup = { req, parent, name in
            guard let req, let name else { return }
            FUSEOperations.lookup(FUSERequest(req), parent: parent, name: String(cString: name))
        }
        ops.forget = { req, ino, count in
            guard let req else { return }
            let request = FUSERequest(req)
            request.filesystem.core.forget(ino, count: count)
            request.none()
        }
        ops.forget_multi = { req, count, forgets in
            guard let req else { return }
            let request = FUSERequest(req)
            if let forgets {
                for i in 0..<count {
                    request.filesystem.core.forget(forgets[i].ino, count: forgets[i].nlookup)
                }
            }
            request.none()
        }
        ops.getattr = { req, ino, _ in
            guard let req else { return }
            let request = FUSERequest(req)
            let fs = request.filesystem
            do {
                request.attributes(try fs.core.attributes(of: ino), timeout: fs.timeouts.attributes)
            } catch {
                request.fail(error)
            }
        }
        ops.readlink = { req, ino in
            guard let req else { return }
            let request = FUSERequest(req)
            do {
                request.link(try request.filesystem.core.readlink(ino))
            } catch {
                request.fail(error)
            }
        }
        ops.opendir = { req, ino, fi in
            guard let req, let fi else { return }
            DirectoryReplies.opendir(FUSERequest(req), ino: ino, info: FileInfo(fi))
        }
        ops.readdir = { req, ino, size, offset, _ in
            guard let req else { return }
            DirectoryReplies.readdir(FUSERequest(req), ino: ino, size: size, offset: Int(offset), plus: false)
        }
        ops.readdirplus = { req, ino, size, offset, _ in
            guard let req else { return }
            DirectoryReplies.readdir(FUSERequest(req), ino: ino, size: size, offset: Int(offset), plus: true)
        }
        ops.releasedir = { req, _, _ in
            guard let req else { return }
            FUSERequest(req).fail(errno: 0)
        }
        ops.statfs = { req, _ in
            guard let req else { return }
            FUSERequest(req).later { request in
                do {
                    request.statfs(try await request.filesystem.core.statistics())
                } catch {
                    request.fail(error)
                }
            }
        }
        ops.open = { req, ino, fi in
            guard let req, let fi else { return }
            FileOperations.open(FUSERequest(req), ino: ino, info: FileInfo(fi))
        }
        ops.read = { req, ino, size, offset, fi in
            guard let req, let fi else { return }
            FileOperations.read(FUSERequest(req), ino: ino, size: size, offset: offset, handle: fi.pointee.fh)
        }
        ops.release = { req, _, fi in
            guard let req else { return }
            let request = FUSERequest(req)
            if let fi { FileOperations.release(request.filesystem, handle: fi.pointee.fh) }
            request.fail(errno: 0)
        }
        ops.getxattr = { req, ino, name, size in
            guard let req, let name else { return }
            FileOperations.getxattr(FUSERequest(req), ino: ino, name: String(cString: name), size: size)
        }
        ops.listxattr = { req, ino, size in
            guard let req else { return }
            FileOperations.listxattr(FUSERequest(req), ino: ino, size: size)
        }
        installReadOnlyRefusals(&ops)
        return ops
    }

    /// Every mutating operation answers EROFS (without handlers the kernel would report ENOSYS).
    fileprivate static func installReadOnlyRefusals(_ ops: inout fuse_lowlevel_ops) {
        ops.setattr = { req, _, _, _, _ in FUSEOperations.refuse(req) }
        ops.mknod = { req, _, _, _, _ in FUSEOperations.refuse(req) }
        ops.mkdir = { req, _, _, _ in FUSEOperations.refuse(req) }
        ops.unlink = { req, _, _ in FUSEOperations.refuse(req) }
        ops.rmdir = { req, _, _ in FUSEOperations.refuse(req) }
        ops.symlink = { req, _, _, _ in FUSEOperations.refuse(req) }
        ops.rename = { req, _, _, _, _, _ in FUSEOperations.refuse(req) }
        ops.link = { req, _, _, _ in FUSEOperations.refuse(req) }
        ops.write = { req, _, _, _, _, _ in FUSEOperations.refuse(req) }
        ops.create = { req, _, _, _, _ in FUSEOperations.refuse(req) }
        ops.setxattr = { req, _, _, _, _, _ in FUSEOperations.refuse(req) }
        ops.removexattr = { req, _, _ in FUSEOperations.refuse(req) }
        ops.fallocate = { req, _, _, _, _, _ in FUSEOperations.refuse(req) }
    }

    fileprivate static func refuse(_ req: fuse_req_t?) {
        guard let req else { return }
        FUSERequest(req).fail(.readOnly)
    }

    /// Kernel capabilities: forced readdirplus (one round trip lists and stats a folder), cached
    /// symlinks, parallel directory operations, attributes refreshed before a cached listing is
    /// reused (it is dropped when the folder's mtime moved), synchronous reads (interruptible), and
    /// folders opened by the kernel itself unless listings expire (opendir is then the hook to list
    /// a folder again).
    fileprivate static func configure(_ conn: UnsafeMutablePointer<fuse_conn_info>, _ fs: FUSEFilesystem) {
        let capable = conn.pointee.capable
        var want = conn.pointee.want
        for flag in [
            FUSE_CAP_READDIRPLUS, FUSE_CAP_CACHE_SYMLINKS, FUSE_CAP_PARALLEL_DIROPS, FUSE_CAP_AUTO_INVAL_DATA,
        ]
        where capable & UInt32(flag) != 0 {
            want |= UInt32(flag)
        }
        // Reads are sent on behalf of the reading process, so a signal interrupts them (the kernel
        // never interrupts its asynchronous read-ahead requests); see docs/ARCHITECTURE.md.
        want &= ~UInt32(FUSE_CAP_READDIRPLUS_AUTO | FUSE_CAP_ASYNC_READ)
        conn.pointee.want = want
        let noOpendir = capable & UInt32(FUSE_CAP_NO_OPENDIR_SUPPORT) != 0 && !fs.core.listingsExpire
        fs.kernelOpensFolders.store(noOpendir, ordering: .relaxed)
        Log.debug(noOpendir ? "the kernel opens folders itself (no opendir)" : "folders are opened through opendir")
    }

    fileprivate static func lookup(_ request: FUSERequest, parent: UInt64, name: String) {
        let fs = request.filesystem
        do {
            switch try fs.core.lookupCached(parent: parent, name: name) {
            case .found(let attributes):
                request.entry(attributes, timeouts: fs.timeouts)
                return
            case .notFound:
                request.negativeEntry(timeout: fs.timeouts.negative)
                return
            case .needsListing:
                break
            }
        } catch {
            request.fail(error)
            return
        }
        request.later { request in
            do {
                request.entry(try await fs.core.lookup(parent: parent, name: name), timeouts: fs.timeouts)
            } catch FilesystemError.notFound {
                request.negativeEntry(timeout: fs.timeouts.negative)
            } catch {
                request.fail(error)
            }
        }
    }
}

/// A copy of a request's fuse_file_info. libfuse passes a pointer to its own stack frame, which is
/// gone once the callback returns, so a reply sent later from a Task must not use the pointer.
struct FileInfo: @unchecked Sendable {
    let value: fuse_file_info
    init(_ pointer: UnsafeMutablePointer<fuse_file_info>) { self.value = pointer.pointee }
}
