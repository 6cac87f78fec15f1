// Open files. A handle is pinned to the revision seen at open: every read downloads from
// "rev:<rev>", so one open file never mixes two versions even if Dropbox changes underneath it.

import DropboxAPI

/// What an open handle needs to fetch its bytes.
public struct OpenFile: Sendable, Equatable {
    public var inode: UInt64
    public var rev: String
    public var size: UInt64
    public var contentHash: ContentHash?
}

extension Filesystem {
    /// Opens a file for reading and returns a handle. Writes are refused by the caller (EROFS).
    public func openFile(_ inode: UInt64) throws(FilesystemError) -> UInt64 {
        let index = try Self.index(inode)
        return try state.withLock { (s: inout State) throws(FilesystemError) -> UInt64 in
            guard let node = s.tree.node(index) else { throw .stale }
            switch node.kind {
            case .folder: throw .isADirectory
            case .symlink: throw .notSupported
            case .file: break
            }
            guard node.isDownloadable else { throw .notDownloadable }
            let handle = s.nextHandle
            s.nextHandle += 1
            s.fileHandles[handle] = OpenFile(
                inode: inode, rev: node.rev, size: node.size, contentHash: node.contentHash)
            return handle
        }
    }

    /// Reads up to `size` bytes at `offset` from the revision the handle is pinned to.
    public func read(handle: UInt64, offset: UInt64, size: Int) async throws(FilesystemError) -> [UInt8] {
        guard let file = state.withLock({ $0.fileHandles[handle] }) else { throw .badHandle }
        guard offset < file.size, size > 0 else { return [] }
        let length = min(UInt64(size), file.size - offset)
        do {
            let result = try await client.download(
                path: "rev:\(file.rev)", range: ByteRange(offset: offset, length: length))
            return result.data
        } catch {
            Log.warning("read of inode \(file.inode) at \(offset) failed: \(error)")
            throw FilesystemError(error)
        }
    }

    public func releaseFile(handle: UInt64) {
        _ = state.withLock { $0.fileHandles.removeValue(forKey: handle) }
    }
}
