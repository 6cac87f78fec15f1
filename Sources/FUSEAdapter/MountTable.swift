// The kernel's mount table (/proc/self/mountinfo, parsed by SystemCalls/MountInfo.swift), read for
// three things: whether a folder is already a mount point, which dropboxfs mounts exist, and the
// device number of our own mount (to tune its read-ahead); and the one way to detach a mount the
// daemon no longer serves.

import SystemCalls

#if canImport(Glibc)
    import Glibc
#endif

public enum MountTable {
    /// Detaches the mount at `mountpoint` (umount2 MNT_DETACH as root, `fusermount3 -u -z`
    /// otherwise); true when it worked.
    public static func detach(_ mountpoint: String) -> Bool {
        if geteuid() == 0 { return umount2(mountpoint, Int32(MNT_DETACH)) == 0 }
        let words: [String] = ["fusermount3", "-u", "-z", "-q", mountpoint]
        let argv = words.map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var pid: pid_t = 0
        guard posix_spawnp(&pid, "fusermount3", nil, nil, argv, environ) == 0 else { return false }
        // A failed wait leaves the status at 0, as it always did.
        return ((try? waitForExit(pid)) ?? 0) == 0
    }

    /// Whether something is mounted at `path` that a new mount there would hide, i.e. anything
    /// but a topmost autofs mount: an fstab line with `x-systemd.automount` makes systemd mount
    /// autofs there first, and the first access runs the real mount on top of it.
    public static func isOccupied(_ path: String, in entries: [MountEntry]) -> Bool {
        guard let topmost = entries.last(where: { $0.isMounted(at: path) }) else { return false }
        return topmost.fileSystemType != "autofs"
    }

    /// The mounts of /proc/self/mountinfo (SystemCalls/MountInfo.swift parses it).
    public static func entries() -> [MountEntry] { MountInfo.entries() }
}
