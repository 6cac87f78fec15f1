// The name of an entry returned by readdir(3), read in place. `entry.pointee.d_name` would copy the
// whole 256-byte array out of the record, but glibc packs records only as long as their names, so
// the copy reads past the end of the last records of its buffer (AddressSanitizer reported a
// heap-buffer-overflow in the stored-trees scan; docs/SWIFT-FUSE-NOTES.md, "C structs").

#if canImport(Glibc)
    import Glibc
#endif

/// The name of the directory entry `entry` points to (bytes that are not UTF-8 are repaired).
public func directoryEntryName(_ entry: UnsafeMutablePointer<dirent>) -> String {
    let offset = MemoryLayout<dirent>.offset(of: \dirent.d_name)!
    return String(cString: UnsafeRawPointer(entry).advanced(by: offset).assumingMemoryBound(to: CChar.self))
}
