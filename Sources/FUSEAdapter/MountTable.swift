// The kernel's mount table (/proc/self/mountinfo), read for three things: whether a folder is
// already a mount point, which dropboxfs mounts exist, and the device number of our own mount
// (to tune its read-ahead); and the one way to detach a mount the daemon no longer serves.

import DropboxFS

#if canImport(Glibc)
    import Glibc
#endif

public struct MountEntry: Sendable, Equatable {
    /// "major:minor" of the mounted device.
    public var device: String
    public var mountPoint: String
    /// e.g. "fuse.dropboxfs", "ext4".
    public var fileSystemType: String
    /// The filesystem's own options ("rw,user_id=1000,group_id=1000" for FUSE).
    public var superOptions: String = ""

    /// Whether this is the mount at `path`, compared byte for byte: Linux paths are bytes, and
    /// Swift's `==` takes two spellings of one text as equal (`café` composed and decomposed are
    /// two folders).
    public func isMounted(at path: String) -> Bool { mountPoint.utf8.elementsEqual(path.utf8) }

    /// The user who mounted a FUSE filesystem (its `user_id=` option), nil for other filesystems.
    public var fuseUserID: UInt32? {
        for option in superOptions.split(separator: ",") where option.hasPrefix("user_id=") {
            return UInt32(option.dropFirst("user_id=".count))
        }
        return nil
    }
}

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
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        return status == 0
    }

    /// Whether something is mounted at `path` that a new mount there would hide, i.e. anything
    /// but a topmost autofs mount: an fstab line with `x-systemd.automount` makes systemd mount
    /// autofs there first, and the first access runs the real mount on top of it.
    public static func isOccupied(_ path: String, in entries: [MountEntry]) -> Bool {
        guard let topmost = entries.last(where: { $0.isMounted(at: path) }) else { return false }
        return topmost.fileSystemType != "autofs"
    }

    public static func entries() -> [MountEntry] {
        var result: [MountEntry] = []
        forEachLine(ofFile: "/proc/self/mountinfo") { line in
            if let entry = parse(line) { result.append(entry) }
            return true
        }
        return result
    }

    /// Parses one mountinfo line: "ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS [FIELDS...] - TYPE SOURCE ...".
    static func parse(_ line: String) -> MountEntry? {
        let fields = line.split(separator: " ", omittingEmptySubsequences: true)
        guard fields.count > 4, let dash = fields.firstIndex(of: "-"), dash + 1 < fields.count else { return nil }
        return MountEntry(
            device: String(fields[2]), mountPoint: unescape(String(fields[4])), fileSystemType: String(fields[dash + 1]),
            superOptions: dash + 3 < fields.count ? String(fields[dash + 3]).trimmingNewline : "")
    }

    /// Mount table fields escape space, tab, newline and backslash as \ooo.
    public static func unescape(_ field: String) -> String {
        var bytes: [UInt8] = []
        let utf8 = Array(field.utf8)
        var i = 0
        while i < utf8.count {
            if utf8[i] == UInt8(ascii: "\\"), i + 4 <= utf8.count {
                let digits = utf8[(i + 1)..<(i + 4)]
                if digits.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "7") }) {
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
}

extension String {
    fileprivate var trimmingNewline: String { hasSuffix("\n") ? String(dropLast()) : self }
}
