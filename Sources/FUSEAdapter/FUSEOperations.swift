// The libfuse lowlevel operations table. Each entry only decodes libfuse's arguments into a
// FUSERequest (the operation's name and inode, for the failure path) and Swift values, and calls
// the operation (Operations.swift); `init` negotiates the kernel's capabilities.
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
            let request = FUSERequest(req, .lookup, inode: parent)
            // Names are bytes. One that is not UTF-8 is no Dropbox name: decoding it with repair
            // (U+FFFD for the bad bytes) would find another entry, whose name has U+FFFD there.
            guard let decoded = String(validatingCString: name) else {
                request.answer { () throws(FilesystemError) -> Reply in .negativeEntry(timeout: request.timeouts.negative) }
                return
            }
            Operations.lookup(request, parent: parent, name: decoded)
        }
        ops.forget = { req, ino, count in
            guard let req else { return }
            Operations.forget(FUSERequest(req, .forget, inode: ino), [(ino, count)])
        }
        ops.forget_multi = { req, count, forgets in
            guard let req else { return }
            let decoded = forgets.map { forgets in (0..<count).map { (forgets[$0].ino, forgets[$0].nlookup) } } ?? []
            Operations.forget(FUSERequest(req, .forget, inode: 0), decoded)
        }
        ops.getattr = { req, ino, _ in
            guard let req else { return }
            Operations.getattr(FUSERequest(req, .getattr, inode: ino))
        }
        ops.readlink = { req, ino in
            guard let req else { return }
            Operations.readlink(FUSERequest(req, .readlink, inode: ino))
        }
        ops.opendir = { req, ino, fi in
            guard let req, let fi else { return }
            Operations.opendir(FUSERequest(req, .opendir, inode: ino), info: FileInfo(fi))
        }
        ops.readdir = { req, ino, size, offset, _ in
            guard let req else { return }
            Operations.readdir(FUSERequest(req, .readdir, inode: ino), size: size, offset: UInt64(bitPattern: Int64(offset)), plus: false)
        }
        ops.readdirplus = { req, ino, size, offset, _ in
            guard let req else { return }
            Operations.readdir(
                FUSERequest(req, .readdirplus, inode: ino), size: size, offset: UInt64(bitPattern: Int64(offset)), plus: true)
        }
        ops.releasedir = { req, ino, _ in
            guard let req else { return }
            Operations.releasedir(FUSERequest(req, .releasedir, inode: ino))
        }
        ops.statfs = { req, ino in
            guard let req else { return }
            Operations.statfs(FUSERequest(req, .statfs, inode: ino))
        }
        ops.open = { req, ino, fi in
            guard let req, let fi else { return }
            Operations.open(FUSERequest(req, .open, inode: ino), info: FileInfo(fi))
        }
        ops.read = { req, ino, size, offset, fi in
            guard let req, let fi else { return }
            Operations.read(FUSERequest(req, .read, inode: ino), size: size, offset: offset, handle: fi.pointee.fh)
        }
        ops.release = { req, ino, fi in
            guard let req else { return }
            Operations.release(FUSERequest(req, .release, inode: ino), handle: fi?.pointee.fh)
        }
        ops.getxattr = { req, ino, name, size in
            guard let req, let name else { return }
            Operations.getxattr(FUSERequest(req, .getxattr, inode: ino), name: String(cString: name), size: size)
        }
        ops.listxattr = { req, ino, size in
            guard let req else { return }
            Operations.listxattr(FUSERequest(req, .listxattr, inode: ino), size: size)
        }
        installReadOnlyRefusals(&ops)
        return ops
    }

    /// Every mutating operation answers EROFS (without handlers the kernel would report ENOSYS).
    private static func installReadOnlyRefusals(_ ops: inout fuse_lowlevel_ops) {
        ops.setattr = { req, ino, _, _, _ in FUSEOperations.refuse(req, .setattr, ino) }
        ops.mknod = { req, parent, _, _, _ in FUSEOperations.refuse(req, .mknod, parent) }
        ops.mkdir = { req, parent, _, _ in FUSEOperations.refuse(req, .mkdir, parent) }
        ops.unlink = { req, parent, _ in FUSEOperations.refuse(req, .unlink, parent) }
        ops.rmdir = { req, parent, _ in FUSEOperations.refuse(req, .rmdir, parent) }
        ops.symlink = { req, _, parent, _ in FUSEOperations.refuse(req, .symlink, parent) }
        ops.rename = { req, parent, _, _, _, _ in FUSEOperations.refuse(req, .rename, parent) }
        ops.link = { req, ino, _, _ in FUSEOperations.refuse(req, .link, ino) }
        ops.write = { req, ino, _, _, _, _ in FUSEOperations.refuse(req, .write, ino) }
        ops.create = { req, parent, _, _, _ in FUSEOperations.refuse(req, .create, parent) }
        ops.setxattr = { req, ino, _, _, _, _ in FUSEOperations.refuse(req, .setxattr, ino) }
        ops.removexattr = { req, ino, _ in FUSEOperations.refuse(req, .removexattr, ino) }
        ops.fallocate = { req, ino, _, _, _, _ in FUSEOperations.refuse(req, .fallocate, ino) }
    }

    private static func refuse(_ req: fuse_req_t?, _ operation: Operation, _ inode: fuse_ino_t) {
        guard let req else { return }
        Operations.refuse(FUSERequest(req, operation, inode: inode))
    }

    /// Kernel capabilities: forced readdirplus (one round trip lists and stats a folder), cached
    /// symlinks, parallel directory operations, attributes refreshed before a cached listing is
    /// reused (it is dropped when the folder's mtime moved), synchronous reads (interruptible), and
    /// folders opened by the kernel itself unless listings expire (opendir is then the hook to list
    /// a folder again).
    private static func configure(_ conn: UnsafeMutablePointer<fuse_conn_info>, _ fs: FUSEFilesystem) {
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
        // libfuse fails the kernel's INIT when this differs from the max_read mount option.
        conn.pointee.max_read = fs.maxRead.load(ordering: .relaxed)
        if fs.refusesKernelInit {
            // Test-only: a max_read other than the mount option's, which libfuse refuses (the
            // refusal the max_read option used to meet) by failing INIT and ending the session.
            conn.pointee.max_read &+= 1
        }
        let noOpendir = capable & UInt32(FUSE_CAP_NO_OPENDIR_SUPPORT) != 0 && !fs.core.listingsExpire
        fs.kernelOpensFolders.store(noOpendir, ordering: .relaxed)
        Log.debug(noOpendir ? "the kernel opens folders itself (no opendir)" : "folders are opened through opendir")
        fs.kernelInitialized.store(true, ordering: .releasing)
    }
}
