// FileDescriptor on real descriptors: one read returns what is there (a short read), the filling
// read collects several writes up to the end of the file, pread and pwrite keep to their offsets,
// and errors come back as Errno.

import Foundation
import Testing

@testable import SystemCalls

#if canImport(Glibc)
    import Glibc
#endif

@Suite struct FileDescriptorTests {
    @Test func oneReadReturnsWhatIsThere() throws {
        let pipe = try Pipe()
        defer { pipe.close() }
        try Array("abc".utf8).withUnsafeBytes { try pipe.writeEnd.writeAll($0) }
        var buffer = [UInt8](repeating: 0, count: 16)
        let n = try buffer.withUnsafeMutableBytes { bytes in try pipe.readEnd.read(into: bytes) }
        #expect(n == 3)
        #expect(Array(buffer[..<n]) == Array("abc".utf8))
    }

    @Test func aFillingReadCollectsSeveralWritesUntilTheEnd() throws {
        let pipe = try Pipe()
        try Array("one ".utf8).withUnsafeBytes { try pipe.writeEnd.writeAll($0) }
        try Array("two".utf8).withUnsafeBytes { try pipe.writeEnd.writeAll($0) }
        try pipe.writeEnd.close()
        defer { try? pipe.readEnd.close() }
        var buffer = [UInt8](repeating: 0, count: 16)
        let n = try buffer.withUnsafeMutableBytes { bytes in try pipe.readEnd.read(filling: bytes) }
        #expect(String(decoding: buffer[..<n], as: UTF8.self) == "one two")
    }

    @Test func aFillingReadStopsWhenTheBufferIsFull() throws {
        let pipe = try Pipe()
        defer { pipe.close() }
        try Array("abcdef".utf8).withUnsafeBytes { try pipe.writeEnd.writeAll($0) }
        var buffer = [UInt8](repeating: 0, count: 4)
        let n = try buffer.withUnsafeMutableBytes { bytes in try pipe.readEnd.read(filling: bytes) }
        #expect(n == 4)
        #expect(buffer == Array("abcd".utf8))
    }

    @Test func positionedReadsAndWritesKeepToTheirOffsets() throws {
        let path = NSTemporaryDirectory() + "/systemcalls-\(getpid())-\(UUID().uuidString)"
        let file = try FileDescriptor.open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, permissions: 0o600)
        defer {
            try? file.close()
            unlink(path)
        }
        try Array("0123456789".utf8).withUnsafeBytes { try file.writeAll(toAbsoluteOffset: 0, $0) }
        try Array("ab".utf8).withUnsafeBytes { try file.writeAll(toAbsoluteOffset: 4, $0) }
        var buffer = [UInt8](repeating: 0, count: 8)
        let n = try buffer.withUnsafeMutableBytes { bytes in
            try file.read(fromAbsoluteOffset: 3, filling: bytes)
        }
        #expect(n == 7, "short only at the end of the file")
        #expect(String(decoding: buffer[..<n], as: UTF8.self) == "3ab6789")
        var info = stat()
        #expect(fstat(file.rawValue, &info) == 0)
        #expect(info.st_mode & 0o777 == 0o600)
    }

    @Test func errorsComeBackAsErrno() throws {
        #expect(throws: Errno.noSuchFile) {
            try FileDescriptor.open("/nonexistent-\(getpid())/file", O_RDONLY | O_CLOEXEC)
        }
        let pipe = try Pipe()
        try pipe.readEnd.close()
        defer { try? pipe.writeEnd.close() }
        // The reader is gone: EPIPE (SIGPIPE ignored here, as the daemon does not die of it either).
        let old = signal(SIGPIPE, SIG_IGN)
        defer { signal(SIGPIPE, old) }
        #expect(throws: Errno(rawValue: EPIPE)) {
            try Array("x".utf8).withUnsafeBytes { bytes in try pipe.writeEnd.writeAll(bytes) }
        }
        #expect(Errno(rawValue: ENOENT).description == "No such file or directory")
    }

    @Test func statusFlagsAreReadAndSet() throws {
        let pipe = try Pipe()
        defer { pipe.close() }
        let flags = try pipe.readEnd.statusFlags()
        try pipe.readEnd.setStatusFlags(flags | O_NONBLOCK)
        #expect(try pipe.readEnd.statusFlags() & O_NONBLOCK != 0)
        var byte: UInt8 = 0
        #expect(throws: Errno.wouldBlock) {
            try withUnsafeMutableBytes(of: &byte) { bytes in _ = try pipe.readEnd.read(into: bytes) }
        }
    }
}
