// The mount table as the thin FUSE layer reads it (parsed by SystemCalls' MountInfo): which mounts
// are dropboxfs mounts, whose they are (`dropboxfs status` asks only the user's own), the kernel's
// escapes in mount points, and which mount points are taken.

import SystemCalls
import Testing

@testable import FUSEAdapter

@Suite struct MountTableTests {
    static let mine =
        "412 30 0:57 / /home/ann/drop\\040box rw,nosuid,nodev,relatime shared:250 - fuse.dropboxfs dropboxfs rw,user_id=1000,group_id=1000,default_permissions\n"
    static let theirs =
        "413 30 0:58 / /home/bob/dropbox rw,nosuid,nodev,relatime - fuse.dropboxfs dropboxfs rw,user_id=1001,group_id=1001\n"
    static let disk = "25 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw,errors=remount-ro\n"

    @Test func parsesTypeMountPointAndOwner() throws {
        let entry = try #require(MountInfo.parse(Self.mine))
        #expect(entry.fileSystemType == "fuse.dropboxfs")
        #expect(entry.mountPoint == "/home/ann/drop box")
        #expect(entry.device == "0:57")
        #expect(entry.fuseUserID == 1000)
        #expect(MountInfo.parse(Self.theirs)?.fuseUserID == 1001)
        #expect(MountInfo.parse(Self.disk)?.fuseUserID == nil)
        #expect(MountInfo.parse(Self.disk)?.fileSystemType == "ext4")
    }

    @Test func brokenLinesAreSkipped() {
        for line in ["", "garbage", "1 2 3 4 5 6 7", "1 2 0:1 / /x rw -"] {
            #expect(MountInfo.parse(line) == nil, "\(line.debugDescription)")
        }
    }

    @Test func escapesAreUndone() {
        #expect(MountInfo.unescape("a\\040b\\011c\\012d\\134e") == "a b\tc\nd\\e")
        #expect(MountInfo.unescape("trailing\\04") == "trailing\\04")
    }

    /// systemd's automount (an fstab line with x-systemd.automount) mounts autofs at the folder
    /// first, and its first access runs the real mount on top: that is not "already mounted".
    @Test func aTopmostAutofsMountLeavesThePathFree() throws {
        let autofs = try #require(
            MountInfo.parse("90 30 0:60 / /home/ann/dropbox rw,relatime shared:60 - autofs systemd-1 rw,fd=47,pgrp=1,timeout=0,minproto=5,maxproto=5,direct\n"))
        let fuse = try #require(
            MountInfo.parse("91 90 0:61 / /home/ann/dropbox rw,nosuid,nodev shared:61 - fuse.dropboxfs work rw,user_id=1000,group_id=1000\n"))
        let disk = try #require(MountInfo.parse(Self.disk))
        #expect(!MountTable.isOccupied("/home/ann/dropbox", in: [disk, autofs]), "autofs waiting for the first access")
        #expect(MountTable.isOccupied("/home/ann/dropbox", in: [disk, autofs, fuse]), "mounted on top of it")
        #expect(MountTable.isOccupied("/home/ann/dropbox", in: [disk, fuse]))
        #expect(!MountTable.isOccupied("/home/ann/other", in: [disk, autofs, fuse]))
        #expect(MountTable.isOccupied("/", in: [disk]))
    }
}
