// files/list_revisions over HTTP: an RPC on the API host (docs/DROPBOX-API.md, "History"). Its
// route errors (`invalid_before_rev`, `before_rev_not_supported`) and lookup errors decode like
// every route's; old bytes come through download(path: "rev:...").

extension DropboxHTTPClient {
    public func listRevisions(_ arg: ListRevisionsArg) async throws(DropboxError) -> ListRevisionsResult {
        try await rpc("files/list_revisions", arg)
    }
}
