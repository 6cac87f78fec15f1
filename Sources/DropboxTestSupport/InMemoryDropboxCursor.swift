// The in-memory Dropbox's list_folder cursor. Clients must treat cursors as opaque, so it is base64
// of a small JSON record: the listing's scope and options, the journal position it has seen, and,
// while a listing is still being paged, which snapshot and offset come next. In adversarial modes
// change pages also carry a turn and the last entry served, and an account among several its
// account id (absent otherwise, so default cursors are unchanged).

import Foundation

struct ListingCursor: Codable, Equatable {
    /// The resetCursors() epoch the cursor was made in.
    var epoch: Int
    /// The path_lower of the listed folder; "" for the root.
    var scope: String
    var recursive: Bool
    var limit: Int
    var hidesNonDownloadable: Bool
    /// The last journal sequence number this cursor has accounted for.
    var seq: Int
    /// Set while pages of a list_folder snapshot remain.
    var snapshot: Int?
    /// The next entry of the snapshot, or the next page when its pages are irregular.
    var offset: Int
    /// Adversarial change pages: how many change pages this cursor's chain has served (so an empty
    /// page with has_more leads to a different next page), and the journal sequence number of the
    /// last change served (the candidate for a repeat).
    var turn: Int?
    var lastSeq: Int?
    /// The account id of the account that issued it, set only by an account that is one of
    /// several (InMemoryDropboxAccounts), so default cursors are unchanged; another account's
    /// cursor is then `reset`, as Dropbox answers it.
    var account: String?

    var encoded: String {
        // Encoding a struct of strings, ints and bools cannot fail.
        let json = (try? JSONEncoder().encode(self)) ?? Data()
        return "fake1." + json.base64EncodedString()
    }

    init(
        epoch: Int, scope: String, recursive: Bool, limit: Int, hidesNonDownloadable: Bool, seq: Int,
        snapshot: Int? = nil, offset: Int = 0
    ) {
        self.epoch = epoch
        self.scope = scope
        self.recursive = recursive
        self.limit = limit
        self.hidesNonDownloadable = hidesNonDownloadable
        self.seq = seq
        self.snapshot = snapshot
        self.offset = offset
    }

    init?(decoding text: String) {
        guard text.hasPrefix("fake1."), let json = Data(base64Encoded: String(text.dropFirst(6))),
            let cursor = try? JSONDecoder().decode(ListingCursor.self, from: json)
        else { return nil }
        self = cursor
    }
}
