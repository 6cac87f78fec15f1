// A thin wrapper over SQLite's C API for the tree store: a connection, prepared statements with
// typed binds and columns, and one error type. Nothing here knows about the tree. Neither class is
// thread-safe: each connection and its statements are used by one thread at a time (the store's
// writer thread, or the mounting thread while it loads), which SQLite's default threading mode
// allows.

import CSQLite

/// Something SQLite refused; `code` is its primary result code, `message` its explanation.
struct SQLiteError: Error, CustomStringConvertible {
    var code: Int32
    var message: String

    var description: String { "\(message) (SQLite code \(code))" }

    /// The file is not a database or is damaged (as opposed to busy, full or unreadable).
    var isDamage: Bool { code == SQLITE_CORRUPT || code == SQLITE_NOTADB }
}

final class SQLiteDatabase {
    private(set) var handle: OpaquePointer?

    /// Opens (or with `create`, creates) the database at `path`, refusing to follow a symlink.
    /// `immutable` (read-only) reads the file as it is, writing nothing beside it: no journal, no
    /// shared-memory file, no lock (SQLite's `immutable=1`), for a file on a disk that is full,
    /// over quota or read-only; what a journal left beside it is not seen.
    init(path: String, readOnly: Bool = false, create: Bool = true, immutable: Bool = false) throws(SQLiteError) {
        var flags = readOnly || immutable ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE
        if create && !readOnly && !immutable { flags |= SQLITE_OPEN_CREATE }
        flags |= SQLITE_OPEN_NOFOLLOW | SQLITE_OPEN_NOMUTEX
        if immutable { flags |= SQLITE_OPEN_URI }
        var db: OpaquePointer?
        let rc = sqlite3_open_v2(immutable ? Self.immutableURI(path) : path, &db, flags, nil)
        guard rc == SQLITE_OK, let db else {
            let message = db.map { String(cString: sqlite3_errmsg($0)) } ?? "cannot open"
            sqlite3_close_v2(db)
            throw SQLiteError(code: rc & 0xFF, message: message)
        }
        handle = db
        sqlite3_extended_result_codes(db, 0)
    }

    deinit { close() }

    /// `file:PATH?immutable=1`, the path's bytes other than unreserved ones and '/' escaped as %XX.
    static func immutableURI(_ path: String) -> String {
        var uri = "file:"
        for byte in path.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"), UInt8(ascii: "/"):
                uri.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                let hex = String(byte, radix: 16, uppercase: true)
                uri += "%" + (hex.count == 1 ? "0" + hex : hex)
            }
        }
        return uri + "?immutable=1"
    }

    func close() {
        guard let handle else { return }
        sqlite3_close_v2(handle)
        self.handle = nil
    }

    /// Runs one or more statements that return no rows.
    func execute(_ sql: String) throws(SQLiteError) {
        var errorText: UnsafeMutablePointer<CChar>?
        let rc = sqlite3_exec(handle, sql, nil, nil, &errorText)
        guard rc == SQLITE_OK else {
            let message = errorText.map { String(cString: $0) } ?? lastMessage
            sqlite3_free(errorText)
            throw SQLiteError(code: rc & 0xFF, message: message)
        }
    }

    func prepare(_ sql: String) throws(SQLiteError) -> SQLiteStatement {
        var statement: OpaquePointer?
        let rc = sqlite3_prepare_v3(handle, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &statement, nil)
        guard rc == SQLITE_OK, let statement else { throw SQLiteError(code: rc & 0xFF, message: lastMessage) }
        return SQLiteStatement(statement, database: self)
    }

    var lastMessage: String { handle.map { String(cString: sqlite3_errmsg($0)) } ?? "closed" }

    func error(_ rc: Int32) -> SQLiteError { SQLiteError(code: rc & 0xFF, message: lastMessage) }
}

final class SQLiteStatement {
    private var statement: OpaquePointer?
    private let database: SQLiteDatabase

    init(_ statement: OpaquePointer, database: SQLiteDatabase) {
        self.statement = statement
        self.database = database
    }

    deinit { finalize() }

    /// Releases the statement (a connection closes only once all of its statements are released).
    func finalize() {
        sqlite3_finalize(statement)
        statement = nil
    }

    /// SQLite copies bound text and blobs at once (SQLITE_TRANSIENT), so Swift buffers need not outlive the bind.
    private static let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

    func bind(_ value: Int64, at index: Int32) {
        sqlite3_bind_int64(statement, index, value)
    }

    func bind(_ value: String?, at index: Int32) {
        guard var value else {
            sqlite3_bind_null(statement, index)
            return
        }
        value.withUTF8 { bytes in
            // An empty buffer may have no base address; SQLite reads a NULL pointer as SQL NULL.
            let base = bytes.baseAddress.map { UnsafeRawPointer($0) } ?? UnsafeRawPointer(("" as StaticString).utf8Start)
            _ = sqlite3_bind_text(statement, index, base.assumingMemoryBound(to: CChar.self), Int32(bytes.count), Self.transient)
        }
    }

    func bind(blob bytes: [UInt8]?, at index: Int32) {
        guard let bytes else {
            sqlite3_bind_null(statement, index)
            return
        }
        bytes.withUnsafeBytes { raw in
            _ = sqlite3_bind_blob(statement, index, raw.baseAddress, Int32(raw.count), Self.transient)
        }
    }

    /// Steps once: true when a row is ready, false when done.
    func step() throws(SQLiteError) -> Bool {
        let rc = sqlite3_step(statement)
        switch rc {
        case SQLITE_ROW: return true
        case SQLITE_DONE: return false
        default: throw database.error(rc)
        }
    }

    /// Runs a statement that returns no rows, then makes it ready for new binds.
    func run() throws(SQLiteError) {
        defer { reset() }
        _ = try step()
    }

    func reset() {
        sqlite3_reset(statement)
        sqlite3_clear_bindings(statement)
    }

    func isNull(_ column: Int32) -> Bool { sqlite3_column_type(statement, column) == SQLITE_NULL }

    func int64(_ column: Int32) -> Int64 { sqlite3_column_int64(statement, column) }

    /// The column's bytes as a String (byte for byte: names in NFC and NFD stay distinct).
    func text(_ column: Int32) -> String? {
        guard let pointer = sqlite3_column_text(statement, column) else { return nil }
        let count = Int(sqlite3_column_bytes(statement, column))
        return String(decoding: UnsafeBufferPointer(start: pointer, count: count), as: UTF8.self)
    }

    /// The column's text as UTF-8 bytes, lent for the duration of `body` (empty for NULL): for
    /// values that need no String of their own.
    func withText<T>(_ column: Int32, _ body: (UnsafeBufferPointer<UInt8>) -> T) -> T {
        guard let pointer = sqlite3_column_text(statement, column) else {
            return body(UnsafeBufferPointer(start: nil, count: 0))
        }
        return body(UnsafeBufferPointer(start: pointer, count: Int(sqlite3_column_bytes(statement, column))))
    }

    /// The column's bytes, lent for the duration of `body` (nil pointer for NULL).
    func withBlob<T>(_ column: Int32, _ body: (UnsafeRawBufferPointer?) -> T) -> T {
        guard let pointer = sqlite3_column_blob(statement, column) else { return body(nil) }
        return body(UnsafeRawBufferPointer(start: pointer, count: Int(sqlite3_column_bytes(statement, column))))
    }
}
