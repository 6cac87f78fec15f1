// The account check of a stored tree served before Dropbox could say whose credentials are in hand
// (an offline mount; docs/SEMANTICS.md, "Stored tree and offline"). Once Dropbox answers, and
// before the tree's first list_folder/continue, one users/get_current_account. When it names the
// tree's account, the tree is caught up as usual. When it names another account, the tree is
// dropped with one log line: every entry is removed (the kernel's caches invalidated as for any
// deletion), the tree's database is let go without another write, the store the mount gives for
// the account Dropbox named takes its place (emptied), and that account is listed afresh.
//
// Locking: the switch takes the engine's state, then the tree's (SyncEngine.swift's order), once.

import DropboxAPI
import Log

/// What a mount tells the core about a restored tree it could not tie to an account answer.
public struct AccountConfirmation: Sendable {
    /// The account id the restored tree belongs to.
    public var accountID: String
    /// Gives the store for the account Dropbox named instead (nil: keep the tree in memory only).
    /// Called at most once, with no lock held.
    public var storeFor: @Sendable (FullAccount) -> TreeStore?

    public init(accountID: String, storeFor: @escaping @Sendable (FullAccount) -> TreeStore?) {
        self.accountID = accountID
        self.storeFor = storeFor
    }
}

extension SyncEngine {
    /// Asks until Dropbox answers (backing off as the watcher does); false when stopped first.
    func confirmAccountFirst() async -> Bool {
        var failures = 0
        while !Task.isCancelled {
            do {
                try await confirmAccount()
                return true
            } catch {
                if Task.isCancelled { break }
                failures += 1
                let delay = retryDelay(failures: failures)
                if !connectivity.isOffline {
                    Log.warning("cannot ask Dropbox whose credentials these are (\(error)); retrying in \(Double(Int(delay * 10)) / 10) s")
                }
                await pause(seconds: delay)
            }
        }
        return false
    }

    /// One users/get_current_account; on another account than the tree's, drops the tree and
    /// switches stores.
    func confirmAccount() async throws(DropboxError) {
        guard let check = options.accountConfirmation else { return }
        let account = try await syncClient.getCurrentAccount()
        guard account.accountId != check.accountID else { return }
        Log.warning(
            "the credentials are of the account \(Log.quoted(account.email)) (\(account.accountId)), not of the stored "
                + "tree's (\(check.accountID)): that tree is no longer shown, and this account is listed")
        let store = check.storeFor(account)
        store?.discardTree()
        let now = options.monotonicNow()
        tree.change(with: state) { s, t, invalidated in
            s.restored = false
            s.relistRestored = false
            s.progress.restoredEntries = 0
            s.progress.storedSyncedAt = 0
            if options.prefetch { s.progress.fillStarting(at: now) }
            t.tree.removeChildren(of: MetadataTree.rootIndex, notIn: [], invalidations: &invalidated)
            t.tree.markAllIncomplete()
            t.hiddenPaths = []
            t.cursor = nil
            // The removals are the other account's rows: never written anywhere (so `change`
            // has none to hand to the new store).
            _ = t.tree.takeChangedRecords()
            if store == nil { t.tree.changedIndices = nil }  // nothing stored: record nothing
            t.store = store
        }
    }
}
