// What "available offline" asks of the disk cache, worked out from the tree: for each pinned path,
// the files below it (or the file itself) with the content_hash, size and revision to keep, and
// whether the pinned subtree is fully listed. Pure values over a MetadataTree, so the space check
// and the keeper's plan are tested without a mount (PinPlanTests).
//
// A file is wanted by its content_hash (the disk cache's key): two pinned files with the same bytes
// are one entry. Export-only documents (no bytes to download) and files without a content_hash
// (nothing could check them, so the disk cache never takes them) are counted apart as not
// available offline.

import DropboxAPI

/// One file a pin keeps on disk.
struct PinnedContent: Sendable, Equatable {
    var path: String
    var rev: String
    var size: UInt64
    var hash: ContentHash

    var key: String { hash.hex }
}

/// What one pin covers in the tree as it stands.
struct PinCoverage: Sendable, Equatable {
    /// The pin's path as the user gave it through the mount ("/a/b").
    var path: String
    /// The pinned entry is in the tree (nil when it is gone or not listed yet).
    var found: Bool
    /// Every folder below the pin is completely listed.
    var listed: Bool { unlisted.isEmpty }
    /// Folders below the pin (or the pin) whose listing is not complete.
    var unlisted: [UInt32] = []
    var files: [PinnedContent]
    /// Files that cannot be kept: export-only documents and files without a content_hash.
    var unavailable: Int

    /// Bytes of the distinct contents of `files`.
    var bytes: UInt64 { PinPlan.distinctBytes(files) }
}

enum PinPlan {
    /// The coverage of `path` ("/a/b", "" or "/" for the root) in `tree`.
    static func coverage(of path: String, in tree: MetadataTree) -> PinCoverage {
        var result = PinCoverage(path: path, found: false, files: [], unavailable: 0)
        guard let top = index(of: path, in: tree) else { return result }
        result.found = true
        var stack: [UInt32] = [top]
        while let index = stack.popLast() {
            guard let node = tree.node(index) else { continue }
            switch node.kind {
            case .symlink:
                continue
            case .file:
                if node.isDownloadable, let hash = node.contentHash {
                    result.files.append(PinnedContent(path: tree.path(of: index), rev: node.rev, size: node.size, hash: hash))
                } else {
                    result.unavailable += 1
                }
            case .folder:
                if !tree.isComplete(index) { result.unlisted.append(index) }
                let slot = Int(node.folderSlot)
                guard slot != 0 else { continue }
                tree.folders[slot].children.forEachChild { stack.append($0) }
            }
        }
        result.files.sort { $0.path < $1.path }
        return result
    }

    /// The node at a display path, each component found as the mount finds a name; nil when a
    /// component is missing.
    static func index(of path: String, in tree: MetadataTree) -> UInt32? {
        var current = MetadataTree.rootIndex
        for component in path.split(separator: "/", omittingEmptySubsequences: true) {
            let name = String(component)
            guard case .found(let next) = tree.lookup(parent: current, name: name, fold: FoldKey(name)) else {
                return nil
            }
            current = next
        }
        return current
    }

    /// The bytes of the distinct contents among `files`.
    static func distinctBytes(_ files: [PinnedContent]) -> UInt64 {
        var seen: Set<String> = []
        var total: UInt64 = 0
        for file in files where seen.insert(file.key).inserted { total += file.size }
        return total
    }

    /// Whether `pin` is `path` or lies below it (paths compared by their folded components).
    static func covers(_ path: String, _ pin: String) -> Bool {
        let a = folded(path)
        let b = folded(pin)
        return b.count >= a.count && Array(b.prefix(a.count)) == a
    }

    static func folded(_ path: String) -> [String] {
        path.split(separator: "/", omittingEmptySubsequences: true).map { FoldKey(String($0)).folded }
    }

    static func samePath(_ a: String, _ b: String) -> Bool { folded(a) == folded(b) }
}

/// The space check before a pin is accepted: the pinned contents must fit in the disk cache's cap,
/// and what is still to download must fit in the free space of the cache folder's disk. A refusal
/// says the numbers.
enum PinSpace {
    /// `pinnedBytes`: distinct bytes of every pin with the new one; `newBytes`: of those, the bytes
    /// not in the cache yet; `capacity`: the cache's cap; `free`: bytes free on its disk.
    static func refusal(path: String, pinnedBytes: UInt64, otherPinnedBytes: UInt64, newBytes: UInt64, capacity: UInt64, free: UInt64?)
        -> String?
    {
        if pinnedBytes > capacity {
            var text = "\(path) does not fit: it needs \(format(pinnedBytes - otherPinnedBytes))"
            if otherPinnedBytes > 0 { text += " beside \(format(otherPinnedBytes)) pinned already" }
            text += ", and the disk cache holds at most \(format(capacity)) (mount with a larger --cache-size, or unpin something)"
            return text
        }
        if let free, newBytes > free {
            return "\(path) does not fit: \(format(newBytes)) are still to download, and the disk of the cache folder has "
                + "\(format(free)) free"
        }
        return nil
    }

    /// "1.5 GiB (1610612736 bytes)": a readable size with its exact count, for refusals.
    static func format(_ bytes: UInt64) -> String {
        bytes < 1024 ? ByteCount.readable(bytes) : "\(ByteCount.readable(bytes)) (\(bytes) bytes)"
    }
}
