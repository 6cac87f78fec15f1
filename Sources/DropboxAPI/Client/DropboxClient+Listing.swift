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
        while true {
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
