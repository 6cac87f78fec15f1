// One folder entry as Filesystem.readDirectory offers it to the adapter: its name and attributes,
// read from the tree under the filesystem's lock while one piece of a listing is built. Nothing is
// kept between pieces (there are no folder handles); a listing read while the folder changes stays
// consistent through its offset cookies (Filesystem+Directories.swift).
//
// A lean entry (`lean`) is handed to the kernel as a name and a type only, without its node: the
// kernel makes no inode of it and counts no lookup, and a later stat of it asks with a lookup.
// Only files are ever lean; see `Filesystem.readDirectory(_:from:countingLookups:leanFiles:add:)`.

public struct DirectoryEntry: Sendable, Equatable {
    public var name: String
    public var attributes: FileAttributes
    /// Name and type only: no node handed to the kernel, no lookup counted.
    public var lean = false
}
