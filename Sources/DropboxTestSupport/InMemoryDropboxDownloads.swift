// get_metadata and download for the in-memory Dropbox (docs/DROPBOX-API.md, "Routes used",
// "Ranges"): lookups by "/path", "id:..." and "rev:..." (old revisions stay readable after changes
// and deletion), exact range slicing, and the errors the service gives for the root, folders,
// export-only files and ranges that start at or past the end of the file.

import DropboxAPI

extension InMemoryDropboxStore {
    func getMetadata(path: String) -> Result<Metadata, DropboxError> {
        switch DropboxPath.parse(path, folding: folding, namespaces: namespaceIds) {
        case .failure(let error): return .failure(error)
        case .success(.root): return .failure(Self.rootUnsupported)
        case .success(.rev(let rev)):
            guard let revision = revisions[rev] else { return .failure(.lookup(.notFound)) }
            var file = revision.metadata
            file.symlinkTarget = nil  // rev: lookups omit symlink_info (docs/DROPBOX-API.md "Symlinks")
            return .success(.file(file))
        case .success(.key(let key)): return entry(at: key).map(\.metadata)
        case .success(.id(let id, let rest)):
            guard let base = idIndex[id] else { return .failure(.lookup(.notFound)) }
            return entry(at: base + rest).map(\.metadata)
        }
    }

    func download(path: String, range: ByteRange?) -> Result<DownloadResult, DropboxError> {
        let file: FileMetadata
        let content: FileContent
        switch revision(at: path) {
        case .success(let found): (file, content) = (found.metadata, found.content)
        case .failure(let error): return .failure(error)
        }
        guard file.isDownloadable else { return .failure(.unsupportedFile) }
        if let blocked = accessFailure(download: file) { return .failure(blocked) }
        guard let range else { return .success(DownloadResult(metadata: file, data: content.allBytes)) }
        guard range.offset < content.size else { return .failure(.rangeNotSatisfiable) }
        return .success(DownloadResult(metadata: file, data: content.slice(offset: range.offset, length: range.length)))
    }

    /// files/export of an export-only file: a document in its `export_as` format, made from the
    /// revision's content so a new revision exports differently; files that can be downloaded are
    /// `non_exportable`, as Dropbox answers.
    func export(path: String) -> Result<ExportResult, DropboxError> {
        let found: StoredRevision
        switch revision(at: path) {
        case .success(let revision): found = revision
        case .failure(let error): return .failure(error)
        }
        let file = found.metadata
        guard !file.isDownloadable, let format = file.exportAs else {
            return .failure(.routeError(summary: "non_exportable/"))
        }
        let data = Self.exportedBytes(name: file.name, rev: file.rev, format: format, content: found.content)
        let base = file.name.split(separator: ".", omittingEmptySubsequences: false).dropLast().joined(separator: ".")
        return .success(
            ExportResult(name: (base.isEmpty ? file.name : base) + "." + format, size: UInt64(data.count), rev: file.rev, data: data))
    }

    /// The bytes an export gives: a heading with the name, format and revision, then a body
    /// derived from the stored content (so exports of different revisions differ).
    static func exportedBytes(name: String, rev: String, format: String, content: FileContent) -> [UInt8] {
        var out = Array("# \(name)\n\nexported as \(format) from revision \(rev)\n\n".utf8)
        let sample = content.slice(offset: 0, length: min(content.size, 3000))
        for (i, byte) in sample.enumerated() {
            out.append(UInt8(ascii: "a") + byte % 26)
            if i % 60 == 59 { out.append(UInt8(ascii: "\n")) }
        }
        out.append(UInt8(ascii: "\n"))
        return out
    }

    /// The file revision a download path names: a stored revision, or the current one of a file.
    func revision(at path: String) -> Result<StoredRevision, DropboxError> {
        let key: String
        switch DropboxPath.parse(path, folding: folding, namespaces: namespaceIds) {
        case .failure(let error): return .failure(error)
        case .success(.root): return .failure(Self.rootUnsupported)
        case .success(.rev(let rev)):
            guard let revision = revisions[rev] else { return .failure(.lookup(.notFound)) }
            return .success(revision)
        case .success(.key(let found)): key = found
        case .success(.id(let id, let rest)):
            guard let base = idIndex[id] else { return .failure(.lookup(.notFound)) }
            key = base + rest
        }
        return entry(at: key).flatMap { entry in
            guard let file = entry.file, let content = entry.content else { return .failure(.lookup(.notFile)) }
            return .success(StoredRevision(metadata: file, content: content))
        }
    }

    private func entry(at key: String) -> Result<StoredEntry, DropboxError> {
        guard let entry = entries[key] else { return .failure(.lookup(.notFound)) }
        return .success(entry)
    }

    private static let rootUnsupported = DropboxError.badRequest(message: "path: The root folder is unsupported.")
}
