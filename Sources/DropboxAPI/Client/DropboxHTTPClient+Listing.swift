// Whole listings on the live client: each page's `cursor` and `has_more` are read from the raw
// reply (ListFolderHead) so the next continue is sent before the page is decoded; decoding and the
// caller's work on page N then overlap the round trip of page N+1. A background fill of 100,000
// entries is 50 pages, and each would otherwise wait for both.
//
// The raw values are checked against the decoded page: on a mismatch (which would mean the scan
// misread the reply) the request sent ahead is cancelled and the listing continues from the
// decoded cursor. A reply whose head cannot be read is decoded inside the paced request, so a body
// cut short is retried like any other failed exchange.

import Log

extension DropboxHTTPClient {
    public func listFolderAll(
        _ arg: ListFolderArg, each: (ListFolderResult) -> Bool
    ) async throws(DropboxError) -> String? {
        var raw = try await rawListingPage("files/list_folder", body: try Self.json(arg))
        var bounds = ListingBounds()
        while true {
            var next = raw.head.flatMap { head in head.hasMore ? startContinue(head.cursor) : nil }
            let page: ListFolderResult
            do {
                page = try raw.page()
            } catch {
                next?.cancel()
                throw error
            }
            if raw.head != ListFolderHead.Head(cursor: page.cursor, hasMore: page.hasMore) {
                if raw.head != nil { Log.warning("list_folder: the reply's cursor was misread; continuing from the decoded one") }
                next?.cancel()
                next = page.hasMore ? startContinue(page.cursor) : nil
            }
            do {
                try bounds.check(page)
            } catch {
                next?.cancel()
                throw error
            }
            guard each(page) else {
                next?.cancel()
                return nil
            }
            guard let next else { return page.cursor }
            raw = try await ListingLookAhead.value(of: next)
        }
    }

    private func startContinue(_ cursor: String) -> Task<Result<RawListingPage, DropboxError>, Never> {
        ListingLookAhead.start { () async throws(DropboxError) in
            try await self.rawListingPage("files/list_folder/continue", body: try Self.json(CursorArg(cursor: cursor)))
        }
    }

    /// One page as received: its bytes and head, or the decoded page when the head was unreadable.
    private func rawListingPage(_ route: String, body: [UInt8]) async throws(DropboxError) -> RawListingPage {
        try await authorized(route) { token throws(DropboxError) in
            let response = try await self.exchange(self.rpcRequest(route, body: body, token: token))
            if let head = ListFolderHead.scan(response.body) {
                return RawListingPage(route: route, body: response.body, head: head, decoded: nil)
            }
            let page = try Self.decodeListing(response.body, route: route)
            return RawListingPage(route: route, body: [], head: nil, decoded: page)
        }
    }
}

struct RawListingPage: Sendable {
    var route: String
    var body: [UInt8]
    var head: ListFolderHead.Head?
    var decoded: ListFolderResult?

    func page() throws(DropboxError) -> ListFolderResult {
        if let decoded { return decoded }
        return try DropboxHTTPClient.decodeListing(body, route: route)
    }
}
