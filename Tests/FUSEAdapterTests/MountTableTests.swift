// The mount table parser of the thin FUSE layer: which mounts are dropboxfs mounts, whose they are
// (`dropboxfs status` asks only the user's own), and the kernel's escapes in mount points.

import Testing

@testable import FUSEAdapter

@Suite struct MountTableTests {
    static let mine =
        "412 30 0:57 / /home/ann/drop\\040box rw,nosuid,nodev,relatime shared:250 - fuse.dropboxfs dropboxfs rw,user_id=1000,group_id=1000,default_permissions\n"
    static let theirs =
        "413 30 0:58 / /home/bob/dropbox rw,nosuid,nodev,relatime - fuse.dropboxfs dropboxfs rw,user_id=1001,group_id=1001\n"
    static let disk = "25 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw,errors=remount-ro\n"

    @Test func parsesTypeMountPointAndOwner() throws {
        let entry = try #require(MountTable.parse(Self.mine))
        #expect(entry.fileSystemType == "fuse.dropboxfs")
        #expect(entry.mountPoint == "/home/ann/drop box")
        #expect(entry.device == "0:57")
        #expect(entry.fuseUserID == 1000)
        #expect(MountTable.parse(Self.theirs)?.fuseUserID == 1001)
        #expect(MountTable.parse(Self.disk)?.fuseUserID == nil)
        #expect(MountTable.parse(Self.disk)?.fileSystemType == "ext4")
    }

    @Test func brokenLinesAreSkipped() {
        for line in ["", "garbage", "1 2 3 4 5 6 7", "1 2 0:1 / /x rw -"] {
            #expect(MountTable.parse(line) == nil, "\(line.debugDescription)")
        }
    }

    @Test func escapesAreUndone() {
        #expect(MountTable.unescape("a\\040b\\011c\\012d\\134e") == "a b\tc\nd\\e")
        #expect(MountTable.unescape("trailing\\04") == "trailing\\04")
    }
}
