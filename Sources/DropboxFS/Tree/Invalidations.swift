// Delivery of kernel cache invalidations. Tree changes are collected under the tree's lock and
// handed to the FUSE layer afterwards on one serial queue: libfuse forbids calling the
// notify_inval functions from the path of a related request (the kernel may hold the folder's lock
// while it waits for our reply), so no request waits for a delivery on that queue.
//
// One request waits for a delivery of its own: a lookup of a file in a folder listed lean, which
// drops the kernel's cached lean listings before it answers (Filesystem/Walkers.swift). Those drops
// go through a second queue (`dropListings`), never behind the tree's entry invalidations, which
// take the folder's lock the lookup holds; they are inode invalidations only, which take no folder
// lock (the kernel drops the folder's cached pages); and the wait is capped.
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
    /// Guards the sink, which the FUSE layer installs once mounted (wrapped: StoredClosure.swift).
    private let sink = Mutex(StoredClosure<(@Sendable ([Invalidation]) -> Void)?>(nil))
    private let queue = DispatchQueue(label: "dropboxfs.invalidations")
    /// The drops of cached listings a lookup waits for (see the file comment).
    private let dropQueue = DispatchQueue(label: "dropboxfs.invalidations.drops")
    /// Delay of the second delivery, milliseconds (nil: none).
    private let repeatMilliseconds: Int?

    init(repeatAfter seconds: Double? = 1) {
        repeatMilliseconds = seconds.map { Int(($0 * 1000).rounded()) }
    }

    func setSink(_ newSink: (@Sendable ([Invalidation]) -> Void)?) {
        sink.withLock { $0.call = newSink }
    }

    /// Drops the kernel's cached listings of these folders (inode invalidations) on a queue of
    /// their own, and returns once that is done or after `seconds` (at once for 0), whichever
    /// comes first.
    func dropListings(_ folders: [UInt64], waitingAtMost seconds: Double) async {
        guard !folders.isEmpty, let deliver = sink.withLock({ $0.call }) else { return }
        let batch = folders.map { Invalidation.inode($0) }
        guard seconds > 0 else {
            dropQueue.async { deliver(batch) }
            return
        }
        let done = ResumeOnce()
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            done.hold(continuation)
            dropQueue.async {
                deliver(batch)
                done.resume()
            }
            DispatchQueue.global().asyncAfter(deadline: .now() + seconds) { done.resume() }
        }
    }

    func publish(_ invalidations: [Invalidation]) {
        guard !invalidations.isEmpty, let deliver = sink.withLock({ $0.call }) else { return }
        var seen = Set<InvalidationKey>()
        let unique = invalidations.filter { seen.insert(InvalidationKey($0)).inserted }
        queue.async { deliver(unique) }
        if let repeatMilliseconds {
            queue.asyncAfter(deadline: .now() + .milliseconds(repeatMilliseconds)) { deliver(unique) }
        }
    }
}

/// A continuation resumed by whichever comes first, the delivery or the deadline.
private final class ResumeOnce: Sendable {
    private let continuation = Mutex<CheckedContinuation<Void, Never>?>(nil)
    func hold(_ waiting: CheckedContinuation<Void, Never>) { continuation.withLock { $0 = waiting } }
    func resume() { continuation.withLock { $0.take() }?.resume() }
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
