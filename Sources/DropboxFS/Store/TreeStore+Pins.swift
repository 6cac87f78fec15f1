// The pins of "available offline" (Offline/OfflinePins.swift), kept in the tree store beside the
// tree they name, so they survive remounts and go with the account's stored tree (a store set aside
// as damaged or foreign takes its pins with it). One row per pinned path, as the user gave it
// through the mount, with the Dropbox id of the entry it named, so a pin follows its folder renamed
// or moved on Dropbox, also while nothing was mounted (OfflineKeeper.followMoves). Schema version 3
// added the table; a version 2 store gets it in place at open (`migrateToPins`), its tree kept. The
// `id` column came later within version 3: a store without it gets it at a writable open
// (`addPinIDs`), and a dropboxfs that knows no ids reads and writes its paths as before.
//
// Threads: like every other SQLite call of the store, on `queue`. A pin change is written at once
// as its own transaction; a store that stopped writing (full disk, damage) keeps this mount's pins in
// memory only.

import Log

extension TreeStore {
    /// The table's declaration, in a new store and in the migration.
    static let pinsTable = "CREATE TABLE IF NOT EXISTS pins(path TEXT PRIMARY KEY, id TEXT) WITHOUT ROWID;"

    /// Adds the pins table to a version 2 store and marks it version 3, in one transaction.
    static func migrateToPins(_ database: SQLiteDatabase) throws(SQLiteError) {
        try database.execute("BEGIN; \(pinsTable) PRAGMA user_version = \(schemaVersion); COMMIT;")
        Log.info("the stored tree was upgraded to schema version \(schemaVersion) (pins for available offline)")
    }

    /// Adds the `id` column to a pins table made without it (a writable open of version 3).
    static func addPinIDs(_ database: SQLiteDatabase) throws(SQLiteError) {
        let columns = try database.prepare("SELECT count(*) FROM pragma_table_info('pins') WHERE name = 'id'")
        defer { columns.finalize() }
        guard try columns.step(), columns.int64(0) == 0 else { return }
        try database.execute("ALTER TABLE pins ADD COLUMN id TEXT")
    }

    /// The pinned paths stored, by path; empty when the store has none or cannot be read (a
    /// version 2 store opened read-only has no table).
    public func pins() -> [String] { storedPins().map(\.path) }

    /// The pinned paths stored, by path, each with the id of the entry it named ("" when not
    /// known: a pin of the root, or stored by a dropboxfs that kept no ids).
    public func storedPins() -> [(path: String, id: String)] {
        queue.sync {
            for query in ["SELECT path, id FROM pins ORDER BY path", "SELECT path, NULL FROM pins ORDER BY path"] {
                do throws(SQLiteError) {
                    let statement = try connection.database.prepare(query)
                    var pins: [(path: String, id: String)] = []
                    while try statement.step() {
                        if let path = statement.text(0) { pins.append((path, statement.text(1) ?? "")) }
                    }
                    return pins
                } catch {
                    continue  // a read-only store of before the id column: the paths alone
                }
            }
            return []
        }
    }

    /// Replaces the stored pins with `paths`, each with its id from `ids` (one transaction, queued
    /// after the batches before it).
    func storePins(_ paths: [String], ids: [String: String] = [:]) {
        guard state.withLock({ $0.writing && !$0.closed }) else { return }
        queue.async { [self] in
            guard state.withLock({ $0.writing }) else { return }
            let database = connection.database
            do {
                try database.execute("BEGIN; DELETE FROM pins;")
                do {
                    let insert = try database.prepare("INSERT OR REPLACE INTO pins(path, id) VALUES (?1, ?2)")
                    for path in paths {
                        insert.bind(path, at: 1)
                        insert.bind(ids[path].flatMap { $0.isEmpty ? nil : $0 }, at: 2)
                        try insert.run()
                    }
                    try database.execute("COMMIT")
                } catch {
                    try? database.execute("ROLLBACK")
                    throw error
                }
            } catch {
                Log.warning("the pins could not be stored (\(error)); this mount keeps them in memory only")
            }
        }
    }
}
