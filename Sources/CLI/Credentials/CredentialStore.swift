// The stored sign-in: app key and refresh token in $XDG_CONFIG_HOME/dropboxfs/credentials.json
// (default ~/.config/dropboxfs; a profile's in profiles/NAME there, Profile.swift). The folder is 0700 and the file 0600 from the moment it exists:
// it is created with those modes (O_EXCL, never chmod'ed later), written, synced and renamed into
// place, so no other user can read it even for an instant and a crash never leaves half a file.

import Foundation

#if canImport(Glibc)
    import Glibc
#endif

struct StoredCredentials: Codable, Equatable {
    var appKey: String
    var refreshToken: String
    var accountId: String?
    var email: String?

    enum CodingKeys: String, CodingKey {
        case appKey = "app_key"
        case refreshToken = "refresh_token"
        case accountId = "account_id"
        case email
    }
}

enum CredentialStore {
    static func directory(_ profile: Profile) -> String { profile.configFolder }

    static func path(_ profile: Profile) -> String {
        directory(profile) + "/credentials.json"
    }

    /// The stored credentials, nil when there are none.
    static func load(_ profile: Profile) throws(CommandFailure) -> StoredCredentials? {
        let file = path(profile)
        guard access(file, F_OK) == 0 else { return nil }
        guard let data = FileManager.default.contents(atPath: file) else {
            throw CommandFailure(.credentials, "cannot read \(file): \(String(cString: strerror(errno)))")
        }
        guard let credentials = try? JSONDecoder().decode(StoredCredentials.self, from: data),
            !credentials.refreshToken.isEmpty, !credentials.appKey.isEmpty
        else {
            throw CommandFailure(.credentials, "\(file) is damaged: run `dropboxfs auth\(profile.flag)` again")
        }
        return credentials
    }

    static func save(_ credentials: StoredCredentials, _ profile: Profile) throws(CommandFailure) {
        let folder = directory(profile)
        try makePrivateDirectory(folder)
        let target = path(profile)
        let temporary = folder + "/.credentials.\(getpid()).tmp"
        unlink(temporary)
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw failure("cannot create", temporary) }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        let bytes = Array((try? encoder.encode(credentials)) ?? Data())
        var written = 0
        while written < bytes.count {
            let n = bytes.withUnsafeBytes { write(fd, $0.baseAddress! + written, bytes.count - written) }
            if n <= 0 {
                close(fd)
                unlink(temporary)
                throw failure("cannot write", temporary)
            }
            written += n
        }
        guard fsync(fd) == 0, close(fd) == 0 else {
            unlink(temporary)
            throw failure("cannot write", temporary)
        }
        guard rename(temporary, target) == 0 else {
            unlink(temporary)
            throw failure("cannot save", target)
        }
        let dirFD = open(folder, O_RDONLY | O_DIRECTORY)
        if dirFD >= 0 {
            fsync(dirFD)
            close(dirFD)
        }
    }

    /// Removes the stored credentials; true when there were some.
    @discardableResult
    static func delete(_ profile: Profile) -> Bool {
        unlink(path(profile)) == 0
    }

    /// Creates `folder` (and missing parents) so that the dropboxfs folder is 0700.
    private static func makePrivateDirectory(_ folder: String) throws(CommandFailure) {
        var prefix = ""
        for component in folder.split(separator: "/") {
            prefix += "/" + component
            if mkdir(prefix, 0o700) != 0 && errno != EEXIST { throw failure("cannot create", prefix) }
        }
        // An existing folder from an older run may be wider: it is ours, so make it private.
        guard chmod(folder, 0o700) == 0 else { throw failure("cannot secure", folder) }
    }

    private static func failure(_ what: String, _ path: String) -> CommandFailure {
        CommandFailure(.failure, "\(what) \(path): \(String(cString: strerror(errno)))")
    }
}
