// Delivery of kernel cache invalidations. Tree changes are collected under the state lock and
// handed to the FUSE layer afterwards on one serial queue: libfuse forbids calling the
// notify_inval functions from the path of a related request (the kernel may hold the folder's lock
// while it waits for our reply), so no request ever waits for a delivery.

import Dispatch
import Synchronization

final class InvalidationPublisher: Sendable {
    /// Guards the sink, which the FUSE layer installs once mounted.
    private let sink = Mutex<(@Sendable ([Invalidation]) -> Void)?>(nil)
    private let queue = DispatchQueue(label: "dropboxfs.invalidations")

    func setSink(_ newSink: (@Sendable ([Invalidation]) -> Void)?) {
        sink.withLock { $0 = newSink }
    }

    func publish(_ invalidations: [Invalidation]) {
        guard !invalidations.isEmpty, let deliver = sink.withLock({ $0 }) else { return }
        var seen = Set<InvalidationKey>()
        let unique = invalidations.filter { seen.insert(InvalidationKey($0)).inserted }
        queue.async { deliver(unique) }
    }
}

/// Hashable identity of an invalidation, comparing names by bytes.
private struct InvalidationKey: Hashable {
    let inode: UInt64
    let name: [UInt8]?

    init(_ invalidation: Invalidation) {
        switch invalidation {
        case .entry(let parent, let name):
            inode = parent
            self.name = Array(name.utf8)
        case .inode(let inode):
            self.inode = inode
            name = nil
        }
    }
}
