// An open file descriptor and the calls made on it (open, read, pread, write, pwrite, close,
// status flags), each under the retry rules of Errno.swift. A descriptor is a plain value: who
// opened it closes it, as with the Int32 it wraps.

#if canImport(Glibc)
    import Glibc
#endif

public struct FileDescriptor: RawRepresentable, Hashable, Sendable {
    public let rawValue: Int32

    public init(rawValue: Int32) { self.rawValue = rawValue }

    public static let standardInput = FileDescriptor(rawValue: 0)
    public static let standardOutput = FileDescriptor(rawValue: 1)
    public static let standardError = FileDescriptor(rawValue: 2)

    /// open(2) of `path` with `flags` (O_CLOEXEC is the caller's to give), `permissions` for a
    /// file it creates.
    public static func open(
        _ path: String, _ flags: Int32, permissions: mode_t = 0, retryOnInterrupt: Bool = true
    ) throws(Errno) -> FileDescriptor {
        FileDescriptor(rawValue: try systemCall(retryOnInterrupt: retryOnInterrupt) { Glibc.open(path, flags, permissions) })
    }

    /// close(2), never retried: the descriptor is gone even when it reports EINTR.
    public func close() throws(Errno) {
        if Glibc.close(rawValue) != 0 { throw Errno.current }
    }

    // MARK: One call

    /// One read(2) into `buffer`, or pread(2) at `offset`: the count read, 0 at the end of the
    /// file, maybe fewer than asked.
    public func read(
        fromAbsoluteOffset offset: Int64? = nil, into buffer: UnsafeMutableRawBufferPointer, retryOnInterrupt: Bool = true
    ) throws(Errno) -> Int {
        try systemCall(retryOnInterrupt: retryOnInterrupt) {
            guard let offset else { return Glibc.read(rawValue, buffer.baseAddress, buffer.count) }
            return pread(rawValue, buffer.baseAddress, buffer.count, off_t(offset))
        }
    }

    /// One write(2) of `buffer`, or pwrite(2) at `offset`: the count written, maybe fewer than given.
    public func write(
        toAbsoluteOffset offset: Int64? = nil, _ buffer: UnsafeRawBufferPointer, retryOnInterrupt: Bool = true
    ) throws(Errno) -> Int {
        try systemCall(retryOnInterrupt: retryOnInterrupt) {
            guard let offset else { return Glibc.write(rawValue, buffer.baseAddress, buffer.count) }
            return pwrite(rawValue, buffer.baseAddress, buffer.count, off_t(offset))
        }
    }

    // MARK: Whole buffers

    /// Reads (from `offset`, with pread) until `buffer` is full or the file ends: the count read,
    /// fewer than `buffer.count` only at the end of the file.
    public func read(
        fromAbsoluteOffset offset: Int64? = nil, filling buffer: UnsafeMutableRawBufferPointer,
        retryOnInterrupt: Bool = true
    ) throws(Errno) -> Int {
        try Self.fill(buffer.count) { done throws(Errno) in
            try read(
                fromAbsoluteOffset: offset.map { $0 + Int64(done) },
                into: UnsafeMutableRawBufferPointer(rebasing: buffer[done...]), retryOnInterrupt: retryOnInterrupt)
        }
    }

    /// Writes all of `buffer` (from `offset`, with pwrite); a write that takes nothing is EIO.
    public func writeAll(
        toAbsoluteOffset offset: Int64? = nil, _ buffer: UnsafeRawBufferPointer, retryOnInterrupt: Bool = true
    ) throws(Errno) {
        let done = try Self.fill(buffer.count) { done throws(Errno) in
            try write(
                toAbsoluteOffset: offset.map { $0 + Int64(done) }, UnsafeRawBufferPointer(rebasing: buffer[done...]),
                retryOnInterrupt: retryOnInterrupt)
        }
        if done < buffer.count { throw Errno.ioError }
    }

    /// The short-transfer rule: calls `step` with the count done so far until `count` is done or a
    /// step moves nothing (the end of a file); the count done.
    static func fill(_ count: Int, _ step: (_ done: Int) throws(Errno) -> Int) throws(Errno) -> Int {
        var done = 0
        while done < count {
            let moved = try step(done)
            if moved <= 0 { break }
            done += moved
        }
        return done
    }

    // MARK: Flags

    /// The file status flags (fcntl F_GETFL), e.g. O_NONBLOCK.
    public func statusFlags() throws(Errno) -> Int32 {
        try systemCall { fcntl(rawValue, F_GETFL) }
    }

    public func setStatusFlags(_ flags: Int32) throws(Errno) {
        _ = try systemCall { fcntl(rawValue, F_SETFL, flags) }
    }
}
