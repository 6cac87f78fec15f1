// Access levels in the in-memory Dropbox (docs/SEMANTICS.md, "Access levels"): a team folder a
// member may only pass through (`traverse_only`) or not open at all (`no_access`), as its
// `sharing_info` says, and files whose content Dropbox blocks (`restricted_content`). A folder's
// level changes as a journaled change, as a new sharing_info would reach a cursor. Listing a
// `no_access` folder and downloading a blocked revision answer `path/restricted_content`, the
// lookup error Dropbox gives for content it will not serve (the HTTP fake answers the same).

import DropboxAPI

extension InMemoryDropboxStore {
    mutating func setFolderAccess(_ path: String, traverseOnly: Bool, noAccess: Bool) {
        let key = builderKey(path)
        guard let entry = entries[key], case .folder(var folder) = entry.metadata else {
            preconditionFailure("setFolderAccess: no folder at \(path)")
        }
        folder.traverseOnly = traverseOnly
        folder.noAccess = noAccess
        entries[key] = StoredEntry(metadata: .folder(folder), content: nil)
        record(.folder(folder))
    }

    mutating func restrictContent(_ path: String) {
        guard let file = entries[builderKey(path)]?.file else { preconditionFailure("restrictContent: no file at \(path)") }
        restrictedRevisions.insert(file.rev)
    }

    /// The failure of a listing of `scope` (a folder key) the account may not open, if it is one.
    func accessFailure(listing scope: String) -> DropboxError? {
        guard case .folder(let folder)? = entries[scope]?.metadata, folder.noAccess else { return nil }
        return .lookup(.restrictedContent)
    }

    /// The failure of a download of `file`'s revision, if Dropbox blocks it.
    func accessFailure(download file: FileMetadata) -> DropboxError? {
        restrictedRevisions.contains(file.rev) ? .lookup(.restrictedContent) : nil
    }
}
