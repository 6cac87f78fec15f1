// The tree store: the metadata tree and its change cursor, kept across mounts in one SQLite
// database per account, path root and server, so a remount serves the last known tree at once (and
// offline) and catches up with one list_folder/continue (docs/ARCHITECTURE.md, "The tree store
// (remount and offline)").
//
// The rows mirror the in-memory tree as of the last batch written: the sync engine hands over each
// change batch together with its cursor, and each batch is one transaction, so the file always holds
// a state the tree was in (and, once the whole-account fill has completed, a state Dropbox had). The
// whole-account fill writes page by page with no cursor and records its completion with the cursor;
// a tree whose fill never completed is not served again. WAL journaling makes a `kill -9` at any
// moment leave the last committed batch.
//
// A database of another account, root, server or schema, or a damaged one (its header or any
// page), is set aside (renamed with a `.bad` suffix) and rebuilt, with one log line. Damage found
// while writing leaves the new file empty for the next mount to fill (this mount's tree cannot be
// written into it batch by batch), and the mount goes on in memory. A lock file held for the life
// of the mount keeps a second mount of the same account out (it runs in memory only). Tokens are
// never stored here.
//
// A store that cannot be written (its disk full, over quota or read-only) is still read: the open
// falls back to reading the file as it is (`openReadOnly`), the mount serves the stored tree
// (offline or online) with one warning, and nothing is written (`writing` false from the start).
// Opening writes nothing that has not changed (the meta rows), so a full disk with an unchanged
// store opens it normally, and the first batch that cannot be written turns writing off.
//
// Threads: every SQLite call runs on `queue` (serial), so batches are written in the order they are
// submitted, off the tree lock. `state` (a Mutex) guards only whether the store still writes.

import CSQLite
import DropboxAPI
import Dispatch
import Log
import Synchronization
import SystemCalls

#if canImport(Glibc)
    import Glibc
#endif

/// Which stored tree a mount uses: the account, the root it shows, and the server it talks to.
public struct TreeStoreIdentity: Sendable, Equatable {
    public var accountID: String
    public var pathRoot: PathRoot
    /// The API base URL: trees of different servers (test servers among them) never mix.
    public var endpoint: String

    public init(accountID: String, pathRoot: PathRoot, endpoint: String) {
        self.accountID = accountID
        self.pathRoot = pathRoot
        self.endpoint = endpoint
    }

    /// "home" or the root namespace id, as stored.
    var rootText: String {
        switch pathRoot {
        case .home: return "home"
        case .root(let namespace): return "root:" + namespace
        // Never a mount's root (a shared folder's namespace is not stored), but kept apart.
        case .namespace(let namespace): return "namespace:" + namespace
        }
    }

    static func pathRoot(fromText text: String) -> PathRoot? {
        if text == "home" { return .home }
        guard text.hasPrefix("root:"), text.count > 5 else { return nil }
        return .root(namespaceId: String(text.dropFirst(5)))
    }

    /// The database's file name: readable parts, cleaned to safe characters, and a hash of the whole
    /// identity so that two identities never share a file.
    public var fileName: String {
        func clean(_ text: String) -> String {
            String(String.UnicodeScalarView(text.unicodeScalars.prefix(48).map { scalar in
                scalar.isASCII && (scalar.properties.isAlphabetic || ("0"..."9").contains(scalar) || scalar == "-")
                    ? scalar : "_"
            }))
        }
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325  // FNV-1a over the three parts
        for byte in (accountID + "\n" + rootText + "\n" + endpoint).utf8 {
            hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3
        }
        let hex = String(hash, radix: 16)
        return "tree-\(clean(accountID))-\(clean(rootText))-\(String(repeating: "0", count: 16 - hex.count) + hex).db"
    }
}

/// What the store says of itself (for offline mounts and `status`).
public struct TreeStoreInfo: Sendable, Equatable {
    public var path: String
    public var identity: TreeStoreIdentity
    public var email: String
    public var mountpoint: String
    /// When the stored tree was last known to match Dropbox (seconds since the epoch), 0 if never.
    public var syncedAt: Int64
    /// Whether a whole-account fill completed (the tree is servable).
    public var complete: Bool
    /// The keyed tag of the bare access token of the last mount that stored a tag here (CLI's
    /// CredentialTag.swift); nil when none did.
    public var tokenTag: String? = nil
}

/// A stored tree read back at mount, for `Filesystem(client:options:restoring:)`.
public struct StoredTree: Sendable {
    var tree: MetadataTree
    /// The cursor to continue from; nil when a refill was under way (it starts again).
    public let cursor: String?
    public let syncedAt: Int64
    /// When the last whole-account listing completed (seconds since the epoch), 0 if unknown.
    public let filledAt: Int64
    public var entryCount: Int { tree.liveCount - 1 }
}

public enum TreeStoreError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Another mount holds the store of this account.
    case busy(path: String)
    /// The store's folder or file cannot be made or opened.
    case unusable(String)

    public var description: String {
        switch self {
        case .busy(let path): return "another dropboxfs mount uses the stored tree \(path)"
        case .unusable(let why): return why
        }
    }
}

/// One batch for the store: changed records and what happens to the cursor, written as one transaction.
struct StoreBatch {
    enum CursorChange {
        case keep
        /// The tree now matches Dropbox as of this cursor (a change batch).
        case set(String)
        /// A whole-account listing completed with this cursor (its time is recorded as `filled_at`).
        case filled(String)
        /// The cursor was reset: a refill runs, and the rows are a mix until it completes.
        case clear
    }

    var records: [StoredRecord]
    var cursor: CursorChange
}

public final class TreeStore: Sendable {
    /// 3 added the `pins` table (TreeStore+Pins.swift); a store of version 2 is migrated in place.
    static let schemaVersion: Int64 = 3
    /// Versions still read as they are: a read-only open of a version 2 store serves its tree
    /// (without pins).
    static let readableVersions: Set<Int64> = [2, 3]
    /// PRAGMA application_id: marks the file as ours ("DBXF").
    static let applicationID: Int64 = 0x4442_5846

    public let path: String
    public let identity: TreeStoreIdentity
    /// The account's email and the mount point, written into the store's meta (again into a new
    /// file when a damaged one is set aside).
    private let email: String
    private let mountpoint: String
    /// A bare access token's keyed tag, written into the meta (again into a new file too).
    private let tokenTag: String?
    let queue = DispatchQueue(label: "dropboxfs.tree-store")
    private let lockDescriptor: Int32
    struct State {
        var writing = true
        var closed = false
    }
    let state: Mutex<State>
    /// Opened by `openReadOnly`: nothing is ever written, not even at close.
    public let readOnly: Bool
    /// The connection and statements; used on `queue` only (hence unchecked).
    let connection: Connection

    final class Connection: @unchecked Sendable {
        var database: SQLiteDatabase
        var upsert: SQLiteStatement
        var delete: SQLiteStatement
        var setMeta: SQLiteStatement

        init(_ database: SQLiteDatabase) throws(SQLiteError) {
            self.database = database
            upsert = try database.prepare(
                "INSERT OR REPLACE INTO entries(idx, parent, name, key, kind, flags, size, mtime, ctime, id, rev, hash, target) "
                    + "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)")
            delete = try database.prepare("DELETE FROM entries WHERE idx = ?1")
            setMeta = try database.prepare("INSERT OR REPLACE INTO meta(key, value) VALUES (?1, ?2)")
        }

        /// Takes over `other`'s database and statements (this connection closed first).
        func adopt(_ other: Connection) {
            (database, upsert, delete, setMeta) = (other.database, other.upsert, other.delete, other.setMeta)
        }

        /// Releases the statements and closes the connection (its locks with it).
        func close() {
            for statement in [upsert, delete, setMeta] { statement.finalize() }
            database.close()
        }

        func meta(_ key: String, _ value: String?) throws(SQLiteError) {
            setMeta.bind(key, at: 1)
            setMeta.bind(value, at: 2)
            try setMeta.run()
        }
    }

    /// Opens (creating it when needed) the store of `identity` in `folder`, which is made 0700.
    /// Throws `.busy` when another mount holds it. A foreign, old or damaged file is set aside.
    /// `tokenTag`, when given, is written into the meta (ties the tree to a bare access token).
    public static func open(
        folder: String, identity: TreeStoreIdentity, email: String, mountpoint: String, tokenTag: String? = nil
    ) throws(TreeStoreError) -> TreeStore {
        try makeFolder(folder)
        let path = folder + "/" + identity.fileName
        let lock: Int32
        do throws(Errno) {
            lock = try FileDescriptor.open(path + ".lock", O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, permissions: 0o600).rawValue
        } catch {
            let why = "cannot open \(path).lock: \(error)"
            // A disk that refuses writes may still hold a tree to read (locked by its lock file when one exists).
            let existing = (try? FileDescriptor.open(path + ".lock", O_RDONLY | O_NOFOLLOW | O_CLOEXEC).rawValue) ?? -1
            if existing >= 0 && flock(existing, LOCK_EX | LOCK_NB) != 0 {
                Glibc.close(existing)
                throw .busy(path: path)
            }
            return try openReadOnly(path: path, identity: identity, lock: existing, because: why)
        }
        guard flock(lock, LOCK_EX | LOCK_NB) == 0 else {
            Glibc.close(lock)
            throw .busy(path: path)
        }
        do {
            let connection = try openChecked(path: path, identity: identity)
            // Written only when they changed: an open that writes fails on a full disk.
            let meta = try readMeta(connection.database)
            if meta["email"] != email { try connection.meta("email", email) }
            if meta["mountpoint"] != mountpoint { try connection.meta("mountpoint", mountpoint) }
            if let tokenTag, meta["token_tag"] != tokenTag { try connection.meta("token_tag", tokenTag) }
            return TreeStore(
                path: path, identity: identity, email: email, mountpoint: mountpoint, tokenTag: tokenTag,
                lock: lock, connection: connection, readOnly: false)
        } catch {
            let why = "cannot use the stored tree \(path): \(error)"
            return try openReadOnly(path: path, identity: identity, lock: lock, because: why)
        }
    }

    /// The store at `path` opened only to be read (its disk refused the writable open, `why`):
    /// served when it is a store of `identity`, with one warning; otherwise `why` is the error.
    private static func openReadOnly(
        path: String, identity: TreeStoreIdentity, lock: Int32, because why: String
    ) throws(TreeStoreError) -> TreeStore {
        do {
            let database = try SQLiteDatabase(path: path, immutable: true)
            guard try scalar(database, "PRAGMA application_id") == applicationID,
                try readableVersions.contains(scalar(database, "PRAGMA user_version"))
            else { throw StoreMismatch(description: "not a dropboxfs tree store of this version") }
            let meta = try readMeta(database)
            guard meta["account_id"] == identity.accountID, meta["root"] == identity.rootText,
                meta["endpoint"] == identity.endpoint
            else { throw StoreMismatch(description: "of another account, root or server") }
            let store = TreeStore(
                path: path, identity: identity, email: meta["email"] ?? "", mountpoint: meta["mountpoint"] ?? "",
                tokenTag: meta["token_tag"], lock: lock, connection: try Connection(database), readOnly: true)
            Log.warning("\(why); serving the stored tree read-only: this mount's changes are kept in memory only")
            return store
        } catch {
            if lock >= 0 { Glibc.close(lock) }
            throw .unusable(why)
        }
    }

    private init(
        path: String, identity: TreeStoreIdentity, email: String, mountpoint: String, tokenTag: String?,
        lock: Int32, connection: Connection, readOnly: Bool
    ) {
        self.path = path
        self.identity = identity
        self.email = email
        self.mountpoint = mountpoint
        self.tokenTag = tokenTag
        self.lockDescriptor = lock
        self.connection = connection
        self.readOnly = readOnly
        self.state = Mutex(State(writing: !readOnly))
    }

    /// Opens the database, setting aside (once) a file that is not a store of `identity`.
    private static func openChecked(path: String, identity: TreeStoreIdentity) throws -> Connection {
        do {
            return try openAndCheck(path: path, identity: identity)
        } catch let mismatch as StoreMismatch {
            setAside(path: path, reason: mismatch.description)
        } catch let error as SQLiteError where error.isDamage {
            setAside(path: path, reason: "damaged (\(error))")
        }
        return try openAndCheck(path: path, identity: identity)
    }

    private struct StoreMismatch: Error, CustomStringConvertible {
        var description: String
    }

    private static func openAndCheck(path: String, identity: TreeStoreIdentity) throws -> Connection {
        // The file is made 0600 before SQLite sees it; SQLite gives its -wal and -shm files the same mode.
        let file: FileDescriptor
        do throws(Errno) {
            file = try FileDescriptor.open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, permissions: 0o600)
        } catch {
            throw TreeStoreError.unusable("cannot open \(path): \(error)")
        }
        fchmod(file.rawValue, 0o600)
        try? file.close()
        let database = try SQLiteDatabase(path: path)
        try database.execute("PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA cache_size = -4096")
        let application = try scalar(database, "PRAGMA application_id")
        let version = try scalar(database, "PRAGMA user_version")
        let tables = try scalar(database, "SELECT count(*) FROM sqlite_master")
        if application == 0 && version == 0 && tables == 0 {
            try database.execute(
                """
                BEGIN;
                CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT) WITHOUT ROWID;
                CREATE TABLE entries(
                    idx INTEGER PRIMARY KEY, parent INTEGER NOT NULL, name TEXT NOT NULL, key TEXT,
                    kind INTEGER NOT NULL, flags INTEGER NOT NULL, size INTEGER NOT NULL,
                    mtime INTEGER NOT NULL, ctime INTEGER NOT NULL, id TEXT, rev TEXT, hash BLOB, target TEXT);
                \(pinsTable)
                PRAGMA application_id = \(applicationID);
                PRAGMA user_version = \(schemaVersion);
                COMMIT;
                """)
            let connection = try Connection(database)
            try connection.meta("account_id", identity.accountID)
            try connection.meta("root", identity.rootText)
            try connection.meta("endpoint", identity.endpoint)
            try connection.meta("state", "empty")
            return connection
        }
        guard application == applicationID else { throw StoreMismatch(description: "not a dropboxfs tree store") }
        guard version == 2 || version == schemaVersion else {
            throw StoreMismatch(description: "of schema version \(version) (this dropboxfs uses \(schemaVersion))")
        }
        let meta = try readMeta(database)
        guard meta["account_id"] == identity.accountID, meta["root"] == identity.rootText,
            meta["endpoint"] == identity.endpoint
        else { throw StoreMismatch(description: "of another account, root or server") }
        if version == 2 { try migrateToPins(database) } else { try addPinIDs(database) }
        return try Connection(database)
    }

    private static func scalar(_ database: SQLiteDatabase, _ sql: String) throws(SQLiteError) -> Int64 {
        let statement = try database.prepare(sql)
        guard try statement.step() else { return 0 }
        return statement.int64(0)
    }

    private static func readMeta(_ database: SQLiteDatabase) throws(SQLiteError) -> [String: String] {
        let statement = try database.prepare("SELECT key, value FROM meta")
        var meta: [String: String] = [:]
        while try statement.step() {
            if let key = statement.text(0) { meta[key] = statement.text(1) ?? "" }
        }
        return meta
    }

    /// Renames a database that cannot be used (with its journal files) out of the way, keeping
    /// only the newest set-aside copy.
    private static func setAside(path: String, reason: String, outcome: String = "rebuilt from Dropbox") {
        let aside = path + ".bad"
        for suffix in ["", "-wal", "-shm"] {
            unlink(aside + suffix)
            rename(path + suffix, aside + suffix)
        }
        Log.warning("the stored tree \(Log.quoted(path)) is \(reason): set aside as \(Log.quoted(aside)) and \(outcome)")
    }

    private static func makeFolder(_ folder: String) throws(TreeStoreError) {
        var built = ""
        for component in folder.split(separator: "/", omittingEmptySubsequences: true) {
            built += "/" + component
            if mkdir(built, 0o700) != 0 && errno != EEXIST {
                throw .unusable("cannot create \(built): \(String(cString: strerror(errno)))")
            }
        }
        // Through a descriptor of the folder itself: a chmod by path would follow a symlink put there.
        let descriptor: FileDescriptor
        do throws(Errno) {
            descriptor = try FileDescriptor.open(folder, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        } catch {
            throw .unusable("cannot open the folder \(folder): \(error)")
        }
        fchmod(descriptor.rawValue, 0o700)
        try? descriptor.close()
    }

    // MARK: Reading

    /// The stored tree when a whole-account fill completed for it, rebuilt in one pass; nil (and
    /// an emptied store, ready for a new fill) otherwise. A tree that fails its checks is set aside.
    public func loadTree(folderTime: Int64, now: Double) -> StoredTree? {
        queue.sync {
            do {
                let meta = try Self.readMeta(connection.database)
                let stateText = meta["state"] ?? "empty"
                guard stateText == "complete" || stateText == "refilling" else {
                    if !readOnly { try startEmpty() }
                    return nil
                }
                var tree = try Self.rebuild(connection.database, folderTime: folderTime, now: now)
                tree.trackChanges()
                let cursor = stateText == "complete" ? meta["cursor"].flatMap { $0.isEmpty ? nil : $0 } : nil
                return StoredTree(
                    tree: tree, cursor: cursor, syncedAt: Int64(meta["synced_at"] ?? "") ?? 0,
                    filledAt: Int64(meta["filled_at"] ?? "") ?? 0)
            } catch let error as SQLiteError where error.isDamage && !readOnly {
                // A damaged file (its header sound, some page not) cannot be trusted to be emptied.
                replaceDamaged(reason: "damaged (\(error))")
                return nil
            } catch where readOnly {
                Log.warning("the stored tree \(Log.quoted(path)) cannot be read (\(error)); listing the account again")
                return nil
            } catch {
                Log.warning("the stored tree \(Log.quoted(path)) cannot be read (\(error)); listing the account again")
                do {
                    try startEmpty()
                } catch let error as SQLiteError where error.isDamage {
                    replaceDamaged(reason: "damaged (\(error))")
                } catch {
                    disable("cannot empty the stored tree: \(error)")
                }
                return nil
            }
        }
    }

    /// Empties the store for a new fill: the tree this mount served was dropped (it was another
    /// account's), and this store's rows, if any, are not of the tree the fill builds.
    public func discardTree() {
        queue.sync {
            do {
                try startEmpty()
            } catch {
                disable("cannot empty the stored tree: \(error)")
            }
        }
    }

    /// Sets the damaged database aside and continues in a new, empty one at the same path, as
    /// `open` does with a file damaged in its header. Runs on `queue`.
    private func replaceDamaged(reason: String, outcome: String = "rebuilt from Dropbox") {
        connection.close()
        Self.setAside(path: path, reason: reason, outcome: outcome)
        do {
            let fresh = try Self.openAndCheck(path: path, identity: identity)
            try fresh.meta("email", email)
            try fresh.meta("mountpoint", mountpoint)
            if let tokenTag { try fresh.meta("token_tag", tokenTag) }
            connection.adopt(fresh)
            try startEmpty()
        } catch {
            disable("cannot make a new stored tree: \(error)")
        }
    }

    /// Empties the store before a first fill.
    private func startEmpty() throws(SQLiteError) {
        try connection.database.execute("BEGIN; DELETE FROM entries;")
        try connection.meta("state", "filling")
        try connection.meta("cursor", nil)
        try connection.database.execute("COMMIT")
    }

    /// How far the highest stored index may run past twice the number of rows. The load makes a
    /// node for every index below the highest (the unused ones free), so this bounds its memory by
    /// the rows; a tree whose gaps are wider (most of a big account deleted) is listed afresh, and
    /// its new rows are dense.
    static let indexAllowance: Int64 = 65_536

    private static func rebuild(_ database: SQLiteDatabase, folderTime: Int64, now: Double) throws -> MetadataTree {
        var tree = MetadataTree(folderTime: folderTime)
        let rows = try database.prepare(
            "SELECT idx, parent, name, key, kind, flags, size, mtime, ctime, id, rev, hash, target FROM entries ORDER BY idx")
        var scan = RestoreScan()
        var (read, rowCount): (Int64, Int64?) = (0, nil)
        while try rows.step() {
            let index = rows.int64(0)
            read += 1
            // Checked before the gap below it is allocated: a damaged or hand-edited row with an
            // index of billions would make the load allocate billions of empty nodes. The rows
            // come in index order, so the count is needed only past a wide gap (never when dense).
            if index > 2 * read + indexAllowance {
                let count = try rowCount ?? scalar(database, "SELECT count(*) FROM entries")
                rowCount = count
                guard index <= 2 * count + indexAllowance else {
                    throw TreeRestoreError(description: "record \(index) is far beyond the \(count) records")
                }
            }
            let parent = rows.int64(1)
            guard let name = rows.text(2), (2...Int64(UInt32.max - 1)).contains(index),
                (1...Int64(UInt32.max - 1)).contains(parent), let kind = NodeKind(rawValue: UInt8(clamping: rows.int64(4)))
            else { throw TreeRestoreError(description: "a record has a malformed index, parent, name or kind") }
            var node = Node(parent: UInt32(parent), name: name, kind: kind)
            let flags = rows.int64(5)
            node.isDownloadable = flags & 1 != 0
            node.provisional = flags & 4 != 0
            node.access = flags & 64 != 0 ? .noAccess : flags & 32 != 0 ? .traverseOnly : .full
            node.size = UInt64(bitPattern: rows.int64(6))
            node.mtime = rows.int64(7)
            node.ctime = rows.int64(8)
            rows.withText(9) { node.setID(utf8: $0) }
            rows.withText(10) { node.setRev(utf8: $0) }
            let hash: ContentHash?? = rows.withBlob(11) { raw in
                guard let raw else { return .some(nil) }
                guard raw.count == 32 else { return nil }
                return ContentHash(
                    words: UInt64(bigEndian: raw.loadUnaligned(fromByteOffset: 0, as: UInt64.self)),
                    UInt64(bigEndian: raw.loadUnaligned(fromByteOffset: 8, as: UInt64.self)),
                    UInt64(bigEndian: raw.loadUnaligned(fromByteOffset: 16, as: UInt64.self)),
                    UInt64(bigEndian: raw.loadUnaligned(fromByteOffset: 24, as: UInt64.self)))
            }
            guard let hash else { throw TreeRestoreError(description: "record \(index) has a malformed hash") }
            node.contentHash = hash
            let target = rows.text(12)
            guard (kind == .symlink) == (target != nil) else {
                throw TreeRestoreError(description: "record \(index) has a symlink target that does not fit its kind")
            }
            try tree.restore(
                node, at: UInt32(index), key: rows.text(3), oddKey: flags & 8 != 0, symlinkTarget: target,
                complete: flags & 16 == 0, scan: &scan)
        }
        try tree.finishRestore(scan, at: now)
        return tree
    }

    /// What the store at `path` says of itself, opened read-only (nil when it is not a readable
    /// store); read as it is when a read-only open fails (a full or read-only disk, where SQLite
    /// cannot make the files a journaled read needs).
    public static func info(path: String) -> TreeStoreInfo? {
        info(path: path, immutable: false) ?? info(path: path, immutable: true)
    }

    private static func info(path: String, immutable: Bool) -> TreeStoreInfo? {
        guard let database = try? SQLiteDatabase(path: path, readOnly: true, create: false, immutable: immutable),
            (try? scalar(database, "PRAGMA application_id")) == applicationID,
            (try? scalar(database, "PRAGMA user_version")).map(readableVersions.contains) == true,
            let meta = try? readMeta(database), let account = meta["account_id"],
            let root = meta["root"].flatMap(TreeStoreIdentity.pathRoot(fromText:)), let endpoint = meta["endpoint"]
        else { return nil }
        let state = meta["state"] ?? ""
        return TreeStoreInfo(
            path: path, identity: TreeStoreIdentity(accountID: account, pathRoot: root, endpoint: endpoint),
            email: meta["email"] ?? "", mountpoint: meta["mountpoint"] ?? "",
            syncedAt: Int64(meta["synced_at"] ?? "") ?? 0, complete: state == "complete" || state == "refilling",
            tokenTag: meta["token_tag"])
    }

    /// The stores in `folder` with a servable tree, newest first.
    public static func storedTrees(in folder: String) -> [TreeStoreInfo] {
        var found: [TreeStoreInfo] = []
        do {
            try forEachEntry(inDirectory: folder) { name in
                if name.hasPrefix("tree-"), name.hasSuffix(".db"), let info = info(path: folder + "/" + name), info.complete {
                    found.append(info)
                }
                return true
            }
        } catch {
            return []
        }
        return found.sorted { $0.syncedAt > $1.syncedAt }
    }

    // MARK: Writing

    /// Queues a batch; it is written as one transaction after every batch submitted before it.
    func submit(_ batch: StoreBatch) {
        guard state.withLock({ $0.writing && !$0.closed }) else { return }
        queue.async { self.write(batch) }
    }

    private func write(_ batch: StoreBatch) {
        guard state.withLock({ $0.writing }) else { return }
        do {
            let db = connection.database
            try db.execute("BEGIN")
            do {
                for record in batch.records { try write(record) }
                switch batch.cursor {
                case .keep: break
                case .set(let cursor), .filled(let cursor):
                    try connection.meta("cursor", cursor)
                    try connection.meta("state", "complete")
                    try connection.meta("synced_at", String(time(nil)))
                    if case .filled = batch.cursor { try connection.meta("filled_at", String(time(nil))) }
                case .clear:
                    try connection.meta("cursor", nil)
                    try connection.meta("state", "refilling")
                }
                try db.execute("COMMIT")
            } catch {
                try? db.execute("ROLLBACK")
                throw error
            }
        } catch let error as SQLiteError where error.isDamage {
            // The file cannot be trusted, and this mount's tree cannot be written into a new one
            // batch by batch (a new file holds a tree only once a whole listing is written): set
            // the file aside, leaving an empty one for the next mount to fill, and stop writing.
            replaceDamaged(
                reason: "damaged (\(error))",
                outcome: "rebuilt from Dropbox by the next mount (this one keeps its tree in memory only)")
            state.withLock { $0.writing = false }
        } catch {
            // Skipping one batch and writing later ones would store a tree Dropbox never had: stop.
            disable("writing the stored tree failed (\(error))")
        }
    }

    private func write(_ record: StoredRecord) throws(SQLiteError) {
        guard let node = record.node else {
            connection.delete.bind(Int64(record.index), at: 1)
            try connection.delete.run()
            return
        }
        let s = connection.upsert
        s.bind(Int64(record.index), at: 1)
        s.bind(Int64(node.parent), at: 2)
        s.bind(node.name, at: 3)
        s.bind(record.key, at: 4)
        s.bind(Int64(node.kind.rawValue), at: 5)
        s.bind(
            (node.isDownloadable ? 1 : 0) | (node.provisional ? 4 : 0) | (record.oddKey ? 8 : 0)
                | (record.incomplete ? 16 : 0) | (node.access == .traverseOnly ? 32 : 0)
                | (node.access == .noAccess ? 64 : 0),
            at: 6)
        s.bind(Int64(bitPattern: node.size), at: 7)
        s.bind(node.mtime, at: 8)
        s.bind(node.ctime, at: 9)
        let id = node.id
        s.bind(id.isEmpty ? nil : id, at: 10)
        let rev = node.rev
        s.bind(rev.isEmpty ? nil : rev, at: 11)
        s.bind(blob: node.contentHash?.bytes, at: 12)
        s.bind(record.symlinkTarget, at: 13)
        try s.run()
    }

    private func disable(_ why: String) {
        let first = state.withLock { s -> Bool in
            defer { s.writing = false }
            return s.writing
        }
        if first { Log.warning("\(why); the tree is no longer stored (\(Log.quoted(path)))") }
    }

    /// Writes what is queued, closes the database and releases the lock (at unmount), waiting at
    /// most `timeout` seconds (nil: however long it takes). False when the time ran out: the queue
    /// waits on a disk that stopped answering, and the process's exit releases the lock.
    @discardableResult
    public func close(waitingAtMost timeout: Double? = nil) -> Bool {
        let already = state.withLock { s -> Bool in
            defer { s.closed = true }
            return s.closed
        }
        guard !already else { return true }
        let done = DispatchSemaphore(value: 0)
        queue.async { [self] in
            // A clean close checkpoints the journal into the database file.
            if !readOnly { try? connection.database.execute("PRAGMA wal_checkpoint(TRUNCATE)") }
            connection.close()
            done.signal()
        }
        if let timeout {
            guard done.wait(timeout: .now() + timeout) == .success else { return false }
        } else {
            done.wait()
        }
        if lockDescriptor >= 0 { Glibc.close(lockDescriptor) }
        return true
    }
}
