// A scripted Dropbox account held in memory, so the filesystem core can be tested without a
// network. It behaves like the service as docs/DROPBOX-API.md describes: case-insensitive NFC
// path_lower keys, stable ids, a new rev per change, paged listings with opaque cursors, deltas
// through list_folder/continue, longpoll, ranged and per-revision downloads, and the service's
// errors. Tests build the tree, change it between calls, and read the call counts afterwards. By
// default it is orderly (parents first, sorted, full pages, the client's folding); AdversarialModes
// make it as unkind as the contract allows, from a seed, so tests prove the client never depends on
// order.

import DropboxAPI
import Synchronization

public final class InMemoryDropbox: DropboxClient, Sendable {
    /// Guards the account: entries, ids, revisions, the change journal, listing snapshots and
    /// shared links.
    let store: Mutex<InMemoryDropboxStore>
    /// Guards the test bookkeeping and knobs: call counts, recorded list_folder arguments and
    /// thumbnail batches, latency, the longpoll time scale, the account and its allocation.
    private let bookkeeping: Mutex<Bookkeeping>

    private struct Bookkeeping {
        var calls = CallLog()
        var listFolderArgs: [ListFolderArg] = []
        var thumbnailBatches: [[ThumbnailArg]] = []
        var latency: Duration = .zero
        var longpollSecond: Duration = .seconds(1)
        var account: FullAccount
        var allocation: SpaceUsage.Allocation
    }

    /// The other account of InMemoryDropboxAccounts.twoAccounts(): another account id and
    /// namespace, the same shape.
    public static let secondAccount = FullAccount(
        accountId: "dbid:BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB", displayName: "Second User",
        email: "second@example.com", accountType: "basic",
        rootInfo: RootInfo(tag: "user", rootNamespaceId: "2000", homeNamespaceId: "2000"))

    public static let defaultAccount = FullAccount(
        accountId: "dbid:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", displayName: "Test User",
        email: "test@example.com", accountType: "basic",
        rootInfo: RootInfo(tag: "user", rootNamespaceId: "1000", homeNamespaceId: "1000"))

    /// - Parameters:
    ///   - reportsDeletedChildren: when a folder is deleted or moved, also journal a `deleted` entry
    ///     for each descendant (after the folder's own), the variant clients must handle too
    ///     (docs/DROPBOX-API.md, "Delta semantics").
    ///   - adversarial: the unkind behaviours to turn on (none by default).
    ///   - adversarialSeed: every random choice of those modes derives from it, so a failing seed
    ///     replays.
    public init(
        account: FullAccount = InMemoryDropbox.defaultAccount,
        allocation: SpaceUsage.Allocation = .individual(allocated: 2_000_000_000_000),
        reportsDeletedChildren: Bool = false,
        adversarial: AdversarialModes = [],
        adversarialSeed: UInt64 = 1
    ) {
        var state = InMemoryDropboxStore()
        state.reportsDeletedChildren = reportsDeletedChildren
        state.adversarial = adversarial
        state.adversarialSeed = adversarialSeed
        state.folding = adversarial.contains(.fold) ? .contextual : .client
        state.namespaceIds = [account.rootInfo.rootNamespaceId, account.rootInfo.homeNamespaceId]
        store = Mutex(state)
        bookkeeping = Mutex(Bookkeeping(account: account, allocation: allocation))
    }

    // MARK: Building and changing the account

    /// Adds (or replaces, matching case-insensitively) the file at `path`, creating missing
    /// parents. `clientModified` defaults to the new server_modified.
    @discardableResult
    public func addFile(_ path: String, contents: [UInt8], clientModified: DropboxTimestamp? = nil) -> FileMetadata {
        store.withLock { $0.addFile(path, NewFile(content: .bytes(contents), clientModified: clientModified)) }
    }

    /// Adds a file of `size` deterministic bytes without storing them (see `contents(of:)`).
    /// The content_hash is computed here, so a huge size costs time once.
    @discardableResult
    public func addFile(_ path: String, size: UInt64, seed: UInt64? = nil, clientModified: DropboxTimestamp? = nil)
        -> FileMetadata
    {
        let content = FileContent.generated(size: size, seed: seed ?? FileContent.seed(for: DropboxPath.key(path)))
        return store.withLock { $0.addFile(path, NewFile(content: content, clientModified: clientModified)) }
    }

    /// Adds a symlink (a file with `symlink_info.target`); downloading it gives the target's bytes.
    @discardableResult
    public func addSymlink(_ path: String, target: String) -> FileMetadata {
        store.withLock { $0.addFile(path, NewFile(content: .bytes(Array(target.utf8)), symlinkTarget: target)) }
    }

    /// Adds an export-only file (`is_downloadable` false, `export_info.export_as`, no content_hash).
    @discardableResult
    public func addNonDownloadable(_ path: String, exportAs: String, size: UInt64 = 0) -> FileMetadata {
        let content = FileContent.generated(size: size, seed: FileContent.seed(for: DropboxPath.key(path)))
        return store.withLock {
            $0.addFile(path, NewFile(content: content, isDownloadable: false, exportAs: exportAs))
        }
    }

    /// Adds a folder and its missing parents; an existing folder is kept, a file there replaced.
    @discardableResult
    public func addFolder(_ path: String) -> FolderMetadata {
        store.withLock { $0.addFolder(path) }
    }

    /// Gives the existing folder at `path` an access level; journaled like any change.
    public func setFolderAccess(_ path: String, traverseOnly: Bool = false, noAccess: Bool = false) {
        store.withLock { $0.setFolderAccess(path, traverseOnly: traverseOnly, noAccess: noAccess) }
    }

    /// Blocks the current revision of the file at `path`: its downloads answer restricted_content.
    public func restrictContent(_ path: String) {
        store.withLock { $0.restrictContent(path) }
    }

    /// Gives an existing file new contents: same id, new rev, new content_hash.
    @discardableResult
    public func modifyFile(_ path: String, contents: [UInt8], clientModified: DropboxTimestamp? = nil) -> FileMetadata {
        store.withLock { $0.modifyFile(path, content: .bytes(contents), clientModified: clientModified) }
    }

    /// Deletes an entry and its subtree. Old revisions stay downloadable by "rev:...".
    public func delete(_ path: String) {
        store.withLock { $0.delete(path) }
    }

    /// Moves an entry and its subtree; ids stay, files get a new rev. `to` must not exist, unless
    /// it differs from `from` only in case: that renames in place and journals nothing.
    public func move(from: String, to: String) {
        store.withLock { $0.move(from: from, to: to) }
    }

    /// Expires every cursor issued so far: continue and longpoll on them fail with `.cursorReset`.
    public func resetCursors() {
        store.withLock { state in
            state.epoch += 1
            state.journal.removeAll()
            state.snapshots.removeAll()
            state.cursorIssued = false
        }
    }

    /// Stamps this account's cursors with its account id, so that another account rejects them
    /// (InMemoryDropboxAccounts); whether a cursor was made here.
    func stampCursors(_ accountId: String) {
        store.withLock { $0.cursorAccount = accountId }
    }

    func issued(cursor: String) -> Bool {
        store.withLock { state in
            state.cursorAccount != nil && ListingCursor(decoding: cursor)?.account == state.cursorAccount
        }
    }

    // MARK: Inspecting the account

    /// The live entry at a display path ("/a/b", any case), or nil.
    public func entry(_ path: String) -> Metadata? {
        store.withLock { state in state.entries[state.builderKey(path)]?.metadata }
    }

    /// The current bytes of the file at `path`, or nil when there is no file there.
    public func contents(of path: String) -> [UInt8]? {
        store.withLock { state in state.entries[state.builderKey(path)]?.content }?.allBytes
    }

    /// Every live file and folder, each folder before its children (the root not included): the
    /// account as it is, for comparing with what a client built from listings and changes.
    public var entries: [Metadata] {
        store.withLock { state in state.subtree("").dropFirst().compactMap { state.entries[$0]?.metadata } }
    }

    /// The adversarial modes this account was made with.
    public var adversarial: AdversarialModes {
        store.withLock { $0.adversarial }
    }

    /// The number of live files and folders (the root not counted).
    public var entryCount: Int {
        store.withLock { $0.entries.count }
    }

    // MARK: Test knobs and call records

    /// Calls per method, by route name ("list_folder", "list_folder/continue", "download", ...).
    public var calls: [String: Int] {
        bookkeeping.withLock { $0.calls.byRoute }
    }

    public func callCount(_ method: DropboxMethod) -> Int {
        bookkeeping.withLock { $0.calls.count(method) }
    }

    /// Forgets the call counts and recorded list_folder arguments and thumbnail batches.
    public func resetCalls() {
        bookkeeping.withLock { state in
            state.calls = CallLog()
            state.listFolderArgs = []
            state.thumbnailBatches = []
        }
    }

    /// The entries of every get_thumbnail_batch call, in order.
    public var thumbnailBatches: [[ThumbnailArg]] {
        bookkeeping.withLock { $0.thumbnailBatches }
    }

    /// The argument of every list_folder call, in order.
    public var listFolderArgs: [ListFolderArg] {
        bookkeeping.withLock { $0.listFolderArgs }
    }

    /// The `path` of every list_folder call, in order.
    public var listFolderPaths: [String] {
        listFolderArgs.map(\.path)
    }

    /// A delay added to every call before it is served, so concurrent calls overlap.
    public var latency: Duration {
        get { bookkeeping.withLock { $0.latency } }
        set { bookkeeping.withLock { $0.latency = newValue } }
    }

    /// How long one second of a longpoll timeout lasts here; tests shrink it to milliseconds.
    public var longpollSecond: Duration {
        get { bookkeeping.withLock { $0.longpollSecond } }
        set { bookkeeping.withLock { $0.longpollSecond = newValue } }
    }

    public var account: FullAccount {
        get { bookkeeping.withLock { $0.account } }
        set {
            bookkeeping.withLock { $0.account = newValue }
            store.withLock { $0.namespaceIds = [newValue.rootInfo.rootNamespaceId, newValue.rootInfo.homeNamespaceId] }
        }
    }

    /// The allocation users/get_space_usage reports; `used` is always the sum of file sizes.
    public var allocation: SpaceUsage.Allocation {
        get { bookkeeping.withLock { $0.allocation } }
        set { bookkeeping.withLock { $0.allocation = newValue } }
    }

    // MARK: DropboxClient

    public func listFolder(_ arg: ListFolderArg) async throws(DropboxError) -> ListFolderResult {
        try await enter(.listFolder, listing: arg)
        if let link = arg.sharedLink { return try store.withLock { $0.listLink(link, arg) }.get() }
        return try store.withLock { $0.listFolder(arg) }.get()
    }

    public func listFolderContinue(cursor: String) async throws(DropboxError) -> ListFolderResult {
        try await enter(.listFolderContinue)
        if InMemoryDropboxStore.isLinkCursor(cursor) {
            return try store.withLock { $0.continueLinkListing(cursor) }.get()
        }
        return try store.withLock { $0.listFolderContinue(cursor: cursor) }.get()
    }

    public func listFolderGetLatestCursor(_ arg: ListFolderArg) async throws(DropboxError) -> String {
        try await enter(.listFolderGetLatestCursor)
        return try store.withLock { $0.latestCursor(arg) }.get()
    }

    /// Returns `changes: true` as soon as the journal moves past the cursor within its scope;
    /// otherwise after `timeoutSeconds` × `longpollSecond`, `changes: false`.
    public func listFolderLongpoll(cursor: String, timeoutSeconds: Int) async throws(DropboxError) -> LongpollResult {
        try await enter(.listFolderLongpoll)
        let clock = ContinuousClock()
        let deadline = clock.now + longpollSecond * max(0, timeoutSeconds)
        while true {
            if try store.withLock({ $0.hasChanges(cursor: cursor) }).get() {
                return LongpollResult(changes: true)
            }
            let left = clock.now.duration(to: deadline)
            guard left > .zero else { return LongpollResult(changes: false) }
            try await sleepUnlessCancelled(min(left, .milliseconds(2)))
        }
    }

    public func getMetadata(path: String) async throws(DropboxError) -> Metadata {
        try await enter(.getMetadata)
        return try store.withLock { $0.getMetadata(path: path) }.get()
    }

    public func download(path: String, range: ByteRange?) async throws(DropboxError) -> DownloadResult {
        try await enter(.download)
        return try store.withLock { $0.download(path: path, range: range) }.get()
    }

    public func export(path: String) async throws(DropboxError) -> ExportResult {
        try await enter(.export)
        return try store.withLock { $0.export(path: path) }.get()
    }

    /// Answers each entry alone (InMemoryDropboxThumbnails.swift); more than 25 entries is the
    /// route's `too_many_files` error.
    public func getThumbnailBatch(_ entries: [ThumbnailArg]) async throws(DropboxError)
        -> [Result<[UInt8], ThumbnailFailure>]
    {
        try await enter(.getThumbnailBatch)
        bookkeeping.withLock { $0.thumbnailBatches.append(entries) }
        guard entries.count <= ThumbnailArg.batchLimit else { throw .routeError(summary: "too_many_files/") }
        return store.withLock { state in entries.map { state.thumbnail($0) } }
    }

    public func getCurrentAccount() async throws(DropboxError) -> FullAccount {
        try await enter(.getCurrentAccount)
        return account
    }

    public func getSpaceUsage() async throws(DropboxError) -> SpaceUsage {
        try await enter(.getSpaceUsage)
        let used = store.withLock { $0.usedBytes }
        return SpaceUsage(used: used, allocation: allocation)
    }

    /// Counts the call, records a list_folder argument, then waits out the latency.
    func enter(_ method: DropboxMethod, listing arg: ListFolderArg? = nil) async throws(DropboxError) {
        let latency = bookkeeping.withLock { state in
            _ = state.calls.record(method)
            if let arg { state.listFolderArgs.append(arg) }
            return state.latency
        }
        try await sleepUnlessCancelled(latency)
    }
}
