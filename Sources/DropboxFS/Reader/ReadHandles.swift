// The reader's open file handles: each pins one revision of one file (PinnedFile) and carries its
// read stream (ReadPolicy.swift) and the download attempt its current pass began under. Handles
// are numbered from 1 here; export handles are numbered apart (ExportedDocuments.firstHandle).
//
// Locking: `ReadHandles` is part of ReaderState, behind FileReader's one Mutex (`FileReader.state`).

import DropboxAPI

/// One revision of one file, as an open handle pins it.
struct PinnedFile: Sendable, Equatable {
    var inode: UInt64
    var path: String
    var rev: String
    var size: UInt64
    var contentHash: ContentHash?

    var key: ContentKey { contentHash.map(ContentKey.hash) ?? .rev(rev) }
    var label: String { "\(path) (rev \(rev))" }
}

/// One open handle of the reader.
struct ReadHandle {
    var file: PinnedFile
    var stream: ReadStream
    /// The content attempt (ContentCheck.attempt) of the first read of the handle's current pass
    /// over a large file: a pass that began on a download later found damaged has served some of its
    /// bytes, so its read reaching the end fails (FileReader.begin).
    var passAttempt: Int?
}

/// The open handles, by number.
struct ReadHandles {
    private var handles: [UInt64: ReadHandle] = [:]
    private var next: UInt64 = 1

    var count: Int { handles.count }

    subscript(_ handle: UInt64) -> ReadHandle? {
        get { handles[handle] }
        set { handles[handle] = newValue }
    }

    /// Registers a new handle and returns its number.
    mutating func add(_ handle: ReadHandle) -> UInt64 {
        let number = next
        next += 1
        handles[number] = handle
        return number
    }

    mutating func remove(_ handle: UInt64) -> ReadHandle? {
        handles.removeValue(forKey: handle)
    }

    /// Whether a handle holds another revision of the file at `inode` open.
    func holdOtherRevision(of file: PinnedFile) -> Bool {
        handles.values.contains { $0.file.inode == file.inode && $0.file.rev != file.rev }
    }
}

/// An open file handle and how the kernel's page cache should treat it.
public struct OpenedFile: Sendable, Equatable {
    public var handle: UInt64
    public var pageCache: PageCachePolicy

    public init(handle: UInt64, pageCache: PageCachePolicy) {
        self.handle = handle
        self.pageCache = pageCache
    }
}
