// Open files, as the FUSE adapter sees them: open pins the revision the tree holds now, read
// answers from that revision only (FileReader), release forgets the handle. An open is answered now
// (Answer.swift) unless it needs the disk (a disk cache entry to open) or is of an export-only
// document, which is exported first (`openExport`, below; the handles are Reader/Exports.swift).
// Folders and symlinks cannot be opened; writes are refused by the adapter (EROFS).

import Dispatch
import DropboxAPI

extension Filesystem {
    /// Opens a file for reading, pinned to its current revision: now, unless the open needs the
    /// disk (its disk cache entry is opened first, on the disk queue; an interrupt stops the wait)
    /// or the file is an export-only document (`openExport`). An open by a program that is not a
    /// file manager, thumbnailer or content sniffer may read the folder's next files ahead
    /// (FolderReadAhead.swift).
    public func open(_ inode: UInt64, caller: Caller = .anonymous) -> Answer<OpenedFile> {
        if SharedFolders.owns(inode), let sharedFolders { return openSharedFile(inode, sharedFolders) }
        if HistoryViews.owns(inode) { return openHistoryFile(inode) }
        let ranged = readsRanges(caller)
        noteOpenForReadAhead(inode, caller: caller, readsRanges: ranged)
        let later = Answer<OpenedFile>.later { [self] () async throws(FilesystemError) -> OpenedFile in
            do throws(FilesystemError) {
                let file = try pinnedFile(inode)
                try reader.refuseRestricted(file)
                return bypassingPageCache(try await reader.open(file), of: file, ranged: ranged)
            } catch .notDownloadable {
                return try await openExport(inode)
            }
        }
        return .deciding { () throws(FilesystemError) -> Answer<OpenedFile> in
            do throws(FilesystemError) {
                let file = try pinnedFile(inode)
                try reader.refuseRestricted(file)
                guard let opened = reader.openNow(file) else { return later }
                return .now(.success(bypassingPageCache(opened, of: file, ranged: ranged)))
            } catch .notDownloadable {
                return later
            }
        }
    }

    /// A thumbnailer's or content sniffer's handle on a small file reads around the kernel's page
    /// cache: its ranges are served before the content_hash check (Reader/ReadPolicy.swift), and
    /// the page cache is the inode's, so pages it filled could reach another program reading the
    /// same file at the same time, which must get only checked bytes. A large file's bytes are
    /// served before the check anyway (its pages are trusted only once checked).
    private func bypassingPageCache(_ opened: OpenedFile, of file: PinnedFile, ranged: Bool) -> OpenedFile {
        guard ranged, file.size <= options.reader.wholeFileLimit else { return opened }
        var opened = opened
        opened.pageCache = .bypass
        return opened
    }

    /// The file's current revision; `.notDownloadable` for an export-only document.
    private func pinnedFile(_ inode: UInt64) throws(FilesystemError) -> PinnedFile {
        let index = try Self.index(inode)
        let (path, node) = try tree.downloadableFile(index)
        return PinnedFile(inode: inode, path: path, rev: node.rev, size: node.size, contentHash: node.contentHash)
    }

    /// Reads up to `size` bytes at `offset` from the revision the handle is pinned to (or from the
    /// export it holds): fewer only at the end of the file. Always answered later, even when the
    /// bytes are at hand: a read may wait for a download, and waits where an interrupt reaches it.
    /// A thumbnailer or content sniffer gets the bytes it asks for rather than the whole file
    /// (`readsRanges`, Reader/ReadPolicy.swift).
    public func read(_ handle: UInt64, at offset: UInt64, size: Int, caller: Caller) -> Answer<[UInt8]> {
        let ranged = readsRanges(caller)
        return .later { [self] () async throws(FilesystemError) -> [UInt8] in
            try await read(handle: handle, offset: offset, size: size, ranged: ranged)
        }
    }

    /// The later answer of `read`.
    func read(handle: UInt64, offset: UInt64, size: Int, ranged: Bool = false) async throws(FilesystemError) -> [UInt8] {
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
    /// shared with the other handles on it, or exported now (Reader/Exports.swift): the later
    /// answer of `open` for a file that is not downloadable.
    func openExport(_ inode: UInt64) async throws(FilesystemError) -> OpenedFile {
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
