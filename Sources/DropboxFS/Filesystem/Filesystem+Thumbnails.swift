// The core's side of thumbnails: a file manager listing a folder (Filesystem+Callers.swift) has its
// listing held until the folder's thumbnails are written, briefly, and the writer
// (ThumbnailWriter.swift) gets the folder's image files from the tree. Which process is a file
// manager is FileManagers.swift's to tell; what to fetch and write is the writer's.

import DropboxAPI

extension Filesystem {
    /// Whether listings by file managers wait for thumbnails (`thumbnailsWanted`): thumbnails are
    /// on, and the writer has not stopped (its cap reached, or its folder not writable).
    var wantsThumbnails: Bool { thumbnails?.isActive ?? false }

    /// A file manager is listing this folder: fetch Dropbox's thumbnails of its images into the
    /// thumbnail cache. Returns once they are written, or after `listingWait` seconds (the work
    /// goes on), or when the calling task is cancelled (its request was interrupted).
    func thumbnailsWanted(folder inode: UInt64) async {
        guard let thumbnails, let index = try? Self.index(inode) else { return }
        let done = thumbnails.wanted(folder: index) { [self] folder in await thumbnailSources(folder: folder) }
        _ = await done?.wait(seconds: thumbnails.options.listingWait)
    }

    /// The files of a folder Dropbox can make thumbnails of (listing the folder first when
    /// needed), in name order; nil when the folder is gone or cannot be listed.
    func thumbnailSources(folder index: UInt32) async -> [ThumbnailSource]? {
        do {
            try await sync.ensureListed(index)
        } catch {
            return nil
        }
        return tree.thumbnailSources(folder: index)
    }
}
