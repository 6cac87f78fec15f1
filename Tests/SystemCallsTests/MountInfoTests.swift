// The one parser of /proc/self/mountinfo: the fields after the optional ones are found from the
// lone "-", whatever the number of optional fields; the kernel's \ooo escapes are undone in the
// mount point and the source; lines without the fields up to the type are skipped.

import Foundation
import Testing

@testable import SystemCalls

@Suite struct MountInfoTests {
    @Test func fieldsAfterAnyNumberOfOptionalFields() throws {
        let none = try #require(MountInfo.parse("36 35 98:0 /mnt1 /mnt2 rw,noatime - ext3 /dev/root rw,errors=continue\n"))
        #expect(none.device == "98:0")
        #expect(none.mountPoint == "/mnt2")
        #expect(none.fileSystemType == "ext3")
        #expect(none.source == "/dev/root")
        #expect(none.superOptions == "rw,errors=continue")
        let several = try #require(
            MountInfo.parse("36 35 98:0 / /mnt rw master:1 shared:2 propagate_from:3 unbindable - tmpfs tmp rw"))
        #expect(several.fileSystemType == "tmpfs")
        #expect(several.source == "tmp")
        #expect(several.superOptions == "rw", "no newline: the last field is whole")
    }

    @Test func escapedNamesAreUndone() throws {
        let entry = try #require(
            MountInfo.parse(
                "412 30 0:57 / /home/ann/my\\040drop\\011box\\134x rw shared:250 - fuse.dropboxfs ann\\040work rw,user_id=1000\n"))
        #expect(entry.mountPoint == "/home/ann/my drop\tbox\\x")
        #expect(entry.source == "ann work")
        #expect(entry.isMounted(at: "/home/ann/my drop\tbox\\x"))
        #expect(entry.fuseUserID == 1000)
        #expect(MountInfo.unescape("a\\012b") == "a\nb")
        #expect(MountInfo.unescape("not\\89octal\\04") == "not\\89octal\\04")
    }

    @Test func aMountPointNamedLikeTheSeparatorIsNotTheSeparator() throws {
        // "-" inside a path is part of its field; only a field that is "-" alone separates.
        let entry = try #require(MountInfo.parse("50 30 0:70 / /mnt/- rw,relatime - fuse.dropboxfs a-b rw,user_id=0\n"))
        #expect(entry.mountPoint == "/mnt/-")
        #expect(entry.fileSystemType == "fuse.dropboxfs")
        #expect(entry.source == "a-b")
    }

    @Test func shortAndBrokenLinesAreSkippedOrPartial() throws {
        for line in ["", "\n", "garbage", "1 2 3 4 5 6 7", "1 2 0:1 / /x rw -", "1 2 0:1 / /x rw -\n", "- ext4"] {
            #expect(MountInfo.parse(line) == nil, "\(line.debugDescription)")
        }
        let typeOnly = try #require(MountInfo.parse("1 2 0:1 / /x rw - ext4\n"))
        #expect(typeOnly.fileSystemType == "ext4")
        #expect(typeOnly.source == "")
        #expect(typeOnly.superOptions == "")
        let doubleSpaces = try #require(MountInfo.parse("1  2 0:1 / /x rw  - ext4 src  opts"))
        #expect(doubleSpaces.mountPoint == "/x")
        #expect(doubleSpaces.superOptions == "opts")
    }

    @Test func aFileIsReadLineByLineSkippingWhatDoesNotParse() throws {
        let path = NSTemporaryDirectory() + "/mountinfo-\(getpid())-\(UUID().uuidString)"
        let text = """
            25 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw
            not a mount line
            412 30 0:57 / /home/ann/drop\\040box rw - fuse.dropboxfs dropboxfs rw,user_id=1000
            """
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        defer { unlink(path) }
        let entries = MountInfo.entries(ofFile: path)
        #expect(entries.map(\.mountPoint) == ["/", "/home/ann/drop box"])
        #expect(MountInfo.entries(ofFile: path + ".missing") == [])
        #expect(MountInfo.entries().contains { $0.mountPoint == "/" }, "this process's own table has a root")
    }
}
