// Checks made before mounting, so each common mistake gets a clear one-line message and its own
// exit code instead of a libfuse error: a missing, non-folder, non-empty or already-mounted mount
// point, and a machine without FUSE.

import DropboxFS
import FUSEAdapter
import SystemCalls

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
        if !allowNonEmpty, try !isEmptyDirectory(absolute) {
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

    /// --allow-other (or -o allow_other / allow_root) as a user other than root: fusermount3 refuses
    /// it unless /etc/fuse.conf has a `user_allow_other` line, and says so only after the account
    /// was checked and the daemon started. Checked here first, with the fix.
    static func checkAllowOther(configuration file: String = "/etc/fuse.conf") throws(CommandFailure) {
        guard getuid() != 0 else { return }
        if fuseConfigurationAllowsOther(file) { return }
        throw CommandFailure(
            .fuseUnavailable,
            "--allow-other needs the line user_allow_other in \(file), which only root can add "
                + "(`echo user_allow_other | sudo tee -a \(file)`); or mount without --allow-other")
    }

    /// Whether fuse.conf has an uncommented `user_allow_other` line (as fusermount3 reads it).
    static func fuseConfigurationAllowsOther(_ file: String) -> Bool {
        var allowed = false
        forEachLine(ofFile: file) { line in
            var text = line
            if let hash = text.firstIndex(of: "#") { text = String(text[..<hash]) }
            allowed = text.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\n" }) == ["user_allow_other"]
            return !allowed
        }
        return allowed
    }

    /// True when `path` is the mount point of a mounted filesystem.
    static func isMounted(_ path: String) -> Bool {
        MountTable.isOccupied(path, in: MountTable.entries())
    }

    /// Whether the folder holds nothing; a folder that cannot be listed is that problem, not "not
    /// empty" (whose advice, --allow-non-empty, would not help).
    static func isEmptyDirectory(_ path: String) throws(CommandFailure) -> Bool {
        var empty = true
        do throws(Errno) {
            try forEachEntry(inDirectory: path) { name in
                empty = name == "." || name == ".."
                return empty
            }
        } catch {
            throw CommandFailure(.mountPoint, "cannot read mount point \(path): \(describe(error.rawValue))")
        }
        return empty
    }

    static func describe(_ error: Int32) -> String { String(cString: strerror(error)) }
}
