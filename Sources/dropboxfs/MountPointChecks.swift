// Checks made before mounting, so each common mistake gets a clear one-line message and its own
// exit code instead of a libfuse error: a missing, non-folder, non-empty or already-mounted mount
// point, and a machine without FUSE.

#if canImport(Glibc)
    import Glibc
#endif

enum MountPointChecks {
    /// Resolves and validates the mount point; creates the default ~/dropbox when missing.
    static func validate(_ path: String, isDefault: Bool, allowNonEmpty: Bool) throws(CommandFailure) -> String {
        var st = stat()
        if stat(path, &st) != 0 {
            let error = errno
            if error == ENOENT && isDefault {
                guard mkdir(path, 0o700) == 0 else {
                    throw CommandFailure(.mountPoint, "cannot create mount point \(path): \(describe(errno))")
                }
                return try validate(path, isDefault: false, allowNonEmpty: allowNonEmpty)
            }
            if error == ENOTCONN {
                throw CommandFailure(
                    .mountPoint,
                    "mount point \(path) is a dead mount (Transport endpoint is not connected): run `fusermount3 -u \(path)` first")
            }
            if error == ENOENT {
                throw CommandFailure(.mountPoint, "mount point \(path) does not exist (create it with `mkdir -p \(path)`)")
            }
            throw CommandFailure(.mountPoint, "cannot use mount point \(path): \(describe(error))")
        }
        guard st.st_mode & S_IFMT == S_IFDIR else {
            throw CommandFailure(.mountPoint, "mount point \(path) is not a directory")
        }
        guard let resolved = realpath(path, nil) else {
            throw CommandFailure(.mountPoint, "cannot resolve mount point \(path): \(describe(errno))")
        }
        let absolute = String(cString: resolved)
        free(resolved)
        if isMounted(absolute) {
            throw CommandFailure(.mountPoint, "\(absolute) is already a mount point (unmount it with `fusermount3 -u \(absolute)`)")
        }
        if !allowNonEmpty && !isEmptyDirectory(absolute) {
            throw CommandFailure(.mountPoint, "mount point \(absolute) is not empty (use --allow-non-empty to mount over it)")
        }
        return absolute
    }

    static func checkFUSEAvailable() throws(CommandFailure) {
        if access("/dev/fuse", R_OK | W_OK) != 0 {
            throw CommandFailure(
                .fuseUnavailable, "/dev/fuse is not available (\(describe(errno))): load the fuse module or run where FUSE is allowed")
        }
        let candidates = ["/usr/bin/fusermount3", "/bin/fusermount3", "/usr/local/bin/fusermount3"]
        if !candidates.contains(where: { access($0, X_OK) == 0 }) {
            throw CommandFailure(.fuseUnavailable, "fusermount3 was not found: install the fuse3 package")
        }
    }

    /// True when `path` is the mount point of a mounted filesystem (from /proc/self/mountinfo).
    static func isMounted(_ path: String) -> Bool {
        mountPoints().contains(path)
    }

    static func mountPoints() -> [String] {
        guard let file = fopen("/proc/self/mountinfo", "r") else { return [] }
        defer { fclose(file) }
        var result: [String] = []
        var line: UnsafeMutablePointer<CChar>?
        var capacity = 0
        defer { free(line) }
        while getline(&line, &capacity, file) > 0, let line {
            let fields = String(cString: line).split(separator: " ")
            if fields.count > 4 { result.append(unescapeMountField(String(fields[4]))) }
        }
        return result
    }

    /// Mount table fields escape space, tab, newline and backslash as \ooo.
    static func unescapeMountField(_ field: String) -> String {
        var bytes: [UInt8] = []
        let utf8 = Array(field.utf8)
        var i = 0
        while i < utf8.count {
            if utf8[i] == UInt8(ascii: "\\"), i + 4 <= utf8.count {
                let digits = utf8[(i + 1)..<(i + 4)]
                if digits.count == 3, digits.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "7") }) {
                    let value = digits.reduce(0) { $0 * 8 + Int($1 - UInt8(ascii: "0")) }
                    bytes.append(UInt8(truncatingIfNeeded: value))
                    i += 4
                    continue
                }
            }
            bytes.append(utf8[i])
            i += 1
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    static func isEmptyDirectory(_ path: String) -> Bool {
        guard let dir = opendir(path) else { return false }
        defer { closedir(dir) }
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(cString: raw.bindMemory(to: CChar.self).baseAddress!)
            }
            if name != "." && name != ".." { return false }
        }
        return true
    }

    static func describe(_ error: Int32) -> String { String(cString: strerror(error)) }
}
