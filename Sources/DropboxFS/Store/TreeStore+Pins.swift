// The pins of "available offline" (Offline/OfflinePins.swift), kept in the tree store beside the
// tree they name, so they survive remounts and go with the account's stored tree (a store set aside
// as damaged or foreign takes its pins with it). One row per pinned path, as the user gave it
// through the mount. Schema version 3 added the table; a version 2 store gets it in place at open
// (`migrateToPins`), its tree kept.
//
// Threads: like every other SQLite call of the store, on `queue`. A pin change is written at once
// as its own transaction; a store that stopped writing (full disk, damage) keeps this mount's pins in
// memory only.

import Log

extension TreeStore {
    /// The table's declaration, in a new store and in the migration.
    static let pinsTable = "CREATE TABLE IF NOT EXISTS pins(path TEXT PRIMARY KEY) WITHOUT ROWID;"

    /// Adds the pins table to a version 2 store and marks it version 3, in one transaction.
    static func migrateToPins(_ database: SQLiteDatabase) throws(SQLiteError) {
        try database.execute("BEGIN; \(pinsTable) PRAGMA user_version = \(schemaVersion); COMMIT;")
        Log.info("the stored tree was upgraded to schema version \(schemaVersion) (pins for available offline)")
    }

    /// The pinned paths stored, by path; empty when the store has none or cannot be read (a
    /// version 2 store opened read-only has no table).
    public func pins() -> [String] {
        queue.sync {
            do throws(SQLiteError) {
                let statement = try connection.database.prepare("SELECT path FROM pins ORDER BY path")
                var paths: [String] = []
                while try statement.step() {
                    if let path = statement.text(0) { paths.append(path) }
                }
                return paths
            } catch {
                return []
            }
        }
    }

    /// Replaces the stored pins with `paths` (one transaction, queued after the batches before it).
    func storePins(_ paths: [String]) {
        guard state.withLock({ $0.writing && !$0.closed }) else { return }
        queue.async { [self] in
            guard state.withLock({ $0.writing }) else { return }
            let database = connection.database
            do {
                try database.execute("BEGIN; DELETE FROM pins;")
                do {
                    let insert = try database.prepare("INSERT OR REPLACE INTO pins(path) VALUES (?1)")
                    for path in paths {
                        insert.bind(path, at: 1)
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
