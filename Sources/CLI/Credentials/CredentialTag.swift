// The keyed tag of a bare access token: how a stored tree is tied to a token that names no account
// (docs/SEMANTICS.md, "Stored tree and offline"). An offline mount cannot ask Dropbox whose token
// it holds, so each mount that Dropbox answered writes the tag of its token into the stored tree of
// the account Dropbox named, and an offline mount with a bare token serves only a tree carrying the
// tag of the token in hand.
//
// The tag is HMAC-SHA256 of the token under a random key of this installation, kept in
// CACHE_DIR/credential-key (32 bytes, 0600, in the 0700 cache folder): the stored tree never holds
// anything from which the token can be recovered or checked without that key. A key file that
// cannot be made or read, or that is not a private regular file of 32 bytes, gives no tag (then
// no stored tree is served offline with a bare token; nothing else changes).

import DropboxAPI
import Log

#if canImport(Glibc)
    import Glibc
#endif

enum CredentialTag {
    static let keyLength = 32

    /// The tag of `token` under the key in `cacheFolder`, made on first use; nil when no key can
    /// be had (one log line says why).
    static func of(token: String, cacheFolder: String) -> String? {
        guard let key = key(in: cacheFolder) else { return nil }
        let tag = Digest.hmacSHA256(key: key, message: Array(token.utf8))
        return "hmac-sha256:" + tag.map { String($0, radix: 16).leftPadded(to: 2) }.joined()
    }

    static func keyPath(_ cacheFolder: String) -> String { cacheFolder + "/credential-key" }

    /// Reads the key, or makes it (exclusively, so two mounts starting at once agree on one key).
    static func key(in cacheFolder: String) -> [UInt8]? {
        let path = keyPath(cacheFolder)
        switch read(path) {
        case .key(let key): return key
        case .unusable: return nil
        case .missing: break
        }
        guard makeFolder(cacheFolder) else {
            Log.warning("cannot create the cache folder \(Log.quoted(cacheFolder)): \(String(cString: strerror(errno))); a stored tree cannot be tied to this access token")
            return nil
        }
        var generator = SystemRandomNumberGenerator()
        let key = (0..<keyLength).map { _ in UInt8.random(in: 0...255, using: &generator) }
        let temporary = path + ".new-\(getpid())"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        if fd >= 0 {
            let written = key.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            let synced = fsync(fd) == 0
            close(fd)
            // link() fails when another mount made the key first: then theirs is the key.
            if written == keyLength && synced { _ = link(temporary, path) }
            unlink(temporary)
        }
        switch read(path) {
        case .key(let key): return key
        case .unusable: return nil
        case .missing: break
        }
        Log.warning("cannot make the key \(Log.quoted(path)) that ties stored trees to access tokens; no stored tree is served offline with an access token")
        return nil
    }

    private enum KeyFile {
        case key([UInt8])
        case missing
        /// There, but not a key to trust (logged).
        case unusable
    }

    /// The key at `path` when it is a regular file of exactly `keyLength` bytes that only its
    /// owner (this user) can read or write.
    private static func read(_ path: String) -> KeyFile {
        let fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
        guard fd >= 0 else {
            if errno == ENOENT { return .missing }
            Log.warning("cannot read the key \(Log.quoted(path)): \(String(cString: strerror(errno))); a stored tree cannot be tied to this access token")
            return .unusable
        }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG, info.st_mode & 0o077 == 0,
            info.st_uid == getuid(), info.st_size == off_t(keyLength)
        else {
            Log.warning("the key \(Log.quoted(path)) is not a private file of \(keyLength) bytes: not used (delete it to make a new one)")
            return .unusable
        }
        var key = [UInt8](repeating: 0, count: keyLength)
        let n = key.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, keyLength) }
        return n == keyLength ? .key(key) : .unusable
    }

    /// mkdir -p with 0700 for the folders it makes.
    private static func makeFolder(_ folder: String) -> Bool {
        var built = ""
        for component in folder.split(separator: "/", omittingEmptySubsequences: true) {
            built += "/" + component
            if mkdir(built, 0o700) != 0 && errno != EEXIST { return false }
        }
        return true
    }
}

extension String {
    fileprivate func leftPadded(to width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}
