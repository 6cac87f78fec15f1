// The lines of a small text file (/proc/self/mountinfo, /proc/self/status, /etc/fuse.conf, the
// thumbnail ledger), read with getline(3) so that a file of the kernel's, whose size stat cannot
// tell, is read whole.

#if canImport(Glibc)
    import Glibc
#endif

/// Calls `body` with each line of the file at `path` (its newline kept) until `body` returns
/// false; false when the file cannot be opened.
@discardableResult
public func forEachLine(ofFile path: String, _ body: (String) -> Bool) -> Bool {
    guard let file = fopen(path, "r") else { return false }
    defer { fclose(file) }
    var line: UnsafeMutablePointer<CChar>?
    var capacity = 0
    defer { free(line) }
    while getline(&line, &capacity, file) > 0, let line {
        if !body(String(cString: line)) { break }
    }
    return true
}
