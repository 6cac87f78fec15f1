// Delivery of kernel cache invalidations. Tree changes are collected under the tree's lock and
// handed to the FUSE layer afterwards on one serial queue: libfuse forbids calling the
// notify_inval functions from the path of a related request (the kernel may hold the folder's lock
// while it waits for our reply), so no request waits for a delivery, with one exception: a lookup
// after a lean walk waits for the drop of cached folder listings (`publishAndWait`, inode
// invalidations only: the kernel's notify_inval_inode takes no folder lock, only the cached pages).
//
// Every batch is delivered a second time a moment later. A reply built before a change (a
// readdir piece, a lookup's "no such name") can reach the kernel's caches after the change's
// invalidation was processed; the kernel's own checks catch most of these (attribute versions,
// the folder mtime check of cached listings), but not a listing cache begun by another reader in
// between, nor a negative dentry. The repeat drops whatever such a late reply left behind. (A
// reply that takes longer than the delay to reach the kernel, e.g. a huge folder read slowly, is
// not covered; the next change of that folder is.)

import Dispatch
import Synchronization

/// A kernel cache entry made stale by a tree change.
public enum Invalidation: Sendable, Equatable {
    /// The name `name` in folder `parent` now means something else (or nothing).
    case entry(parent: UInt64, name: String)
    /// The attributes or contents of `inode` changed.
    case inode(UInt64)
}

final class InvalidationPublisher: Sendable {
    /// Guards the sink, which the FUSE layer installs once mounted.
    private let sink = Mutex<(@Sendable ([Invalidation]) -> Void)?>(nil)
    private let queue = DispatchQueue(label: "dropboxfs.invalidations")
    /// Delay of the second delivery, milliseconds (nil: none).
    private let repeatMilliseconds: Int?

    init(repeatAfter seconds: Double? = 1) {
        repeatMilliseconds = seconds.map { Int(($0 * 1000).rounded()) }
    }

    func setSink(_ newSink: (@Sendable ([Invalidation]) -> Void)?) {
        sink.withLock { $0 = newSink }
    }

    func publish(_ invalidations: [Invalidation], delivered: (@Sendable () -> Void)? = nil) {
        guard !invalidations.isEmpty, let deliver = sink.withLock({ $0 }) else {
            delivered?()
            return
        }
        var seen = Set<InvalidationKey>()
        let unique = invalidations.filter { seen.insert(InvalidationKey($0)).inserted }
        queue.async {
            deliver(unique)
            delivered?()
        }
        if let repeatMilliseconds {
            queue.asyncAfter(deadline: .now() + .milliseconds(repeatMilliseconds)) { deliver(unique) }
        }
    }

    /// Publishes, and returns once the first delivery is done (at once without a sink).
    func publishAndWait(_ invalidations: [Invalidation]) async {
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            publish(invalidations) { done.resume() }
        }
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
