// files/download_zip beside the DropboxClient protocol: a folder's files as one zip, in one
// request, for the read-ahead across files (DropboxFS/Reader/FolderZips.swift). Dropbox documents
// its limits (fewer than 10,000 entries, files and folders and the folder itself; under 20 GB in
// all; no file of 4 GB or more) and no Range. What it does not promise, the reader of the zip does
// not rely on: each member is matched to the listing by name and checked against its content_hash
// before it is served (docs/DROPBOX-API.md, "A folder as one zip"). Implemented by the live client
// (DropboxHTTPClient+FolderZip.swift) and the in-memory fake.

public protocol FolderZipRoute: Sendable {
    /// The zip of folder `path` ("/a/b" or "id:..."), whole. A reply of more than `maxBytes` fails
    /// (a folder that grew since it was listed must not take memory without bound).
    func downloadZip(path: String, maxBytes: Int) async throws(DropboxError) -> [UInt8]
}

/// Dropbox's limits on files/download_zip.
public enum FolderZipLimits {
    /// A zip holds fewer entries than this: the folder, its files and its subfolders together.
    public static let maxEntries = 10_000
}
