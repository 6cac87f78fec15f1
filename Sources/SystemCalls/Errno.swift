// The system layer: the few system calls the other layers make, wrapped once, in the style of
// apple/swift-system (a `FileDescriptor`, an `Errno`, typed throws), with the retry rules written
// down here and nowhere else. Before it, each layer looped on EINTR and short reads or writes by
// hand, and helpers that know only the kernel (reading /proc lines, naming readdir entries, the
// monotonic clock, counting usable CPUs, parsing the mount table) sat in the layer that first
// needed them. This target depends on Glibc alone, so every layer, the logger included, can use it.
//
// The retry rules:
// - EINTR: a call interrupted by a signal before it did anything is made again when
//   `retryOnInterrupt` is true (the default). A caller that must notice a stopping signal (a FUSE
//   callback, which libfuse's signal handlers interrupt) passes false and gets `Errno.interrupted`.
//   close() is never retried: on Linux the descriptor is released even when it reports EINTR.
// - Short reads and writes: `read(into:)` and `write(_:)` return what one call did, as read(2) and
//   write(2) do; the `filling` and `writeAll` forms loop until the buffer is done (or, reading,
//   the end of the file), each step retried on EINTR by the rule above.
//
// No state, no locks.

#if canImport(Glibc)
    import Glibc
#endif

/// An error number a system call failed with.
public struct Errno: Error, RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: Int32

    public init(rawValue: Int32) { self.rawValue = rawValue }

    /// The calling thread's errno, as the last failed call left it.
    public static var current: Errno { Errno(rawValue: errno) }

    public static let interrupted = Errno(rawValue: EINTR)
    public static let wouldBlock = Errno(rawValue: EAGAIN)
    public static let ioError = Errno(rawValue: EIO)
    public static let noSuchFile = Errno(rawValue: ENOENT)

    /// strerror's text, e.g. "No such file or directory".
    public var description: String { String(cString: strerror(rawValue)) }
}

/// Makes the system call `call` (which returns -1 and sets errno on failure, as most do), making it
/// again while it fails with EINTR if `retryOnInterrupt`: the one place the EINTR rule is written.
public func systemCall<Result: FixedWidthInteger>(
    retryOnInterrupt: Bool = true, _ call: () -> Result
) throws(Errno) -> Result {
    while true {
        let result = call()
        if result != -1 { return result }
        let error = Errno.current
        if retryOnInterrupt && error == .interrupted { continue }
        throw error
    }
}
