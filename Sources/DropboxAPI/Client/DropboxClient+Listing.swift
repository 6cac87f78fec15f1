// Whole listings (list_folder + every continue page) with one page of look-ahead: the request for
// page N+1 leaves as soon as page N has arrived, and page N is handed over while it travels. This
// default serves every DropboxClient built from the two single-page calls (the in-memory and
// fault-injecting clients); the live client does better and sends it before page N is even
// decoded (DropboxHTTPClient+Listing.swift).

extension DropboxClient {
    public func listFolderAll(
        _ arg: ListFolderArg, each: (ListFolderResult) -> Bool
    ) async throws(DropboxError) -> String? {
        var page = try await listFolder(arg)
        var bounds = ListingBounds()
        while true {
            try bounds.check(page)
            let next = page.hasMore ? ListingLookAhead.start { [cursor = page.cursor] () async throws(DropboxError) in
                try await self.listFolderContinue(cursor: cursor)
            } : nil
            guard each(page) else {
                next?.cancel()
                return nil
            }
            guard let next else { return page.cursor }
            page = try await ListingLookAhead.value(of: next)
        }
    }
}

/// A request started ahead of need, as a Task whose typed error survives (Task itself only
/// carries `any Error`). Awaiting it passes the waiter's cancellation on to it.
enum ListingLookAhead {
    static func value<T: Sendable>(of task: Task<Result<T, DropboxError>, Never>) async throws(DropboxError) -> T {
        try await withTaskCancellationHandler {
            await task.value
        } onCancel: {
            task.cancel()
        }.get()
    }

    static func start<T: Sendable>(
        _ operation: @escaping @Sendable () async throws(DropboxError) -> T
    ) -> Task<Result<T, DropboxError>, Never> {
        Task {
            do throws(DropboxError) {
                return .success(try await operation())
            } catch {
                return .failure(error)
            }
        }
    }
}

/// Bounds on one whole listing, so a server whose cursor never advances, or whose pages never end,
/// fails the listing instead of holding it (and the requests waiting on it) forever. Dropbox may
/// send short and empty pages, so the limits only bite far past anything a real account needs.
public struct ListingBounds: Sendable {
    /// The same cursor handed back this many times in a row (with `has_more`) is a loop.
    static let maxRepeatedCursor = 100
    /// Empty pages with `has_more` in a row.
    static let maxEmptyPages = 10_000
    /// Pages in one listing: 10 million, enough for an account of 10 million entries listed
    /// one entry a page.
    static let maxPages = 10_000_000

    private var pages = 0
    private var emptyInARow = 0
    private var lastCursor: String?
    private var repeats = 0

    public init() {}

    public mutating func check(_ page: ListFolderResult) throws(DropboxError) {
        pages += 1
        guard page.hasMore else { return }
        if page.cursor == lastCursor { repeats += 1 } else { repeats = 0 }
        lastCursor = page.cursor
        emptyInARow = page.entries.isEmpty && page.undecodableEntries == 0 ? emptyInARow + 1 : 0
        if repeats >= Self.maxRepeatedCursor {
            throw .malformedResponse("list_folder: the cursor did not advance in \(repeats) pages")
        }
        if emptyInARow >= Self.maxEmptyPages {
            throw .malformedResponse("list_folder: \(emptyInARow) empty pages in a row")
        }
        if pages >= Self.maxPages {
            throw .malformedResponse("list_folder: more than \(Self.maxPages) pages")
        }
    }
}
