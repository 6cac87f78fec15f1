// Mount helper mode: mount(8) runs /sbin/mount.fuse3 for an fstab line of type fuse.dropboxfs,
// which runs `dropboxfs SOURCE MOUNTPOINT -o OPTIONS` (after taking out the options it handles
// itself: setuid=, drop_privileges, noauto, nofail, _netdev, user, users). SOURCE names the
// profile ("dropboxfs" or "default" for none); OPTIONS are checked by MountOptionList. The call
// becomes `dropboxfs mount MOUNTPOINT --profile SOURCE -o OPTIONS`, in the background as
// mount(8) expects, with the mount's source in the mount table set to SOURCE, so `mount -a` and
// findmnt match it with its fstab line.

#if canImport(Glibc)
    import Glibc
#endif

enum MountHelper {
    static let defaultSources: Set<String> = ["dropboxfs", "default"]

    /// `dropboxfs SOURCE MOUNTPOINT -o OPTIONS`, the shape mount.fuse3 gives a helper (it always
    /// passes the options, mount(8) adds at least rw or ro) with an absolute mount point (mount(8)
    /// makes it one), the first word not a command. Two stray words (`dropboxfs mout ~/dropbox`)
    /// are a mistyped command, never a mount.
    static func looksLikeHelperCall(_ arguments: [String]) -> Bool {
        guard arguments.count == 4, arguments[2] == "-o", !arguments[0].hasPrefix("-"), arguments[1].hasPrefix("/")
        else { return false }
        return Options.command(named: arguments[0]) == nil && arguments[0] != "help"
    }

    static func mountArguments(_ arguments: [String]) throws(UsageError) -> [String] {
        let source = arguments[0]
        let mountpoint = arguments[1]
        var result = [mountpoint]
        if !defaultSources.contains(source) {
            let name = try Profile.validated(source, source: "SOURCE")
            result += ["--profile", name]
        }
        // mount.fuse3 started with setuid=USER keeps root's environment, where HOME is root's.
        if let home = getenv("HOME"), !ownedByMe(String(cString: home)) {
            Environment.takeHomeFromUserDatabase()
        }
        result += ["-o", "fsname=\(source)"]
        result += arguments.dropFirst(2)
        return result
    }

    private static func ownedByMe(_ path: String) -> Bool {
        var st = stat()
        return stat(path, &st) == 0 && st.st_uid == getuid()
    }
}
