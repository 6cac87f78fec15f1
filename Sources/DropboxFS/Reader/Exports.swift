// Export-only documents (Dropbox Paper, Google Docs/Sheets/Slides stored in Dropbox): Dropbox lists
// them with `is_downloadable` false and can only convert them (files/export). Opening one exports
// it whole, in the format Dropbox names for it (`export_info.export_as`: Markdown or HTML for Paper,
// docx/xlsx/pptx for Google documents), and the handle reads those bytes. The name stays the one
// Dropbox shows. The size Dropbox lists is not the export's, so the handle bypasses the page cache
// (direct_io: the kernel never cuts a read at the listed size), and once an export's size is known
// the tree reports it for that revision and the kernel's attributes are invalidated. Each open
// exports again (documents are small; a new revision is a new inode anyway).
// docs/SEMANTICS.md, "Export-only documents".
//
// Locking: `state` guards the open export handles; never held across an await.

import DropboxAPI
import Synchronization

final class ExportedDocuments: Sendable {
    /// Export handles are numbered from here, apart from the file reader's.
    static let firstHandle: UInt64 = 1 << 62

    private struct State {
        var handles: [UInt64: [UInt8]] = [:]
        var next = ExportedDocuments.firstHandle
    }

    private let state = Mutex(State())

    func owns(_ handle: UInt64) -> Bool { handle >= Self.firstHandle }

    func open(_ bytes: [UInt8]) -> UInt64 {
        state.withLock { s in
            let handle = s.next
            s.next += 1
            s.handles[handle] = bytes
            return handle
        }
    }

    /// Up to `size` bytes at `offset`; fewer only at the end of the export.
    func read(_ handle: UInt64, offset: UInt64, size: Int) throws(FilesystemError) -> [UInt8] {
        let slice = state.withLock { s -> [UInt8]? in
            guard let bytes = s.handles[handle] else { return nil }
            guard offset < UInt64(bytes.count) else { return [] }
            let start = Int(offset)
            return Array(bytes[start..<min(bytes.count, start + max(0, size))])
        }
        guard let slice else { throw .badHandle }
        return slice
    }

    func release(_ handle: UInt64) {
        _ = state.withLock { $0.handles.removeValue(forKey: handle) }
    }

    var openCount: Int { state.withLock { $0.handles.count } }
}
