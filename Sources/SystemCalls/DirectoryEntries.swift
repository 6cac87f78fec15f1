// The names in a folder, as readdir(3) gives them ("." and ".." included), each read in place.
// `entry.pointee.d_name` would copy the whole 256-byte array out of the record, but glibc packs
// records only as long as their names, so the copy reads past the end of the last records of its
// buffer (AddressSanitizer reported a heap-buffer-overflow in the stored-trees scan;
// docs/SWIFT-FUSE-NOTES.md, "C structs").

#if canImport(Glibc)
    import Glibc
#endif

/// Calls `body` with the name of each entry of the folder at `path` until it returns false.
/// Throws when the folder cannot be opened.
public func forEachEntry(inDirectory path: String, _ body: (String) -> Bool) throws(Errno) {
    guard let directory = opendir(path) else { throw Errno.current }
    defer { closedir(directory) }
    while let entry = readdir(directory) {
        if !body(directoryEntryName(entry)) { return }
    }
}

/// The name of the directory entry `entry` points to (bytes that are not UTF-8 are repaired).
public func directoryEntryName(_ entry: UnsafeMutablePointer<dirent>) -> String {
    let offset = MemoryLayout<dirent>.offset(of: \dirent.d_name)!
    return String(cString: UnsafeRawPointer(entry).advanced(by: offset).assumingMemoryBound(to: CChar.self))
}
