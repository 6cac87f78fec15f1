// The small helpers of the system layer on real files and processes: lines of a text file,
// directory entries, the usable CPUs of an affinity line, the monotonic clock, waiting for a child.

import Foundation
import Testing

@testable import SystemCalls

#if canImport(Glibc)
    import Glibc
#endif

@Suite struct HelpersTests {
    @Test func linesKeepTheirNewlineAndStopWhenAsked() throws {
        let path = NSTemporaryDirectory() + "/lines-\(getpid())-\(UUID().uuidString)"
        try "one\ntwo\nthree".write(toFile: path, atomically: true, encoding: .utf8)
        defer { unlink(path) }
        var all: [String] = []
        #expect(forEachLine(ofFile: path) { all.append($0); return true })
        #expect(all == ["one\n", "two\n", "three"])
        var first: [String] = []
        forEachLine(ofFile: path) { first.append($0); return false }
        #expect(first == ["one\n"])
        #expect(!forEachLine(ofFile: path + ".missing") { _ in true })
    }

    @Test func directoryEntriesAreNamed() throws {
        let folder = NSTemporaryDirectory() + "/entries-\(getpid())-\(UUID().uuidString)"
        #expect(mkdir(folder, 0o700) == 0)
        defer { rmdir(folder) }
        for name in ["a file", "b"] {
            #expect(creat(folder + "/" + name, 0o600) >= 0)
        }
        defer { for name in ["a file", "b"] { unlink(folder + "/" + name) } }
        var names: [String] = []
        try forEachEntry(inDirectory: folder) { names.append($0); return true }
        #expect(names.sorted() == [".", "..", "a file", "b"])
        var count = 0
        try forEachEntry(inDirectory: folder) { _ in count += 1; return false }
        #expect(count == 1)
        #expect(throws: Errno.noSuchFile) { try forEachEntry(inDirectory: folder + "/missing") { _ in true } }
    }

    @Test func usableCPUsAreTheBitsOfTheAffinityMask() {
        #expect(UsableCPUs.allowed(inStatusLine: "Cpus_allowed:\t3\n") == 2)
        #expect(UsableCPUs.allowed(inStatusLine: "Cpus_allowed:\tff,00000001\n") == 9)
        #expect(UsableCPUs.allowed(inStatusLine: "Cpus_allowed_list:\t0-1\n") == nil)
        #expect(UsableCPUs.allowed(inStatusLine: "Threads:\t4\n") == nil)
        #expect(UsableCPUs.count() >= 1)
    }

    @Test func theMonotonicClockNeverGoesBack() {
        var last = SystemClock.monotonicSeconds()
        for _ in 0..<1000 {
            let now = SystemClock.monotonicSeconds()
            #expect(now >= last)
            last = now
        }
        #expect(SystemClock.realtime().tv_sec > 1_600_000_000)
    }

    @Test func waitingForAChildGivesItsStatus() throws {
        var pid: pid_t = 0
        let words = ["/bin/sh", "-c", "exit 3"]
        let argv = words.map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        #expect(posix_spawn(&pid, "/bin/sh", nil, nil, argv, environ) == 0)
        let status = try waitForExit(pid)
        #expect(status & 0x7f == 0)
        #expect((status >> 8) & 0xff == 3)
        #expect(throws: Errno(rawValue: ECHILD)) { try waitForExit(pid) }
    }
}
