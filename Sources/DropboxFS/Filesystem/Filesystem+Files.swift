// Open files, as the FUSE adapter sees them: open pins the revision the tree holds now, read
// answers from that revision only (FileReader), release forgets the handle. Export-only documents
// open through `openExport` (below; the handles are Reader/Exports.swift); folders and symlinks cannot be opened; writes are
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
            // Not an error for the caller to show: open it with `openExport` (below).
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

extension Filesystem {
    /// Opens an export-only document: a handle on its export at the revision the tree holds,
    /// shared with the other handles on it, or exported now (Reader/Exports.swift). The adapter
    /// calls this (from a task) when `openFile` answers `.notDownloadable`.
    public func openExport(_ inode: UInt64) async throws(FilesystemError) -> OpenedFile {
        let index = try Self.index(inode)
        let (path, rev, source) = try tree.state.withLock { (s: inout LiveTree.State) throws(FilesystemError) -> (String, String, String) in
            guard let node = s.tree.node(index) else { throw .stale }
            guard node.kind == .file else { throw node.kind == .folder ? .isADirectory : .notSupported }
            guard !node.isDownloadable else { throw .stale }
            let path = s.tree.path(of: index)
            return (path, node.rev, node.id.isEmpty ? path : node.id)
        }
        let client = self.client
        let reader = self.reader
        let handle = try await exports.open(ExportedDocuments.Key(source: source, rev: rev)) { () async throws(FilesystemError) -> [UInt8] in
            do throws(DropboxError) {
                return try await client.export(path: source).data
            } catch {
                let failure = FilesystemError(error)
                if failure != .interrupted { reader.warnNotExported(inode: inode, path: path, because: error) }
                throw failure
            }
        }
        let size = exports.size(handle) ?? 0
        var invalidated: [Invalidation] = []
        tree.state.withLock { s in
            guard s.tree.node(index)?.rev == rev else { return }
            if s.tree.noteExportedSize(index, rev: rev, size: size) { invalidated.append(.inode(inode)) }
        }
        invalidations.publish(invalidated)
        return OpenedFile(handle: handle, pageCache: .bypass)
    }
}
