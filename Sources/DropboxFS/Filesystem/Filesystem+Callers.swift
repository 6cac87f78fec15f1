// Who asks, and what that changes. The kernel names the thread behind each request (fuse_req_ctx:
// its pid and uid); the adapter hands that on as a Caller, and the core's caller policies, all
// here, decide from it:
// - file managers (FileManagers.swift) get Dropbox's thumbnails of a folder's images before its
//   listing: their opendir and first piece of a folder wait for them, briefly (Thumbnails/);
// - thumbnailers and content sniffers (FileManagers.sniffers) read ranges: their reads fetch what
//   they ask for and never the whole file (Reader/ReadPolicy.swift);
// - lean walkers (Walkers.swift): a thread that has walked many folders gets its files lean in
//   readdirplus, and its first lookup of a file in a folder listed lean drops the kernel's cached
//   lean listings, through the invalidation publisher like every kernel cache invalidation.
// Whether a caller is a file manager is asked only when a policy needs it (it may read /proc).
//
// Locking: FileManagers.answers and Walkers.state, each taken alone and never with another lock.

/// The thread behind a kernel request, as the kernel reports it.
public struct Caller: Sendable, Equatable {
    public var pid: Int32
    public var uid: UInt32

    public init(pid: Int32, uid: UInt32) {
        self.pid = pid
        self.uid = uid
    }

    /// No process (the kernel names none, or a test): never a file manager, never a walker.
    public static let anonymous = Caller(pid: 0, uid: UInt32.max)
}

extension Filesystem {
    /// Whether the caller is one of the mounting user's file managers.
    func isFileManager(_ caller: Caller) -> Bool {
        fileManagers.isFileManager(pid: caller.pid, uid: caller.uid)
    }

    /// Whether the caller is a thumbnailer or content sniffer, whose reads fetch the ranges it
    /// asks for, never the whole file (FileManagers.sniffers, Reader/ReadPolicy.swift).
    func readsRanges(_ caller: Caller) -> Bool {
        fileManagers.readsRanges(pid: caller.pid)
    }

    /// Whether this opendir or piece of a folder waits for the folder's thumbnails first: the
    /// first piece (or opendir) of a file manager, while thumbnails are written.
    func waitsForThumbnails(_ caller: Caller, firstPiece: Bool) -> Bool {
        firstPiece && wantsThumbnails && isFileManager(caller)
    }

    /// Whether the files of this readdirplus piece go lean for the caller (Walkers.swift).
    func listsLean(_ caller: Caller, folder: UInt64, firstPiece: Bool) -> Bool {
        walkers.listsLean(pid: caller.pid, folder: folder, firstPiece: firstPiece) { isFileManager(caller) }
    }

    /// Whether a lookup in `folder` waits for the kernel to drop its cached lean listings first
    /// (answered later, so the caller's next folders are listed afresh rather than looked up file
    /// by file).
    func waitsForLeanListings(in folder: UInt64) -> Bool {
        walkers.listedLean(folder)
    }

    /// The caller found `attributes` in `folder`: a file looked up wants files' attributes from
    /// now on. Returns the folders whose cached lean listings the kernel should drop now (when
    /// `folder` was listed lean; each is returned once).
    func foundInLookup(_ attributes: FileAttributes, in folder: UInt64, by caller: Caller) -> [UInt64] {
        guard attributes.kind != .folder else { return [] }
        return walkers.lookedUpFile(pid: caller.pid, in: folder)
    }

    /// Tells the read-ahead across files of an open (FolderReadAhead.swift): not of anonymous
    /// callers, nor of file managers, thumbnailers and content sniffers, whose reads are ranged.
    func noteOpenForReadAhead(_ inode: UInt64, caller: Caller, readsRanges ranged: Bool) {
        guard let readAhead, caller.pid > 0, !ranged, let index = try? Self.index(inode),
            let folder = tree.parentFolder(of: index)
        else { return }
        readAhead.opened(file: index, in: folder, by: caller.pid)
    }

    /// For the root's status attribute: the listing pieces served lean, and the files looked up.
    public var callerStatusFields: String { walkers.statusFields }
}
