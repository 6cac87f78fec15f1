// How the in-memory Dropbox changes: adding, modifying, deleting and moving entries, each change
// recorded in the journal the way list_folder/continue reports it (docs/DROPBOX-API.md, "Delta
// semantics"): `file` and `folder` for what now exists, `deleted` for a removed path and its
// subtree, a move as `deleted` at the old path plus the new entries, parents first (children first
// with the `lateParents` mode). Replacing a file by a folder or a folder by a file journals only the
// new entry, no `deleted` before it, as the contract allows. Misuse (deleting a missing path, moving
// onto an existing one) is a test bug and stops with a precondition.

import DropboxAPI

/// What a new file is: its bytes and the few fields a test may choose.
struct NewFile {
    var content: FileContent
    var clientModified: DropboxTimestamp?
    var isDownloadable = true
    var symlinkTarget: String?
    var exportAs: String?
}

extension InMemoryDropboxStore {
    /// Adds or replaces the file at `path`, creating missing parents. An existing file at the same
    /// path_lower (whatever its case) keeps its id; a folder there is replaced with its subtree.
    mutating func addFile(_ path: String, _ new: NewFile) -> FileMetadata {
        let parts = DropboxPath.builderComponents(path)
        let (parentKey, parents) = ensureFolders(parts.dropLast())
        let name = parts[parts.count - 1]
        let display = displayPath(of: parentKey) + "/" + name
        let key = self.key(display)
        let id: String
        if let existing = entries[key], let file = existing.file {
            id = file.id
            usedBytes -= file.size
        } else {
            removeSubtree(key)
            id = makeId()
        }
        let server = tick()
        let metadata = FileMetadata(
            name: name, id: id, pathLower: key, pathDisplay: display,
            clientModified: new.clientModified ?? server, serverModified: server, rev: makeRev(),
            size: new.content.size, contentHash: new.isDownloadable ? new.content.contentHash : nil,
            isDownloadable: new.isDownloadable, symlinkTarget: new.symlinkTarget, exportAs: new.exportAs)
        insert(StoredEntry(metadata: .file(metadata), content: new.content), at: key, id: id)
        revisions[metadata.rev] = StoredRevision(metadata: metadata, content: new.content)
        recordCreated(parents, then: [.file(metadata)])
        return metadata
    }

    /// Adds the folder at `path` and any missing parents; an existing folder is left alone, a file
    /// there is replaced.
    mutating func addFolder(_ path: String) -> FolderMetadata {
        let parts = DropboxPath.builderComponents(path)
        let (parentKey, parents) = ensureFolders(parts.dropLast())
        let name = parts[parts.count - 1]
        let display = displayPath(of: parentKey) + "/" + name
        let key = self.key(display)
        if let existing = entries[key], case .folder(let folder) = existing.metadata { return folder }
        removeSubtree(key)
        let folder = createFolder(name: name, key: key, display: display)
        recordCreated(parents, then: [.folder(folder)])
        return folder
    }

    /// New bytes for an existing file: same id and path, new rev and server_modified.
    mutating func modifyFile(_ path: String, content: FileContent, clientModified: DropboxTimestamp?) -> FileMetadata {
        let key = builderKey(path)
        guard let entry = entries[key], var file = entry.file else {
            preconditionFailure("modifyFile: no file at \(path)")
        }
        usedBytes -= file.size
        let server = tick()
        file.rev = makeRev()
        file.serverModified = server
        file.clientModified = clientModified ?? server
        file.size = content.size
        file.contentHash = file.isDownloadable ? content.contentHash : nil
        entries[key] = StoredEntry(metadata: .file(file), content: content)
        usedBytes += file.size
        revisions[file.rev] = StoredRevision(metadata: file, content: content)
        record(.file(file))
        return file
    }

    /// Removes `path` and its subtree.
    mutating func delete(_ path: String) {
        let key = builderKey(path)
        precondition(entries[key] != nil, "delete: nothing at \(path)")
        recordDeletion(of: removeSubtree(key))
    }

    /// Moves `from` (and its subtree) to `to`, creating missing parents of `to`. Ids stay; files get
    /// a new rev. A move that only changes case renames in place and, as on Dropbox, journals nothing.
    mutating func move(from: String, to: String) {
        let fromKey = builderKey(from)
        guard let moving = entries[fromKey], let oldRootDisplay = moving.metadata.pathDisplay else {
            preconditionFailure("move: nothing at \(from)")
        }
        let toParts = DropboxPath.builderComponents(to)
        let toKey = builderKey(to)
        if toKey == fromKey {
            renameInPlace(fromKey, to: toParts[toParts.count - 1])
            return
        }
        precondition(entries[toKey] == nil, "move: \(to) already exists")
        precondition(!DropboxPath.isWithin(toKey, fromKey), "move: \(to) lies inside \(from)")
        let removed = removeSubtree(fromKey)
        recordDeletion(of: removed)
        let (parentKey, parents) = ensureFolders(toParts.dropLast())
        let newRootName = toParts[toParts.count - 1]
        let newRootDisplay = displayPath(of: parentKey) + "/" + newRootName
        let newRootKey = self.key(newRootDisplay)
        var moved = [Metadata]()
        moved.reserveCapacity(removed.count)
        for (index, entry) in removed.enumerated() {
            guard let oldKey = entry.metadata.pathLower, let oldDisplay = entry.metadata.pathDisplay else { continue }
            let key = newRootKey + Self.suffix(of: oldKey, after: fromKey)
            let display = newRootDisplay + Self.suffix(of: oldDisplay, after: oldRootDisplay)
            let name = index == 0 ? newRootName : entry.metadata.name
            var stored = entry
            switch entry.metadata {
            case .folder(var folder):
                (folder.name, folder.pathLower, folder.pathDisplay) = (name, key, display)
                stored.metadata = .folder(folder)
                insert(stored, at: key, id: folder.id)
            case .file(var file):
                (file.name, file.pathLower, file.pathDisplay) = (name, key, display)
                file.rev = makeRev()
                stored.metadata = .file(file)
                insert(stored, at: key, id: file.id)
                if let content = entry.content {
                    revisions[file.rev] = StoredRevision(metadata: file, content: content)
                }
            case .deleted:
                continue
            }
            moved.append(stored.metadata)
        }
        recordCreated(parents, then: moved)
    }

    /// The key of a builder path, with repeated slashes collapsed.
    func builderKey(_ path: String) -> String {
        self.key("/" + DropboxPath.builderComponents(path).joined(separator: "/"))
    }

    /// Makes sure each of `names` exists as a folder below the previous one, starting at the root;
    /// returns the key of the last and the folders it had to create (not yet journalled).
    private mutating func ensureFolders(_ names: ArraySlice<String>) -> (key: String, created: [Metadata]) {
        var parentKey = ""
        var created = [Metadata]()
        for name in names {
            let display = displayPath(of: parentKey) + "/" + name
            let childKey = self.key(display)
            if let existing = entries[childKey] {
                precondition(existing.isFolder, "\(display) is a file, so it cannot hold entries")
            } else {
                created.append(.folder(createFolder(name: name, key: childKey, display: display)))
            }
            parentKey = childKey
        }
        return (parentKey, created)
    }

    /// Stores a new folder without journalling it.
    private mutating func createFolder(name: String, key: String, display: String) -> FolderMetadata {
        let folder = FolderMetadata(name: name, id: makeId(), pathLower: key, pathDisplay: display)
        insert(StoredEntry(metadata: .folder(folder), content: nil), at: key, id: folder.id)
        return folder
    }

    /// Journals a subtree that appeared at once: the missing parents a change created, then its own
    /// entries (parents first); with `lateParents`, the same entries children first.
    private mutating func recordCreated(_ parents: [Metadata], then own: [Metadata]) {
        let all = parents + own
        if adversarial.contains(.lateParents) {
            for entry in all.reversed() { record(entry) }
        } else {
            for entry in all { record(entry) }
        }
    }

    /// Journals the removal of a subtree (parents first): one `deleted` entry for its root, and one
    /// per descendant when `reportsDeletedChildren` is set.
    private mutating func recordDeletion(of removed: [StoredEntry]) {
        for (index, entry) in removed.enumerated() where index == 0 || reportsDeletedChildren {
            record(
                .deleted(
                    DeletedMetadata(
                        name: entry.metadata.name, pathLower: entry.metadata.pathLower,
                        pathDisplay: entry.metadata.pathDisplay)))
        }
    }

    /// A case-only rename: new name and display paths for the subtree, no journal entry.
    private mutating func renameInPlace(_ key: String, to newName: String) {
        guard let oldRootDisplay = entries[key]?.metadata.pathDisplay else { return }
        let newRootDisplay = displayPath(of: DropboxPath.parent(of: key)) + "/" + newName
        for k in subtree(key) {
            guard var entry = entries[k], let oldDisplay = entry.metadata.pathDisplay else { continue }
            let display = newRootDisplay + Self.suffix(of: oldDisplay, after: oldRootDisplay)
            switch entry.metadata {
            case .folder(var folder):
                folder.pathDisplay = display
                if k == key { folder.name = newName }
                entry.metadata = .folder(folder)
            case .file(var file):
                file.pathDisplay = display
                if k == key { file.name = newName }
                entry.metadata = .file(file)
            case .deleted:
                continue
            }
            entries[k] = entry
        }
    }

    /// What follows `prefix` in `path`, cut on UTF-8 bytes (a name may start with a combining mark,
    /// which would merge with "/" into one Character).
    private static func suffix(of path: String, after prefix: String) -> String {
        String(decoding: path.utf8.dropFirst(prefix.utf8.count), as: UTF8.self)
    }
}
