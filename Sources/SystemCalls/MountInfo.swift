// The kernel's mount table (/proc/self/mountinfo), parsed here and only here: the adapter asks it
// whether a folder is a mount point and which device our mount has, the CLI which dropboxfs mounts
// exist, whose they are and what they mount.
//
// A line is "ID PARENT MAJOR:MINOR ROOT MOUNTPOINT OPTIONS [OPTIONAL FIELDS...] - TYPE SOURCE
// SUPEROPTIONS" (proc(5)); the optional fields are zero or more, so everything after them is found
// from the lone "-". The kernel writes space, tab, newline and backslash in a path as \ooo.

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
    /// What is mounted ("/dev/sda1"; a FUSE filesystem's fsname), "" when the line has none.
    public var source: String = ""
    /// The mount's own options ("ro,nosuid,nodev,relatime"), "" when the line has none.
    public var mountOptions: String = ""

    public init(
        device: String, mountPoint: String, fileSystemType: String, superOptions: String = "", source: String = "",
        mountOptions: String = ""
    ) {
        self.device = device
        self.mountPoint = mountPoint
        self.fileSystemType = fileSystemType
        self.superOptions = superOptions
        self.source = source
        self.mountOptions = mountOptions
    }

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

public enum MountInfo {
    /// The mounts in `file`, in the kernel's order (a mount on top of another comes after it);
    /// lines that do not parse are skipped, and a file that cannot be read has none.
    public static func entries(ofFile file: String = "/proc/self/mountinfo") -> [MountEntry] {
        var result: [MountEntry] = []
        forEachLine(ofFile: file) { line in
            if let entry = parse(line) { result.append(entry) }
            return true
        }
        return result
    }

    /// One mountinfo line (its newline may be kept), nil when it lacks the fields up to the type.
    public static func parse(_ line: String) -> MountEntry? {
        let text = line.hasSuffix("\n") ? line.dropLast() : Substring(line)
        let fields = text.split(separator: " ", omittingEmptySubsequences: true)
        guard fields.count > 4, let dash = fields.firstIndex(of: "-"), dash + 1 < fields.count else { return nil }
        return MountEntry(
            device: String(fields[2]), mountPoint: unescape(fields[4]), fileSystemType: String(fields[dash + 1]),
            superOptions: dash + 3 < fields.count ? String(fields[dash + 3]) : "",
            source: dash + 2 < fields.count ? unescape(fields[dash + 2]) : "",
            mountOptions: dash > 5 ? String(fields[5]) : "")
    }

    /// Undoes the kernel's \ooo escapes (of space, tab, newline and backslash); a backslash not
    /// followed by three octal digits is kept as it is.
    public static func unescape(_ field: some StringProtocol) -> String {
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
