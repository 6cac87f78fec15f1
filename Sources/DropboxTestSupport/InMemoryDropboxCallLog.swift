// Call bookkeeping shared by the test clients (InMemoryDropbox, FaultInjectingClient): the names of
// the DropboxClient methods as Dropbox routes, per-method call counts, and a cancellation-aware
// sleep for artificial latency.

import DropboxAPI

/// A DropboxClient method, named by its Dropbox route (without "files/" or "users/").
public enum DropboxMethod: String, Sendable, Hashable, CaseIterable {
    case listFolder = "list_folder"
    case listFolderContinue = "list_folder/continue"
    case listFolderGetLatestCursor = "list_folder/get_latest_cursor"
    case listFolderLongpoll = "list_folder/longpoll"
    case getMetadata = "get_metadata"
    case download = "download"
    case export = "export"
    case getThumbnailBatch = "get_thumbnail_batch"
    case listRevisions = "list_revisions"
    case getCurrentAccount = "get_current_account"
    case getSpaceUsage = "get_space_usage"
    case getSharedLinkMetadata = "sharing/get_shared_link_metadata"
    case getSharedLinkFile = "sharing/get_shared_link_file"
    case downloadZip = "download_zip"
}

/// How many times each method was called.
struct CallLog: Sendable {
    private var counts: [DropboxMethod: Int] = [:]

    /// Counts a call and returns its number (1 for the first call of that method).
    mutating func record(_ method: DropboxMethod) -> Int {
        counts[method, default: 0] += 1
        return counts[method] ?? 0
    }

    func count(_ method: DropboxMethod) -> Int { counts[method] ?? 0 }

    /// Counts by route name, e.g. ["list_folder": 1, "download": 3]; methods never called are absent.
    var byRoute: [String: Int] {
        Dictionary(uniqueKeysWithValues: counts.map { ($0.key.rawValue, $0.value) })
    }
}

/// Sleeps for `duration`; a cancelled task gets a `.transport(.cancelled)` error, as a cancelled
/// HTTP request would.
func sleepUnlessCancelled(_ duration: Duration) async throws(DropboxError) {
    guard duration > .zero else { return }
    do {
        try await Task.sleep(for: duration)
    } catch {
        throw .transport(TransportError(kind: .cancelled, message: "the request was cancelled"))
    }
}
