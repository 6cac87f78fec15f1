// Log lines decided while the tree's lock is held (a name the kernel cannot carry, a folder Dropbox
// never listed) are written after, from a serial queue of their own: writing a line is I/O (a log
// file on a slow or full disk, a pipe nobody reads, a journal that throttles), and every FUSE
// request takes that lock. The line is built under the lock (it names the tree's paths) and only
// its writing waits for the queue; lines keep their order among themselves.

import Dispatch
import Log

enum OffLockLog {
    private static let queue = DispatchQueue(label: "dropboxfs.off-lock-log")

    static func warning(_ message: String) {
        queue.async { Log.warning(message) }
    }

    /// Waits until the lines queued so far are written (tests).
    static func flush() {
        queue.sync {}
    }
}
