// Every FUSE operation, each one function of one shape: given its decoded request (FUSEOperations
// decodes libfuse's arguments), it calls the core and turns the result into a Reply
// (`request.answer`); any error goes to the one failure path (FUSERequest.fail). Operations the
// core may have to wait for (lookup, opendir and readdir of a folder not listed yet or waiting for
// thumbnails, open of an export-only document or of a file with a disk cache entry, read, statfs)
// answer from a Task when they must, so a FUSE thread never waits on the network or the disk.
// Nothing here knows about Dropbox or decides about caching; which process is a file manager is the
// adapter's to tell (FileManagers.swift), what to do about it the core's. Every operation that would change the filesystem answers EROFS.

import DropboxFS

enum Operations {
    /// A file looked up is also a sign that its caller wants files' attributes (Walkers.swift).
    /// A lookup in a folder listed lean is answered from a Task, once the kernel's cached lean
    /// listings are dropped (or after `Walkers.dropWait`), so the caller's next folders are listed
    /// afresh rather than looked up file by file.
    static func lookup(_ request: FUSERequest, parent: UInt64, name: String) {
        let (core, timeouts, walkers, pid) = (request.core, request.timeouts, request.filesystem.walkers, request.caller.pid)
        request.answer(
            now: { () throws(FilesystemError) -> Reply? in
                // Asked before the lookup counts a kernel reference: `later` counts its own.
                if walkers.listedLean(parent) { return nil }
                switch try core.lookupCached(parent: parent, name: name) {
                case .found(let attributes):
                    if attributes.kind != .folder {
                        let dropped = walkers.lookedUpFile(pid: pid, in: parent)
                        if !dropped.isEmpty { Task { await core.dropKernelListings(dropped, waitingAtMost: 0) } }
                    }
                    return .entry(attributes, timeouts)
                case .notFound: return .negativeEntry(timeout: timeouts.negative)
                case .needsListing: return nil
                }
            },
            later: { () throws(FilesystemError) -> Reply in
                do throws(FilesystemError) {
                    let attributes = try await core.lookup(parent: parent, name: name)
                    if attributes.kind != .folder {
                        let dropped = walkers.lookedUpFile(pid: pid, in: parent)
                        if !dropped.isEmpty { await core.dropKernelListings(dropped, waitingAtMost: Walkers.dropWait) }
                    }
                    return .entry(attributes, timeouts)
                } catch .notFound {
                    return .negativeEntry(timeout: timeouts.negative)
                }
            })
    }

    static func forget(_ request: FUSERequest, _ forgets: [(inode: UInt64, count: UInt64)]) {
        request.answer { () throws(FilesystemError) -> Reply in
            for forget in forgets { request.core.forget(forget.inode, count: forget.count) }
            request.filesystem.walkers.forgot(forgets.lazy.map(\.inode))
            return .forgotten
        }
    }

    static func getattr(_ request: FUSERequest) {
        request.answer { () throws(FilesystemError) -> Reply in
            let attributes = try request.core.attributes(of: request.inode)
            return .attributes(attributes, timeout: request.timeouts.attributes(of: attributes))
        }
    }

    static func readlink(_ request: FUSERequest) {
        request.answer { () throws(FilesystemError) -> Reply in .link(try request.core.readlink(request.inode)) }
    }

    /// Answered with a handle only where the kernel cannot open folders itself, or where listings
    /// expire and opendir is the point to list a folder again.
    static func opendir(_ request: FUSERequest, info: FileInfo) {
        if request.filesystem.kernelOpensFolders.load(ordering: .relaxed) {
            request.answer { () throws(FilesystemError) -> Reply in .noOpendir }
            return
        }
        let (core, inode, isFileManager) = (request.core, request.inode, fileManagerCheck(request))
        request.answer(
            now: { () throws(FilesystemError) -> Reply? in
                try core.openDirectoryCached(inode, isFileManager: isFileManager).map { .open(info.opened($0)) }
            },
            later: { () throws(FilesystemError) -> Reply in
                .open(info.opened(try await core.openDirectory(inode, isFileManager: isFileManager)))
            })
    }

    /// readdir and readdirplus: one piece of a listing from `offset`, packed into at most `size`
    /// bytes; in readdirplus, files go lean for a thread that walks (Walkers.swift).
    static func readdir(_ request: FUSERequest, size: Int, offset: UInt64, plus: Bool) {
        let (core, inode, timeouts, isFileManager) = (request.core, request.inode, request.timeouts, fileManagerCheck(request))
        let lean = plus && request.filesystem.walkers.listsLean(
            pid: request.caller.pid, folder: inode, firstPiece: offset == 0, isFileManager: isFileManager)
        request.answer(
            now: { () throws(FilesystemError) -> Reply? in
                var piece = DirectoryBuffer(size: size, plus: plus, timeouts: timeouts)
                let served = try core.readDirectoryCached(
                    inode, from: offset, countingLookups: plus, leanFiles: lean, isFileManager: isFileManager
                ) { entry, next in piece.add(entry, nextOffset: next) }
                return served ? .bytes(piece.take()) : nil
            },
            later: { () throws(FilesystemError) -> Reply in
                var piece = DirectoryBuffer(size: size, plus: plus, timeouts: timeouts)
                try await core.readDirectory(
                    inode, from: offset, countingLookups: plus, leanFiles: lean, isFileManager: isFileManager
                ) { entry, next in piece.add(entry, nextOffset: next) }
                return .bytes(piece.take())
            })
    }

    /// Whether the request comes from a file manager, asked by the core only while it writes
    /// thumbnails. The caller is read now, on the FUSE thread; the answer may be asked later.
    private static func fileManagerCheck(_ request: FUSERequest) -> @Sendable () -> Bool {
        let caller = request.caller
        let fileManagers = request.filesystem.fileManagers
        return { fileManagers.isFileManager(pid: caller.pid, uid: caller.uid) }
    }

    static func releasedir(_ request: FUSERequest) {
        request.answer { () throws(FilesystemError) -> Reply in .success }
    }

    static func statfs(_ request: FUSERequest) {
        let core = request.core
        request.answerLater { () throws(FilesystemError) -> Reply in .statfs(try await core.statistics()) }
    }

    /// Opening for writing (or with O_TRUNC) answers EROFS; an export-only document is exported
    /// first, and a file with a disk cache entry has it opened first (off this thread: the disk
    /// may stop answering), from a Task (Exports.swift, Reader/DiskWork.swift).
    static func open(_ request: FUSERequest, info: FileInfo) {
        let (core, inode) = (request.core, request.inode)
        request.answer(
            now: { () throws(FilesystemError) -> Reply? in
                if info.wantsWriting { throw .readOnly }
                do throws(FilesystemError) {
                    return try core.openFileCached(inode).map { .open(info.opened($0)) }
                } catch .notDownloadable {
                    return nil
                }
            },
            later: { () throws(FilesystemError) -> Reply in
                do throws(FilesystemError) {
                    return .open(info.opened(try await core.openFile(inode)))
                } catch .notDownloadable {
                    return .open(info.opened(try await core.openExport(inode)))
                }
            })
    }

    static func read(_ request: FUSERequest, size: Int, offset: Int, handle: UInt64) {
        let (core, ranged) = (request.core, request.filesystem.fileManagers.readsRanges(pid: request.caller.pid))
        request.answerLater { () throws(FilesystemError) -> Reply in
            .bytes(try await core.read(handle: handle, offset: UInt64(max(0, offset)), size: size, ranged: ranged))
        }
    }

    static func release(_ request: FUSERequest, handle: UInt64?) {
        request.answer { () throws(FilesystemError) -> Reply in
            if let handle { request.core.releaseFile(handle: handle) }
            return .success
        }
    }

    /// The root's status attribute also carries what only the adapter knows: the requests
    /// waiting for an answer (`waiting=N`: a listing, a download, a token), the listing pieces
    /// served lean and the files looked up (`lean_listings=N file_lookups=N`, Walkers.swift), and
    /// the failure counts (OperationFailures).
    static func getxattr(_ request: FUSERequest, name: String, size: Int) {
        request.answer { () throws(FilesystemError) -> Reply in
            var value = try request.core.extendedAttribute(name, of: request.inode)
            if request.inode == Filesystem.rootInode && name == Filesystem.statusAttribute {
                value += " waiting=\(request.filesystem.requests.pendingCount) " + request.filesystem.walkers.statusFields
                    + " " + request.filesystem.failures.statusFields
            }
            return try Reply.xattr(Array(value.utf8), size: size)
        }
    }

    static func listxattr(_ request: FUSERequest, size: Int) {
        request.answer { () throws(FilesystemError) -> Reply in
            var bytes: [UInt8] = []
            for attribute in try request.core.extendedAttributes(of: request.inode) {
                bytes.append(contentsOf: attribute.name.utf8)
                bytes.append(0)
            }
            return try Reply.xattr(bytes, size: size)
        }
    }

    /// Every operation that would change the filesystem.
    static func refuse(_ request: FUSERequest) {
        request.answer { () throws(FilesystemError) -> Reply in throw .readOnly }
    }
}
