// Which requesting processes count as file managers: by the name of the process a thread belongs
// to, for the mounting user only, remembered per pid for two seconds.

import Foundation
import Synchronization
import Testing

@testable import DropboxFS

#if canImport(Glibc)
    import Glibc
#endif

@Suite struct FileManagersTests {
    /// Runs a copy of /bin/sleep named `name` for the duration of `body`.
    static func withProcess(named name: String, _ body: (Int32) throws -> Void) throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("fm-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let program = folder.appendingPathComponent(name)
        try FileManager.default.copyItem(atPath: "/bin/sleep", toPath: program.path)
        let process = Process()
        process.executableURL = program
        process.arguments = ["30"]
        try process.run()
        defer {
            // SIGKILL: the test runner's children may have SIGTERM blocked.
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
        try body(process.processIdentifier)
    }

    @Test func fileManagersByProcessName() throws {
        try Self.withProcess(named: "pcmanfm") { pid in
            #expect(FileManagers.processName(of: pid) == "pcmanfm")
            #expect(FileManagers().isFileManager(pid: pid, uid: getuid()))
            #expect(!FileManagers().isFileManager(pid: pid, uid: getuid() + 1), "another user's file manager")
        }
        for other in ["find", "du", "ls", "pcmanfm2", "rsync"] {
            try Self.withProcess(named: other) { pid in
                #expect(!FileManagers().isFileManager(pid: pid, uid: getuid()), "\(other)")
            }
        }
        #expect(!FileManagers().isFileManager(pid: 0, uid: getuid()))
    }

    /// Thumbnailers and content sniffers (any user's) read ranges; other programs read as usual.
    @Test func sniffersReadRanges() throws {
        for name in ["gdk-pixbuf-thum", "ffmpegthumbnail", "file", "tumblerd", "thunar"] {
            try Self.withProcess(named: name) { pid in
                #expect(FileManagers().readsRanges(pid: pid), "\(name)")
                #expect(FileManagers(owner: getuid() + 1).readsRanges(pid: pid), "\(name), another user's")
            }
        }
        for other in ["cat", "cp", "rsync", "vlc"] {
            try Self.withProcess(named: other) { pid in
                #expect(!FileManagers().readsRanges(pid: pid), "\(other)")
            }
        }
        #expect(!FileManagers().readsRanges(pid: 0))
        // The kernel keeps 15 bytes of a program's name: the list holds names as the kernel has them.
        #expect(FileManagers.sniffers.allSatisfy { $0.utf8.count <= 15 })
    }

    @Test func aThreadCountsAsItsProcess() throws {
        let ours = try String(contentsOfFile: "/proc/self/comm", encoding: .utf8).trimmingCharacters(in: .newlines)
        let tid = Mutex<Int32>(0)
        let done = DispatchSemaphore(value: 0)
        let started = DispatchSemaphore(value: 0)
        let thread = Thread {
            // The thread's own name and id, through /proc/thread-self ("PID/task/TID").
            try? "pool-pcmanfm".write(toFile: "/proc/thread-self/comm", atomically: false, encoding: .utf8)
            let link = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/thread-self")) ?? ""
            tid.withLock { $0 = Int32(link.split(separator: "/").last ?? "") ?? 0 }
            started.signal()
            done.wait()
        }
        thread.start()
        started.wait()
        defer { done.signal() }
        let threadID = tid.withLock { $0 }
        #expect(threadID > 0 && threadID != getpid())
        let threadName = try String(contentsOfFile: "/proc/\(threadID)/comm", encoding: .utf8)
        #expect(threadName == "pool-pcmanfm\n")
        #expect(FileManagers.processName(of: threadID) == ours)
    }

    @Test func answersAreRememberedBriefly() {
        let clock = Mutex<Double>(100)
        let asked = Mutex<Int>(0)
        let managers = FileManagers(
            owner: 7, now: { clock.withLock { $0 } },
            processName: { _ in
                asked.withLock { $0 += 1 }
                return "nautilus"
            })
        #expect(managers.isFileManager(pid: 42, uid: 7))
        clock.withLock { $0 += 1.5 }
        #expect(managers.isFileManager(pid: 42, uid: 7))
        #expect(asked.withLock { $0 } == 1)
        clock.withLock { $0 += 1 }
        #expect(managers.isFileManager(pid: 42, uid: 7))
        #expect(asked.withLock { $0 } == 2, "asked again after two seconds: pids are reused")
    }
}
