// The mount's side of the tree store (DropboxFS/Store/TreeStore.swift): where stores live
// (CACHE_DIR/trees, CACHE_DIR being --cache-dir or $XDG_CACHE_HOME/dropboxfs), which stored tree an
// offline mount may serve, and opening the store with one clear line when it cannot be used.

import DropboxAPI
import DropboxFS
import Log
import Synchronization

enum StoredTrees {
    static func folder(_ configuration: MountConfiguration) -> String { configuration.cacheFolder + "/trees" }

    /// The stored tree an offline mount serves: of this server, tied to the credentials in hand
    /// (of the stored sign-in's account, or, with a bare access token, carrying that token's tag:
    /// a tree some mount with this very token stored, never one found by its mount point), showing
    /// the home folder when --home-only asks for it; the most recently synced one wins. Nil when
    /// no tree can be tied to the credentials.
    static func offlineTree(
        _ configuration: MountConfiguration, accountID: String?, tokenTag: String?
    ) -> TreeStoreInfo? {
        TreeStore.storedTrees(in: folder(configuration)).first { info in
            guard info.identity.endpoint == configuration.endpoints.api else { return false }
            if configuration.homeOnly && info.identity.pathRoot != .home { return false }
            if let accountID { return info.identity.accountID == accountID }
            guard let tokenTag else { return false }
            return info.tokenTag == tokenTag
        }
    }

    /// Whether a servable stored tree exists for `identity` (read-only; takes no lock).
    static func hasTree(_ configuration: MountConfiguration, identity: TreeStoreIdentity) -> Bool {
        TreeStore.info(path: folder(configuration) + "/" + identity.fileName)?.complete ?? false
    }

    /// Opens the store, or returns nil with one log line when it cannot be used (the mount then
    /// keeps its tree in memory, as with --no-persist).
    /// `tokenTag`: a bare access token's tag, written into the store (the account is confirmed by
    /// then: Dropbox named it, or the tree was found by this tag).
    static func open(
        _ configuration: MountConfiguration, identity: TreeStoreIdentity, email: String, mountpoint: String,
        tokenTag: String? = nil
    ) -> TreeStore? {
        do {
            return try TreeStore.open(
                folder: folder(configuration), identity: identity, email: email, mountpoint: mountpoint,
                tokenTag: tokenTag)
        } catch .busy(let path) {
            Log.warning(
                "another dropboxfs mount of this account uses the stored tree \(Log.quoted(path)); this mount keeps its tree in memory only")
        } catch {
            Log.warning("\(error); this mount keeps its tree in memory only")
        }
        return nil
    }

    /// The check of a tree served offline, once Dropbox answers (DropboxFS's
    /// AccountConfirmation.swift): on another account, `served`'s store is closed (never written
    /// again) and the account Dropbox named gets its own store, kept in `opened` to be closed at
    /// unmount. The client keeps the served tree's path root.
    static func confirmation(
        _ configuration: MountConfiguration, served identity: TreeStoreIdentity, store served: TreeStore?,
        mountpoint: String, tokenTag: String?, opened: OpenedStores, mounted: MountedAccount
    ) -> AccountConfirmation {
        AccountConfirmation(accountID: identity.accountID) { account in
            // Credentials replaced from now on are judged against the account now shown.
            mounted.set(account.accountId)
            served?.close()
            let other = TreeStoreIdentity(accountID: account.accountId, pathRoot: identity.pathRoot, endpoint: identity.endpoint)
            let store = open(configuration, identity: other, email: account.email, mountpoint: mountpoint, tokenTag: tokenTag)
            if let store { opened.add(store) }
            return store
        }
    }
}

/// Stores a mount opened after it started (another account's, AccountConfirmation), closed at
/// unmount. `stores` (a Mutex) guards the list.
final class OpenedStores: Sendable {
    private let stores = Mutex<[TreeStore]>([])

    func add(_ store: TreeStore) {
        stores.withLock { $0.append(store) }
    }

    func closeAll() {
        for store in stores.withLock({ $0 }) { store.close() }
    }
}
