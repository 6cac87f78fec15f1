// A snapshot of one folder entry, taken when a folder is opened, so readdir offsets stay stable
// however the tree changes while `ls` is reading.

public struct DirectoryEntry: Sendable, Equatable {
    public var name: String
    public var attributes: FileAttributes
}
