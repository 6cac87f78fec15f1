// The process environment the commands read, settled once at start: HOME taken from the user
// database when it is unset or empty (a service manager or mount helper may start the daemon
// without it), and the working directory of the daemon moved to / once every path is resolved.

import Foundation

#if canImport(Glibc)
    import Glibc
#endif

enum Environment {
    /// The home folder of the user this process runs as, from the user database.
    static func userDatabaseHome() -> String? {
        guard let entry = getpwuid(getuid()), let dir = entry.pointee.pw_dir else { return nil }
        let home = String(cString: dir)
        return home.isEmpty ? nil : home
    }

    /// Sets HOME from the user database when it is unset or empty; call before anything reads it.
    static func fillHome() {
        if let home = getenv("HOME"), home.pointee != 0 { return }
        if let home = userDatabaseHome() { setenv("HOME", home, 1) }
    }

    /// HOME from the user database even when it is set: mount.fuse3 runs the daemon with
    /// `setuid=USER` in root's environment, where HOME is root's home.
    static func takeHomeFromUserDatabase() {
        if let home = userDatabaseHome() { setenv("HOME", home, 1) }
    }

    /// `path` made absolute against the current working directory.
    static func absolute(_ path: String) -> String {
        path.hasPrefix("/") ? path : FileManager.default.currentDirectoryPath + "/" + path
    }
}
