// One folder entry as Filesystem.readDirectory offers it to the adapter: its name and attributes,
// read from the tree under the filesystem's lock while one piece of a listing is built. Nothing is
// kept between pieces (there are no folder handles); a listing read while the folder changes stays
// consistent through its offset cookies (Filesystem+Directories.swift).

public struct DirectoryEntry: Sendable, Equatable {
    public var name: String
    public var attributes: FileAttributes
}
