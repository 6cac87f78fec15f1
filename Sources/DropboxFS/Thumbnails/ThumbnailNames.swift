// What names a thumbnail in the freedesktop Thumbnail Managing Standard: the file's URI, spelled
// exactly as GLib's g_filename_to_uri spells it (the file managers that read the cache are GTK
// programs: PCManFM, Thunar, Nautilus, Nemo, Caja), and the cache file named by the lower-case hex
// MD5 of that URI. A URI spelled differently by one byte names another cache file, which the file
// manager never looks at, so the escaping follows GLib's table (glib/gconvert.c, UNSAFE_PATH)
// rather than RFC 3986's unreserved set: ASCII letters and digits and `!$&'()*+,-./:=@_~` stay,
// every other byte of the UTF-8 path is %XX with upper-case hex.

import DropboxAPI

enum ThumbnailNames {
    /// The image extensions Dropbox makes thumbnails of (docs/DROPBOX-API.md, "Thumbnails"),
    /// lower-case.
    static let imageExtensions: Set<String> = ["jpg", "jpeg", "png", "tiff", "tif", "gif", "webp", "ppm", "bmp"]

    /// Dropbox does not convert images over 20 MiB ("20MB").
    static let sizeLimit: UInt64 = 20 << 20

    /// Whether Dropbox can thumbnail a file of this name and size.
    static func isImage(name: String, size: UInt64) -> Bool {
        guard size > 0, size <= sizeLimit, let dot = name.utf8.lastIndex(of: UInt8(ascii: ".")) else { return false }
        let suffix = name.utf8[name.utf8.index(after: dot)...]
        guard suffix.count <= 4 else { return false }
        return imageExtensions.contains(String(decoding: suffix, as: UTF8.self).lowercased())
    }

    /// `file://` and the escaped absolute path, as g_filename_to_uri(path, NULL) gives it.
    static func fileURI(_ path: String) -> String {
        var out: [UInt8] = Array("file://".utf8)
        out.reserveCapacity(out.count + path.utf8.count)
        for byte in path.utf8 {
            if kept(byte) {
                out.append(byte)
            } else {
                out += [UInt8(ascii: "%"), hexDigits[Int(byte >> 4)], hexDigits[Int(byte & 15)]]
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// The cache file of a URI: its MD5 in lower-case hex, then ".png".
    static func cacheFileName(uri: String) -> String {
        let digest = md5(Array(uri.utf8))
        var out: [UInt8] = []
        for byte in digest {
            out += [lowerHexDigits[Int(byte >> 4)], lowerHexDigits[Int(byte & 15)]]
        }
        return String(decoding: out, as: UTF8.self) + ".png"
    }

    /// The bytes GLib leaves as they are in a path (its `acceptable` table under UNSAFE_PATH).
    private static func kept(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"):
            return true
        default:
            return keptPunctuation.contains(byte)
        }
    }

    private static let keptPunctuation = Set("!$&'()*+,-./:=@_~".utf8)
    private static let hexDigits = Array("0123456789ABCDEF".utf8)
    private static let lowerHexDigits = Array("0123456789abcdef".utf8)

    static func md5(_ bytes: [UInt8]) -> [UInt8] {
        Digest.md5(bytes)
    }
}
