// How the sync engine feeds the tree store (TreeStore.swift): after each applied page, under the
// same lock that applied it, the records it changed go to the store as one batch, with the cursor
// when the page came with one. A batch is thus exactly a state the tree was in.

extension Filesystem {
    /// Hands the records changed since the last batch to the store, with what happens to the
    /// cursor. Call with the state lock held, right after the change the cursor describes.
    func persist(in s: inout State, cursor: StoreBatch.CursorChange = .keep) {
        guard let store = options.store else { return }
        let records = s.tree.takeChangedRecords()
        if records.isEmpty, case .keep = cursor { return }
        store.submit(StoreBatch(records: records, cursor: cursor))
    }

    /// Waits until the tree first matches Dropbox (a completed fill, or a restored tree caught up
    /// with its cursor); false when `seconds` pass first.
    public func waitUntilCaughtUp(seconds: Double) async -> Bool {
        await caughtUp.wait(seconds: seconds)
    }
}
