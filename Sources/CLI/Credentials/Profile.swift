// Account profiles (`--profile NAME`, or DROPBOXFS_PROFILE): several Dropbox accounts side by side,
// each with its own sign-in, cache folder (content cache and stored trees), log file and default
// mount point. Without a profile the paths are the ones dropboxfs always used:
//
//   sign-in      $XDG_CONFIG_HOME/dropboxfs/credentials.json    .../dropboxfs/profiles/NAME/credentials.json
//   cache        $XDG_CACHE_HOME/dropboxfs/                     .../dropboxfs/profiles/NAME/
//   log          $XDG_STATE_HOME/dropboxfs/dropboxfs.log        .../dropboxfs/dropboxfs-NAME.log
//   mount point  ~/dropbox                                      ~/dropbox-NAME
//
// The default profile's cache holds a `profiles` folder, which no account's content cache or
// stored tree uses as a name (they live in content/ and trees/).

import DropboxAPI
import Log

struct Profile: Sendable, Equatable {
    /// nil: the default profile.
    var name: String?
    var environment: [String: String]

    static let variable = "DROPBOXFS_PROFILE"

    /// --profile, else DROPBOXFS_PROFILE, else the default; a bad name is a usage error.
    static func resolve(_ parsed: ParsedArguments, environment: [String: String]) throws(UsageError) -> Profile {
        if let given = parsed.value("profile") {
            return Profile(name: try validated(given, source: "--profile"), environment: environment)
        }
        if let given = environment[variable], !given.isEmpty {
            return Profile(name: try validated(given, source: variable), environment: environment)
        }
        return Profile(name: nil, environment: environment)
    }

    /// A name usable in a file name and a mount point's: 1 to 64 letters, digits, '-' and '_',
    /// starting with a letter or digit.
    static func validated(_ name: String, source: String) throws(UsageError) -> String {
        let allowed = name.unicodeScalars.allSatisfy { scalar in
            scalar.isASCII && (scalar.properties.isAlphabetic || ("0"..."9").contains(scalar) || scalar == "-" || scalar == "_")
        }
        guard !name.isEmpty, name.count <= 64, allowed, name.first != "-", name.first != "_" else {
            throw UsageError(
                description: "\(source): profile name \(Log.quoted(name)) must be 1 to 64 letters, digits, '-' or '_', starting with a letter or digit")
        }
        return name
    }

    var home: String { environment["HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? "/" }

    private func xdg(_ variable: String, default fallback: String) -> String {
        if let value = environment[variable], value.hasPrefix("/") { return value }
        return home + "/" + fallback
    }

    /// Where the sign-in is stored.
    var configFolder: String {
        let base = xdg("XDG_CONFIG_HOME", default: ".config") + "/dropboxfs"
        return name.map { base + "/profiles/" + $0 } ?? base
    }

    /// CACHE_DIR: the content cache (content/) and the stored trees (trees/).
    var cacheFolder: String {
        let base = xdg("XDG_CACHE_HOME", default: ".cache") + "/dropboxfs"
        return name.map { base + "/profiles/" + $0 } ?? base
    }

    /// The freedesktop thumbnail cache file managers read (`$XDG_CACHE_HOME/thumbnails`): the
    /// user's, whatever the profile.
    var thumbnailFolder: String { xdg("XDG_CACHE_HOME", default: ".cache") + "/thumbnails" }

    /// The folder of the background daemon's log.
    var stateFolder: String { xdg("XDG_STATE_HOME", default: ".local/state") + "/dropboxfs" }

    var logFile: String { stateFolder + "/" + (name.map { "dropboxfs-\($0).log" } ?? "dropboxfs.log") }

    var defaultMountpoint: String { home + "/" + (name.map { "dropbox-\($0)" } ?? "dropbox") }

    /// The mount's source in the mount table (`df`, `findmnt`): "dropboxfs", or the profile's name.
    var fsname: String { name ?? "dropboxfs" }

    /// For messages: "" or " (profile work)".
    var suffix: String { name.map { " (profile \($0))" } ?? "" }

    /// For commands shown in messages: "" or " --profile work".
    var flag: String { name.map { " --profile \($0)" } ?? "" }
}
