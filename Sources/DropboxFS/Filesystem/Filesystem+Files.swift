// Open files, as the FUSE adapter sees them: open pins the revision the tree holds now, read
// answers from that revision only (FileReader), release forgets the handle. The FUSE thread opens
// with `openFileCached`, which never waits: it answers nil when the open needs the disk (a disk
// cache entry to open) and throws `.notDownloadable` for an export-only document; the adapter then
// opens from a task with `openFile` or `openExport` (below; the handles are Reader/Exports.swift).
// Folders and symlinks cannot be opened; writes are refused by the adapter (EROFS).

import Dispatch
import DropboxAPI

extension Filesystem {
    /// Opens a file for reading, pinned to its current revision, without waiting: nil when the
    /// open needs the disk (`openFile`, from a task); `.notDownloadable` for an export-only
    /// document (`openExport`).
    public func openFileCached(_ inode: UInt64) throws(FilesystemError) -> OpenedFile? {
        reader.openNow(try pinnedFile(inode))
    }

    /// Opens a file for reading, pinned to its current revision, opening its disk cache entry
    /// first when there is one (on the disk queue; an interrupt stops the wait).
    public func openFile(_ inode: UInt64) async throws(FilesystemError) -> OpenedFile {
        try await reader.open(try pinnedFile(inode))
    }

    /// The file's current revision; `.notDownloadable` for an export-only document.
    private func pinnedFile(_ inode: UInt64) throws(FilesystemError) -> PinnedFile {
        let index = try Self.index(inode)
        let (path, node) = try tree.downloadableFile(index)
        return PinnedFile(inode: inode, path: path, rev: node.rev, size: node.size, contentHash: node.contentHash)
    }

    /// Reads up to `size` bytes at `offset` from the revision the handle is pinned to (or from the
    /// export it holds): fewer only at the end of the file.
    /// `ranged`: the reader is a thumbnailer or content sniffer, which gets the bytes it asks for
    /// rather than the whole file (Reader/ReadPolicy.swift).
    public func read(handle: UInt64, offset: UInt64, size: Int, ranged: Bool = false) async throws(FilesystemError) -> [UInt8] {
        if exports.owns(handle) { return try exports.read(handle, offset: offset, size: size) }
        return try await reader.read(handle, offset: offset, size: size, ranged: ranged)
    }

    public func releaseFile(handle: UInt64) {
        if exports.owns(handle) {
            exports.release(handle)
        } else {
            reader.release(handle)
        }
    }

    /// Waits until the disk cache writes queued so far (and the commits they trigger) are done,
    /// at most `timeout` (nil: however long it takes); called at unmount so a file read just before
    /// is found in the cache next time. False when the time ran out (a disk that stopped answering
    /// must not keep a stopping daemon from exiting).
    @discardableResult
    public func finishDiskCacheWrites(waitingAtMost timeout: Double? = nil) -> Bool {
        guard let timeout else {
            reader.diskQueue.sync {}
            return true
        }
        let done = DispatchSemaphore(value: 0)
        reader.diskQueue.async { done.signal() }
        return done.wait(timeout: .now() + timeout) == .success
    }
}

extension Filesystem {
    /// Opens an export-only document: a handle on its export at the revision the tree holds,
    /// shared with the other handles on it, or exported now (Reader/Exports.swift). The adapter
    /// calls this (from a task) when `openFile` answers `.notDownloadable`.
    public func openExport(_ inode: UInt64) async throws(FilesystemError) -> OpenedFile {
        let index = try Self.index(inode)
        let (path, rev, source) = try tree.exportSource(index)
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
        tree.noteExportedSize(index, rev: rev, size: size)
        return OpenedFile(handle: handle, pageCache: .bypass)
    }
}
