// Every FUSE operation, each one function of one shape: given its decoded request (FUSEOperations
// decodes libfuse's arguments), it calls the core's one entry for the operation, with the request's
// caller where the core's caller policies need it (file managers, lean walkers), and turns the
// answer into a Reply (`request.answer`); any error goes to the one failure path
// (FUSERequest.fail). The core answers now or later (lookup, opendir and readdir of a folder not
// listed yet or waiting for thumbnails, open of an export-only document or of a file with a disk
// cache entry; read and statfs always later), and a later answer comes from a Task, so a FUSE
// thread never waits on the network or the disk. Nothing here knows about Dropbox or decides about
// caching or callers. Every operation that would change the filesystem answers EROFS.

import DropboxFS

enum Operations {
    /// No such name is an answer the kernel may remember (a negative entry), not a failure.
    static func lookup(_ request: FUSERequest, parent: UInt64, name: String) {
        let timeouts = request.timeouts
        request.answer(
            request.core.lookup(parent: parent, name: name, caller: request.caller).mapResult {
                result throws(FilesystemError) -> Reply in
                switch result {
                case .success(let attributes): return .entry(attributes, timeouts)
                case .failure(.notFound): return .negativeEntry(timeout: timeouts.negative)
                case .failure(let error): throw error
                }
            })
    }

    static func forget(_ request: FUSERequest, _ forgets: [(inode: UInt64, count: UInt64)]) {
        request.answer { () throws(FilesystemError) -> Reply in
            request.core.forget(forgets)
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
        request.answer(request.core.openDirectory(request.inode, caller: request.caller).map { .open(info.opened($0)) })
    }

    /// readdir and readdirplus: one piece of a listing from `offset`, packed into at most `size`
    /// bytes.
    static func readdir(_ request: FUSERequest, size: Int, offset: UInt64, plus: Bool) {
        let piece = DirectoryBuffer(size: size, plus: plus, timeouts: request.timeouts)
        let answer = request.core.readDirectory(
            request.inode, from: offset, countingLookups: plus, caller: request.caller, into: piece)
        request.answer(
            answer.map { piece in
                var piece = piece
                return .bytes(piece.take())
            })
    }

    static func releasedir(_ request: FUSERequest) {
        request.answer { () throws(FilesystemError) -> Reply in .success }
    }

    static func statfs(_ request: FUSERequest) {
        request.answer(request.core.statfs().map { .statfs($0) })
    }

    /// Opening for writing (or with O_TRUNC) answers EROFS.
    static func open(_ request: FUSERequest, info: FileInfo) {
        guard !info.wantsWriting else { return request.answer(.now(.failure(.readOnly))) }
        request.answer(request.core.open(request.inode, caller: request.caller).map { .open(info.opened($0)) })
    }

    static func read(_ request: FUSERequest, size: Int, offset: Int, handle: UInt64) {
        request.answer(
            request.core.read(handle, at: UInt64(max(0, offset)), size: size, caller: request.caller).map { .bytes($0) })
    }

    static func release(_ request: FUSERequest, handle: UInt64?) {
        request.answer { () throws(FilesystemError) -> Reply in
            if let handle { request.core.releaseFile(handle: handle) }
            return .success
        }
    }

    /// The root's status attribute also carries the requests waiting for an answer (`waiting=N`:
    /// a listing, a download, a token), which only the adapter knows, the listing pieces served
    /// lean and the files looked up (`lean_listings=N file_lookups=N`, the core's caller
    /// policies), and the failure counts (OperationFailures).
    static func getxattr(_ request: FUSERequest, name: String, size: Int) {
        request.answer { () throws(FilesystemError) -> Reply in
            var value = try request.core.extendedAttribute(name, of: request.inode)
            if request.inode == Filesystem.rootInode && name == Filesystem.statusAttribute {
                value += " waiting=\(request.filesystem.requests.pendingCount) " + request.core.callerStatusFields
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
