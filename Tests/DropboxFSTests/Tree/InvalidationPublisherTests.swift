// The publisher of kernel cache invalidations over a long uptime: its sink is read at every
// publish, and a closure held bare in a Mutex grew two thunks per read until the stack overflowed
// (Support/StoredClosure.swift). 100,000 publishes, about a month of change batches on a busy
// account, must all be delivered.

import Testing

@testable import DropboxFS

extension CoreTests {
    @Suite struct InvalidationPublisherTests {
        @Test func aLongRunOfPublishesIsDeliveredWhole() async throws {
            let publisher = InvalidationPublisher(repeatAfter: nil)
            let delivered = CoreTests.Locked(0)
            publisher.setSink { batch in delivered.value += batch.count }
            let rounds = 100_000
            for round in 0..<rounds { publisher.publish([.inode(UInt64(round))]) }
            try await CoreTests.waitUntil("every publish delivered") { delivered.value == rounds }
        }
    }
}
