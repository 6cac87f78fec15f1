// `-o OPTIONS`, as fstab lines, mount(8) and mount.fuse3 give them: each item is one of
//   - a long option of `dropboxfs mount` that may stand in an fstab line, as NAME or NAME=VALUE
//     (underscores for dashes: cache_size=4G, allow_other, timeouts=rpc=30s:stall=10s);
//   - an option of fstab or mount(8) that is not for dropboxfs (noauto, nofail, _netdev, user,
//     users, x-systemd.*, dev, suid, exec, ...): accepted and ignored, since every mount is
//     ro,nodev,nosuid whatever fstab says;
//   - a FUSE option passed on as given (allow_root, fsname=, max_read=, noexec: what libfuse and
//     fusermount3 accept).
// `rw` is accepted with one warning, and the mount is read-only all the same (as the kernel mounts
// read-only media asked for rw): mount(8) adds rw to every fstab line that does not say ro, so
// refusing it failed plain fstab lines. Anything else is a usage error, so a mistake in an fstab
// line is reported before anything is sent, never by libfuse after the checks.

import DropboxAPI
import Foundation
import Log

enum MountOptionList {
    /// Not for dropboxfs: what fstab, mount(8) and mount.fuse3 add or leave in.
    static let ignored: Set<String> = [
        "ro", "defaults", "auto", "noauto", "nofail", "_netdev", "user", "users", "nouser", "owner", "group",
        "dev", "nodev", "suid", "nosuid", "exec", "atime", "noatime", "relatime", "strictatime", "nodiratime",
        "diratime", "lazytime", "nolazytime", "sync", "async", "dirsync", "mand", "nomand", "silent", "loud",
    ]
    static let ignoredPrefixes = ["x-", "comment=", "user=", "helper="]
    /// Passed to libfuse as given.
    static let passed: Set<String> = ["allow_root", "noexec", "default_permissions"]
    static let passedPrefixes = ["fsname=", "max_read="]
    /// Older spellings of long options.
    static let aliases = ["nonempty": "allow-non-empty"]

    struct Expansion {
        /// Long options to parse as if given on the command line.
        var arguments: [String] = []
        /// Options for libfuse.
        var fuse: [String] = []
        /// Items accepted and ignored (logged at debug level).
        var ignored: [String] = []
        /// `rw` was given: ignored too, but with a warning (`readWriteWarning`), since it asks for
        /// what the mount will not do.
        var asksReadWrite = false
    }

    /// The one line `rw` costs, on stderr (and so in the log of a daemon).
    static let readWriteWarning =
        "mount option rw ignored: the mount is read-only whatever rw asks (dropboxfs only reads; mount(8) adds rw "
        + "to an fstab line without ro)"

    static func expand(_ lists: [String], command: CommandSpec = Options.mount) throws(UsageError) -> Expansion {
        var result = Expansion()
        for list in lists {
            for item in list.split(separator: ",", omittingEmptySubsequences: true).map(String.init) {
                let key = item.split(separator: "=", maxSplits: 1).first.map(String.init) ?? item
                let value = item.contains("=") ? String(item[item.index(after: item.firstIndex(of: "=")!)...]) : nil
                if item == "rw" {
                    result.asksReadWrite = true
                    continue
                }
                if ignored.contains(item) || ignoredPrefixes.contains(where: { item.hasPrefix($0) }) {
                    result.ignored.append(item)
                    continue
                }
                if key == "max_read" {
                    guard let value, let number = UInt32(value), number > 0 else {
                        throw UsageError(description: "mount option max_read must be a number of bytes (1 or more)")
                    }
                    _ = number
                }
                if key == "fsname", value?.isEmpty ?? true {
                    throw UsageError(description: "mount option fsname needs a value: fsname=NAME")
                }
                if passed.contains(item) || passedPrefixes.contains(where: { item.hasPrefix($0) }) {
                    result.fuse.append(item)
                    continue
                }
                let name = aliases[key] ?? key.replacingOccurrences(of: "_", with: "-")
                guard let option = command.options.first(where: { $0.name == name && $0.mountOption }) else {
                    // Only the name: the value of a mistyped item may be a secret (access_token=...).
                    throw UsageError(
                        description: "unknown mount option \(Log.quoted(key))\(value == nil ? "" : " (value not shown)") in -o (it takes the long options of "
                            + "`dropboxfs mount --help` as NAME or NAME=VALUE, e.g. cache_size=4G,allow_other)")
                }
                if option.isSwitch {
                    guard value == nil else { throw UsageError(description: "mount option \(key) takes no value") }
                    result.arguments.append("--" + option.name)
                } else {
                    guard let value, !value.isEmpty else {
                        throw UsageError(description: "mount option \(key) needs a value: \(key)=\(option.value ?? "VALUE")")
                    }
                    result.arguments.append("--\(option.name)=\(value)")
                }
            }
        }
        return result
    }
}
