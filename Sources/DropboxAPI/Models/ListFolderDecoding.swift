// list_folder and list_folder/continue replies decoded straight from their bytes. JSONDecoder took
// about 20 µs per entry (40 ms a 2000-entry page): a background fill of 1,000,000 entries spent
// 20 s of CPU there, on the two cores it shares with everything else. This decoder reads the same
// fields with the same rules as the Decodable conformances in Metadata.swift and ListFolder.swift:
//
// - unknown fields are skipped, an optional field may be absent or null, the first of duplicate
//   keys counts (as Foundation's decoder does), escaped keys are unescaped before matching;
// - an entry that does not decode (unknown tag, missing or mistyped field, lone surrogate, invalid
//   UTF-8) is dropped and counted in `undecodableEntries`; a page whose JSON is broken, or that lacks
//   entries, cursor or has_more, fails as a whole.
//
// Tests/DropboxAPITests/Models/ListFolderDecodingTests.swift checks it against JSONDecoder on the fake
// server's pages (evil names included), on crafted entries and on mutated bytes.

extension ListFolderResult {
    struct DecodingFailure: Error, CustomStringConvertible {
        var description: String
    }

    /// Decodes a list_folder reply; the error says what is wrong, never what the payload holds.
    static func decode(json bytes: [UInt8]) throws(DecodingFailure) -> ListFolderResult {
        try bytes.withUnsafeBufferPointer { (buffer) throws(DecodingFailure) -> ListFolderResult in
            var reader = JSONBytes(buffer)
            return try decodeTop(&reader)
        }
    }

    private static func decodeTop(_ r: inout JSONBytes) throws(DecodingFailure) -> ListFolderResult {
        var entries: [Metadata]?
        var undecodable = 0
        var cursor: String?
        var hasMore: Bool?
        var badCursor = false
        do {
            try r.members { r, key throws(JSONBytes.SyntaxError) in
                guard r.isValidText(key) else { throw JSONBytes.SyntaxError() }
                switch Key(key, in: r) {
                case .entries where entries == nil:
                    var list: [Metadata] = []
                    list.reserveCapacity(min(2000, r.end / 256))  // an entry is 250+ bytes
                    try r.elements { r throws(JSONBytes.SyntaxError) in
                        // One pass finds the entry's end and where its fields are.
                        var entry = EntryDecoder(reader: r)
                        try entry.locateFields()
                        r.i = entry.reader.i
                        if let metadata = entry.metadata() {
                            list.append(metadata)
                        } else {
                            undecodable += 1
                        }
                    }
                    entries = list
                case .cursor where cursor == nil:
                    guard let text = r.text(try r.string()) else {
                        badCursor = true
                        throw JSONBytes.SyntaxError()
                    }
                    cursor = text
                case .hasMore where hasMore == nil:
                    hasMore = try r.bool()
                default:
                    try r.skipValue()
                }
            }
            r.skipSpace()
            guard r.atEnd else { throw JSONBytes.SyntaxError() }
        } catch {
            throw DecodingFailure(description: badCursor ? "bad value at 'cursor'" : "not valid JSON")
        }
        guard let entries else { throw DecodingFailure(description: "missing entries at ''") }
        guard let cursor else { throw DecodingFailure(description: "missing cursor at ''") }
        guard let hasMore else { throw DecodingFailure(description: "missing has_more at ''") }
        return ListFolderResult(entries: entries, cursor: cursor, hasMore: hasMore, undecodableEntries: undecodable)
    }

    private enum Key {
        case entries, cursor, hasMore, other

        init(_ token: JSONBytes.Token, in r: JSONBytes) {
            if token.escaped {
                switch r.text(token) {
                case "entries": self = .entries
                case "cursor": self = .cursor
                case "has_more": self = .hasMore
                default: self = .other
                }
            } else if r.equals(token.range, "entries") {
                self = .entries
            } else if r.equals(token.range, "cursor") {
                self = .cursor
            } else if r.equals(token.range, "has_more") {
                self = .hasMore
            } else {
                self = .other
            }
        }
    }
}

/// One entry of a page: first where each known field's value lies, then the fields its `.tag`
/// needs, with Metadata.init(from:)'s required/optional rules. Nil when it does not decode.
private struct EntryDecoder {
    enum Field: Int, CaseIterable {
        case tag, name, id, pathLower, pathDisplay, clientModified, serverModified, rev, size, contentHash
        case isDownloadable, symlinkInfo, exportInfo, sharingInfo
    }

    /// Where the entry is read; after `locateFields`, just past its end.
    var reader: JSONBytes
    /// The start index of each field's value (-1: absent); a SIMD vector so it needs no heap.
    var starts = SIMD16<Int32>(repeating: -1)
    /// The entry is not an object, or one of its keys is not a valid string (JSONDecoder reads
    /// every key of an object it decodes): it does not decode.
    var unusable = false

    /// Skips the entry (broken JSON throws: the page fails) and notes where its fields are.
    mutating func locateFields() throws(JSONBytes.SyntaxError) {
        reader.skipSpace()
        guard reader.peek() == JSONBytes.openBrace, reader.end < Int(Int32.max) else {
            unusable = true
            try reader.skipValue()
            return
        }
        var starts = self.starts
        var unusable = false
        try reader.members { r, key throws(JSONBytes.SyntaxError) in
            if !r.isValidText(key) { unusable = true }
            if let field = Self.field(key, in: r), starts[field.rawValue] < 0 {
                starts[field.rawValue] = Int32(truncatingIfNeeded: r.i)
            }
            try r.skipValue()
        }
        self.starts = starts
        self.unusable = unusable
    }

    private static func field(_ key: JSONBytes.Token, in r: JSONBytes) -> Field? {
        if key.escaped {
            guard let text = r.text(key) else { return nil }
            return names.first { $0.0 == text }?.1
        }
        switch key.range.count {
        case 2: return r.equals(key.range, "id") ? .id : nil
        case 3: return r.equals(key.range, "rev") ? .rev : nil
        case 4:
            if r.equals(key.range, ".tag") { return .tag }
            if r.equals(key.range, "name") { return .name }
            return r.equals(key.range, "size") ? .size : nil
        case 10: return r.equals(key.range, "path_lower") ? .pathLower : nil
        case 11: return r.equals(key.range, "export_info") ? .exportInfo : nil
        case 12:
            if r.equals(key.range, "path_display") { return .pathDisplay }
            if r.equals(key.range, "content_hash") { return .contentHash }
            if r.equals(key.range, "symlink_info") { return .symlinkInfo }
            return r.equals(key.range, "sharing_info") ? .sharingInfo : nil
        case 15:
            if r.equals(key.range, "client_modified") { return .clientModified }
            if r.equals(key.range, "server_modified") { return .serverModified }
            return r.equals(key.range, "is_downloadable") ? .isDownloadable : nil
        default: return nil
        }
    }

    private static let names: [(String, Field)] = [
        (".tag", .tag), ("name", .name), ("id", .id), ("path_lower", .pathLower), ("path_display", .pathDisplay),
        ("client_modified", .clientModified), ("server_modified", .serverModified), ("rev", .rev),
        ("size", .size), ("content_hash", .contentHash), ("is_downloadable", .isDownloadable),
        ("symlink_info", .symlinkInfo), ("export_info", .exportInfo), ("sharing_info", .sharingInfo),
    ]

    private func at(_ field: Field) -> JSONBytes? {
        let start = starts[field.rawValue]
        guard start >= 0 else { return nil }
        var r = reader
        r.i = Int(start)
        return r
    }

    private func optionalString(_ field: Field) -> Value<String> {
        guard var r = at(field) else { return .absent }
        if r.takeNull() { return .absent }
        guard let token = try? r.string(), let text = r.text(token) else { return .invalid }
        return .value(text)
    }

    private func string(_ field: Field) -> String? {
        if case .value(let text) = optionalString(field) { return text }
        return nil
    }

    private func optionalBool(_ field: Field) -> Value<Bool> {
        guard var r = at(field) else { return .absent }
        if r.takeNull() { return .absent }
        guard let value = try? r.bool() else { return .invalid }
        return .value(value)
    }

    private func timestamp(_ field: Field) -> DropboxTimestamp? {
        guard var r = at(field), let token = try? r.string() else { return nil }
        if !token.escaped, let seconds = DropboxTimestamp.parse(UnsafeBufferPointer(rebasing: r.bytes[token.range])) {
            return DropboxTimestamp(secondsSinceEpoch: seconds)
        }
        return r.text(token).flatMap { DropboxTimestamp(parsing: $0) }
    }

    /// A size up to ServerLimits.maxFileSize; a larger one makes the entry undecodable.
    private func size() -> UInt64? {
        guard var r = at(.size), let range = try? r.number(), let size = r.unsigned(range) else { return nil }
        return size <= ServerLimits.maxFileSize ? size : nil
    }

    private func contentHash() -> Value<ContentHash> {
        guard var r = at(.contentHash) else { return .absent }
        if r.takeNull() { return .absent }
        guard let token = try? r.string() else { return .invalid }
        if !token.escaped {
            return ContentHash(hexDigits: UnsafeBufferPointer(rebasing: r.bytes[token.range])).map { .value($0) } ?? .invalid
        }
        return r.text(token).flatMap { ContentHash(hex: $0) }.map { .value($0) } ?? .invalid
    }

    /// The fields of a nested object (symlink_info, export_info, sharing_info) by name, each
    /// decoded by `read`; `.absent` when the object is absent or null.
    private func nested<T>(_ field: Field, _ read: (NestedObject) -> T?) -> Value<T> {
        guard var r = at(field) else { return .absent }
        if r.takeNull() { return .absent }
        var object = NestedObject(reader: r)
        guard (try? object.locate()) != nil, let value = read(object) else { return .invalid }
        return .value(value)
    }

    func metadata() -> Metadata? {
        guard !unusable, let tag = string(.tag), let name = string(.name) else { return nil }
        let pathLower = optionalString(.pathLower)
        let pathDisplay = optionalString(.pathDisplay)
        guard !pathLower.isInvalid, !pathDisplay.isInvalid else { return nil }
        switch tag {
        case "file":
            guard let id = string(.id), let clientModified = timestamp(.clientModified),
                let serverModified = timestamp(.serverModified), let rev = string(.rev), let size = size()
            else { return nil }
            let hash = contentHash()
            let downloadable = optionalBool(.isDownloadable)
            let symlink = nested(.symlinkInfo) { $0.string("target", required: true).flatMap { $0 } }
            let export = nested(.exportInfo) { $0.string("export_as", required: false) }
            let sharing = nested(.sharingInfo) { $0.sharing() }
            guard !hash.isInvalid, !downloadable.isInvalid, !symlink.isInvalid, !export.isInvalid, !sharing.isInvalid
            else { return nil }
            return .file(
                FileMetadata(
                    name: name, id: id, pathLower: pathLower.value, pathDisplay: pathDisplay.value,
                    clientModified: clientModified, serverModified: serverModified, rev: rev, size: size,
                    contentHash: hash.value, isDownloadable: downloadable.value ?? true,
                    symlinkTarget: symlink.value, exportAs: export.value ?? nil,
                    sharedReadOnly: sharing.value?.readOnly))
        case "folder":
            guard let id = string(.id) else { return nil }
            let sharing = nested(.sharingInfo) { $0.sharing() }
            guard !sharing.isInvalid else { return nil }
            return .folder(
                FolderMetadata(
                    name: name, id: id, pathLower: pathLower.value, pathDisplay: pathDisplay.value,
                    sharedFolderId: sharing.value?.sharedFolderId, sharedReadOnly: sharing.value?.readOnly,
                    traverseOnly: sharing.value?.traverseOnly ?? false, noAccess: sharing.value?.noAccess ?? false))
        case "deleted":
            return .deleted(DeletedMetadata(name: name, pathLower: pathLower.value, pathDisplay: pathDisplay.value))
        default:
            return nil
        }
    }
}

/// A field decode: `.absent` (missing, or null where that is allowed), a value, or a failure.
private enum Value<T> {
    case absent
    case value(T)
    case invalid

    var isInvalid: Bool {
        if case .invalid = self { return true }
        return false
    }

    var value: T? {
        if case .value(let v) = self { return v }
        return nil
    }
}

/// The first occurrence of each key of a small nested object, decoded on request. Keys are kept
/// as tokens and compared as bytes (only an escaped key becomes a String).
private struct NestedObject {
    struct Sharing {
        var readOnly: Bool?
        var sharedFolderId: String?
        var traverseOnly: Bool?
        var noAccess: Bool?
    }

    var reader: JSONBytes
    var keys: [(token: JSONBytes.Token, start: Int)] = []

    mutating func locate() throws(JSONBytes.SyntaxError) {
        var keys = self.keys
        try reader.members { r, token throws(JSONBytes.SyntaxError) in
            guard r.isValidText(token) else { throw JSONBytes.SyntaxError() }
            keys.append((token, r.i))
            try r.skipValue(depth: 2)
        }
        self.keys = keys
    }

    /// The value of the first key equal to `name` (duplicates after it are ignored).
    private func at(_ name: StaticString) -> JSONBytes? {
        for key in keys {
            let matches =
                key.token.escaped ? reader.text(key.token) == name.description : reader.equals(key.token.range, name)
            if matches {
                var r = reader
                r.i = key.start
                return r
            }
        }
        return nil
    }

    /// `.some(nil)` when absent or null and not required; nil when it does not decode.
    func string(_ key: StaticString, required: Bool) -> String?? {
        guard var r = at(key), !r.takeNull() else { return required ? nil : .some(nil) }
        guard let token = try? r.string(), let text = r.text(token) else { return nil }
        return .some(text)
    }

    func bool(_ key: StaticString) -> Bool?? {
        guard var r = at(key), !r.takeNull() else { return .some(nil) }
        guard let value = try? r.bool() else { return nil }
        return .some(value)
    }

    func sharing() -> Sharing? {
        guard let readOnly = bool("read_only"), let shared = string("shared_folder_id", required: false),
            let traverse = bool("traverse_only"), let noAccess = bool("no_access")
        else { return nil }
        return Sharing(readOnly: readOnly, sharedFolderId: shared, traverseOnly: traverse, noAccess: noAccess)
    }
}
