// Telling systemd (a `Type=notify` unit) that the mount is ready and that it is stopping: the
// sd_notify protocol is one datagram of "KEY=value" lines to the AF_UNIX socket named in
// $NOTIFY_SOCKET (a path, or an abstract name written with a leading '@'), so no library is
// needed. The variable is taken out of the environment at start, so the processes the daemon
// starts (the mount guard, fusermount3) never send as if they were the service.

import DropboxAPI
import Log

#if canImport(Glibc)
    import Glibc
#endif

enum SystemdNotify {
    static let variable = "NOTIFY_SOCKET"

    /// The socket's address, read once (and removed from the environment) at first use.
    static let socketPath: String? = {
        guard let raw = getenv(variable) else { return nil }
        let path = String(cString: raw)
        unsetenv(variable)
        return path.isEmpty ? nil : path
    }()

    /// Call early in the daemon (before it starts any process).
    static func take() { _ = socketPath }

    static func ready(status: String) {
        _ = send("READY=1\nSTATUS=\(status)\nMAINPID=\(getpid())\n")
    }

    static func stopping() {
        _ = send("STOPPING=1\nSTATUS=unmounting\n")
    }

    /// Sends one datagram; false when there is no socket or sending failed (which never stops the
    /// mount: systemd then reports the start as timed out, with the daemon's log beside it).
    @discardableResult
    static func send(_ message: String) -> Bool {
        guard let path = socketPath else { return false }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        var bytes = Array(path.utf8)
        if bytes.first == UInt8(ascii: "@") { bytes[0] = 0 }  // abstract socket
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        guard !bytes.isEmpty, bytes.count < capacity, bytes.first == 0 || bytes.first == UInt8(ascii: "/") else {
            Log.warning("\(variable) is not a socket address systemd would give: ignored")
            return false
        }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (index, byte) in bytes.enumerated() { raw[index] = byte }
        }
        let length = socklen_t(MemoryLayout<sa_family_t>.size + bytes.count + (bytes.first == 0 ? 0 : 1))
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        let sent = message.withCString { text in
            withUnsafePointer(to: &address) { pointer in
                pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { sockaddrPointer in
                    sendto(fd, text, strlen(text), Int32(MSG_NOSIGNAL), sockaddrPointer, length)
                }
            }
        }
        if sent < 0 {
            Log.warning("cannot notify systemd through \(Log.quoted(path)): \(String(cString: strerror(errno)))")
            return false
        }
        return true
    }
}
