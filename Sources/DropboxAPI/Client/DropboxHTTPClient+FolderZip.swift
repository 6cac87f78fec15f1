// files/download_zip over HTTP (FolderZipRoute.swift): a content-download call whose argument is
// the folder's path and whose reply is the zip, whole (no Range). Dropbox builds the zip before
// its reply begins, so no answer bound applies, only the stall limit and a deadline from the size.

extension DropboxHTTPClient: FolderZipRoute {
    public func downloadZip(path: String, maxBytes: Int) async throws(DropboxError) -> [UInt8] {
        let route = "files/download_zip"
        let argHeader = try ArgEncoding.headerJSON(PathArg(path: path))
        return try await authorized(route) { token throws(DropboxError) in
            let headers = self.contentHeaders(token: token, arg: argHeader)
            var timeouts = self.configuration.downloadTimeouts(length: UInt64(max(0, maxBytes)))
            timeouts.answer = nil
            let request = HTTPRequest(
                method: .post, url: self.endpoints.contentRoute(route), headers: headers, body: [],
                timeouts: timeouts, maxBodyBytes: maxBytes)
            let response = try await self.exchange(request)
            guard response.headers["Dropbox-API-Result"] != nil else {
                throw .malformedResponse("\(route): the reply has no Dropbox-API-Result header")
            }
            return response.body
        }
    }
}
