// files/download_zip for the in-memory Dropbox, by the rules the HTTP fake states
// (tools/fakedropbox/fakedropbox/zips.py, docs/DROPBOX-API.md "A folder as one zip"): fewer than
// 10,000 entries, the folder itself counted (`too_many_files`); under 20 GB in all and no file of
// 4 GB or more (`too_large`); members named `<folder name>/<path below it>`, folders with entries
// of their own; files stored uncompressed; export-only documents and restricted revisions left out.

import DropboxAPI

extension InMemoryDropbox: FolderZipRoute {
    public func downloadZip(path: String, maxBytes: Int) async throws(DropboxError) -> [UInt8] {
        try await enter(.downloadZip)
        let zip = try store.withLock { $0.downloadZip(path: path) }.get()
        guard zip.count <= maxBytes else {
            throw .transport(TransportError(kind: .other, message: "files/download_zip: more than \(maxBytes) bytes"))
        }
        return zip
    }
}

extension InMemoryDropboxStore {
    func downloadZip(path: String) -> Result<[UInt8], DropboxError> {
        let key: String
        switch DropboxPath.parse(path, folding: folding, namespaces: namespaceIds) {
        case .failure(let error): return .failure(error)
        case .success(.root): key = ""
        case .success(.rev): return .failure(.lookup(.notFolder))
        case .success(.key(let found)): key = found
        case .success(.id(let id, let rest)):
            guard let base = idIndex[id] else { return .failure(.lookup(.notFound)) }
            key = base + rest
        }
        let top: String
        if key.isEmpty {
            top = "Dropbox"
        } else {
            guard let entry = entries[key] else { return .failure(.lookup(.notFound)) }
            guard entry.isFolder else { return .failure(.lookup(.notFolder)) }
            top = entry.metadata.name
        }
        // Every entry below the folder, folders before their contents, by path.
        var below: [String] = []
        var stack = [key]
        while let folder = stack.popLast() {
            for child in (children[folder] ?? []).sorted() {
                below.append(child)
                if entries[child]?.isFolder == true { stack.append(child) }
            }
        }
        guard below.count + 1 < FolderZipLimits.maxEntries else { return .failure(.routeError(summary: "too_many_files/")) }
        let prefix = key.isEmpty ? 0 : (entries[key]?.metadata.pathDisplay ?? key).count + 1
        var members: [ZipWriter.Entry] = [ZipWriter.Entry(name: top + "/", bytes: nil)]
        var total: UInt64 = 0
        for child in below.sorted() {
            guard let entry = entries[child] else { continue }
            let relative = String((entry.metadata.pathDisplay ?? child).dropFirst(prefix))
            if entry.isFolder {
                members.append(ZipWriter.Entry(name: top + "/" + relative + "/", bytes: nil))
                continue
            }
            guard let file = entry.file, let content = entry.content, file.isDownloadable,
                !restrictedRevisions.contains(file.rev)
            else { continue }
            guard file.size < 4 << 30 else { return .failure(.routeError(summary: "too_large/")) }
            total += file.size
            guard total < 20_000_000_000 else { return .failure(.routeError(summary: "too_large/")) }
            members.append(ZipWriter.Entry(name: top + "/" + relative, bytes: content.allBytes))
        }
        return .success(ZipWriter.archive(members))
    }
}

extension FaultInjectingClient: FolderZipRoute where Base: FolderZipRoute {
    /// files/download_zip with the scripted faults, delays and holds of `.downloadZip`.
    public func downloadZip(path: String, maxBytes: Int) async throws(DropboxError) -> [UInt8] {
        _ = try await admit(.downloadZip)
        return try await base.downloadZip(path: path, maxBytes: maxBytes)
    }
}
