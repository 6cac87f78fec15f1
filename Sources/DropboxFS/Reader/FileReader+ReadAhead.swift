// A file read ahead of its open (read-ahead across files: Reader/FolderReadAheadPolicy.swift).
// It is read exactly as a program's first read of a small file is: through a handle of its own,
// pinned to the revision the tree held when the read-ahead was decided, fetched whole, checked
// against its content_hash before the read returns, and written to the disk cache like any whole
// file. Its bytes are then where the next open finds them (the content's buffers, or the disk
// cache entry), under the content's key: a file changed on Dropbox since has another key and is
// fetched anew at its open. Nothing is returned: the read-ahead only warms what an open uses.

import DropboxAPI

extension FileReader {
    /// Whether the reader already holds `file`'s content: a handle, buffers or downloads on it, or
    /// a disk cache entry. Such a file is not read ahead.
    func holds(_ file: PinnedFile) -> Bool {
        if state.withLock({ $0.contents[file.key] != nil }) { return true }
        if let diskCache, case .hash(let hash) = file.key, diskCache.knows(key: hash.hex) { return true }
        return false
    }

    /// Reads `file` ahead of its open: fetches it whole and waits for its content_hash check
    /// (FileReader.read of its first byte). False when it was held already, or the read failed or
    /// was cancelled (the task's cancellation ends the read at once; the download is cancelled
    /// when no other read waits for it, as for any interrupted read).
    func readAhead(_ file: PinnedFile) async -> Bool {
        guard !holds(file), file.size > 0 else { return false }
        let opened = install(file, disk: DiskEntry(.none), forKernel: false)
        defer { release(opened.handle) }
        // Its requests go through the pacer's read-ahead lane: the program's own requests never
        // queue behind them.
        return await Pacer.$lane.withValue(.readAhead) {
            do {
                _ = try await read(opened.handle, offset: 0, size: 1)
                return true
            } catch {
                return false
            }
        }
    }
}
