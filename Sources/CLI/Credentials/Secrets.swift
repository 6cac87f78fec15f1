// Keeping the access token out of places other processes can read. A token given in
// DROPBOXFS_ACCESS_TOKEN is taken out of the environment first thing, before any child process
// (the background daemon, the mount guard, fusermount3) can inherit it, and its bytes are wiped from
// the block /proc/PID/environ shows for the life of the mount; the background daemon receives it
// over a pipe instead. The process is
// also made not dumpable, so a crash never writes its tokens into a core file.

import CShim

#if canImport(Glibc)
    import Glibc
#endif

enum Secrets {
    static let tokenVariable = "DROPBOXFS_ACCESS_TOKEN"
    /// Set in the background daemon's environment: the descriptor its token arrives on.
    static let tokenFDVariable = "DROPBOXFS_TOKEN_FD"
    static let tokenFD: Int32 = 4

    /// The token given in the environment (or over the daemon's pipe), read once at start.
    static let environmentToken: String? = take()

    /// Call first thing in main: reads the token and removes it from the environment.
    static func seal() {
        _ = environmentToken
        _ = dbx_set_not_dumpable()
    }

    private static func take() -> String? {
        if getenv(tokenFDVariable) != nil {
            unsetenv(tokenFDVariable)
            let bytes = SelfSpawn.read(tokenFD) { $0.count > 64 * 1024 }
            close(tokenFD)
            unsetenv(tokenVariable)
            return bytes.isEmpty ? nil : String(decoding: bytes, as: UTF8.self)
        }
        guard let raw = getenv(tokenVariable) else { return nil }
        let token = String(cString: raw)
        // /proc/PID/environ shows the environment block the process started with, which unsetenv
        // leaves alone: overwrite the value there too.
        memset(raw, 0, strlen(raw))
        unsetenv(tokenVariable)
        return token
    }
}
