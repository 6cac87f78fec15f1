// The names of the history views (docs/SEMANTICS.md, "History"): two hidden names in every folder,
// reachable by name and never listed, so walks, `ls -a` and file managers never see them, and the
// file names of revisions. A revision is named by its server time (UTC, ISO 8601 basic form, so
// names sort by time) and its rev, with the original file's extension so file managers show and
// open it as the file it was: "2026-12-06T104100Z_5a0000000001.txt". A name is canonical: a
// lookup of a revision name answers only if the time and extension in it are that revision's.

import DropboxAPI

enum HistoryNames {
    /// In every folder: the earlier versions of the folder's files, one folder per file name.
    static let versions = ".dropboxfs-versions"
    /// In every folder: what was deleted in it, as a tree.
    static let deleted = ".dropboxfs-deleted"

    /// Whether `name` is one of the hidden names.
    static func isHidden(_ name: String) -> Bool { name == versions || name == deleted }

    /// The extension of a file name, with its dot ("" when there is none; a leading dot starts no
    /// extension: ".bashrc" has none).
    static func fileExtension(of name: String) -> String {
        guard let dot = name.utf8.lastIndex(of: UInt8(ascii: ".")), dot != name.utf8.startIndex else { return "" }
        let ext = String(name[dot...])
        return ext.utf8.count > 1 ? ext : ""
    }

    /// The name of revision `rev` made at `serverModified` of a file named `original`.
    static func revisionName(serverModified: DropboxTimestamp, rev: String, original: String) -> String {
        compactTime(serverModified) + "_" + rev + fileExtension(of: original)
    }

    /// The rev a revision name carries, if it has the form of one (the caller checks the rest).
    static func rev(inRevisionName name: String) -> String? {
        let bytes = Array(name.utf8)
        guard bytes.count >= timeLength + 1 + 9, bytes[timeLength] == UInt8(ascii: "_") else { return nil }
        var end = timeLength + 1
        while end < bytes.count, isLowerHex(bytes[end]) { end += 1 }
        guard end - (timeLength + 1) >= 9, end == bytes.count || bytes[end] == UInt8(ascii: ".") else { return nil }
        return String(decoding: bytes[(timeLength + 1)..<end], as: UTF8.self)
    }

    /// "2026-12-06T104100Z": 18 characters.
    static let timeLength = 18

    /// A time as the names carry it.
    static func compactTime(_ time: DropboxTimestamp) -> String {
        // DropboxTimestamp prints "2026-12-06T10:41:00Z"; drop the colons.
        String(time.description.filter { $0 != ":" })
    }

    private static func isLowerHex(_ byte: UInt8) -> Bool {
        (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")) || (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "f"))
    }
}
