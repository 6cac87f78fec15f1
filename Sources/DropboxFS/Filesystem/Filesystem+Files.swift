// Open files, as the FUSE adapter sees them: open pins the revision the tree holds now, read
// answers from that revision only (FileReader), release forgets the handle. Export-only documents
// open through `openExport` (Exports.swift); folders and symlinks cannot be opened; writes are
// refused by the adapter (EROFS).

import DropboxAPI

extension Filesystem {
    /// Opens a file for reading, pinned to its current revision.
    public func openFile(_ inode: UInt64) throws(FilesystemError) -> OpenedFile {
        enum Opening {
            case file(PinnedFile)
            case exportOnly(String)
        }
        let index = try Self.index(inode)
        let opening = try tree.state.withLock { (s: inout LiveTree.State) throws(FilesystemError) -> Opening in
            guard let node = s.tree.node(index) else { throw .stale }
            switch node.kind {
            case .folder: throw .isADirectory
            case .symlink: throw .notSupported
            case .file: break
            }
            let path = s.tree.path(of: index)
            guard node.isDownloadable else { return .exportOnly(path) }
            return .file(
                PinnedFile(inode: inode, path: path, rev: node.rev, size: node.size, contentHash: node.contentHash))
        }
        switch opening {
        case .file(let file):
            return reader.open(file)
        case .exportOnly:
            // Not an error for the caller to show: open it with `openExport` (Exports.swift).
            throw .notDownloadable
        }
    }

    /// Reads up to `size` bytes at `offset` from the revision the handle is pinned to (or from the
    /// export it holds): fewer only at the end of the file.
    public func read(handle: UInt64, offset: UInt64, size: Int) async throws(FilesystemError) -> [UInt8] {
        if exports.owns(handle) { return try exports.read(handle, offset: offset, size: size) }
        return try await reader.read(handle, offset: offset, size: size)
    }

    public func releaseFile(handle: UInt64) {
        if exports.owns(handle) {
            exports.release(handle)
        } else {
            reader.release(handle)
        }
    }

    /// Waits until the disk cache writes queued so far (and the commits they trigger) are done;
    /// called at unmount so a file read just before is found in the cache next time.
    public func finishDiskCacheWrites() {
        reader.diskQueue.sync {}
    }
}
