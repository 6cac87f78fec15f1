// The `cursor` and `has_more` of a list_folder reply, read from its raw bytes without decoding the
// entries. A listing is a chain: page N+1 can only be asked for with page N's cursor, which Dropbox
// sends after the entries. Decoding 2000 entries takes tens of milliseconds, so reading the cursor
// first lets the next request leave while the current page is still being decoded
// (DropboxHTTPClient+Listing.swift).
//
// This is a walk over the top-level object only (with JSONBytes): nested values are skipped with
// their strings and brackets balanced, so a "cursor" key inside an entry or a string is never taken
// for the real one.
// Anything unexpected (not an object, a truncated body, a duplicate key, an escaped cursor, a key
// that spells cursor or has_more with escapes) gives nil, and the caller decodes the whole reply
// instead; the decoded values are checked against these anyway.

enum ListFolderHead {
    struct Head: Equatable {
        var cursor: String
        var hasMore: Bool
    }

    static func scan(_ bytes: [UInt8]) -> Head? {
        bytes.withUnsafeBufferPointer { buffer in
            var r = JSONBytes(buffer)
            var cursor: String?
            var hasMore: Bool?
            do {
                try r.members { r, key throws(JSONBytes.SyntaxError) in
                    // An escaped key may spell "cursor" or "has_more" (the decoder takes the first of
                    // either spelling): unsure, so nil.
                    if key.escaped, let text = r.text(key), text == "cursor" || text == "has_more" {
                        throw JSONBytes.SyntaxError()
                    }
                    if !key.escaped && r.equals(key.range, "cursor") {
                        let value = try r.string()
                        guard cursor == nil, !value.escaped, let text = r.text(value) else { throw JSONBytes.SyntaxError() }
                        cursor = text
                    } else if !key.escaped && r.equals(key.range, "has_more") {
                        guard hasMore == nil else { throw JSONBytes.SyntaxError() }
                        hasMore = try r.bool()
                    } else {
                        try r.skipValue()
                    }
                }
                r.skipSpace()
            } catch {
                return nil
            }
            guard r.atEnd, let cursor, let hasMore else { return nil }
            return Head(cursor: cursor, hasMore: hasMore)
        }
    }
}
