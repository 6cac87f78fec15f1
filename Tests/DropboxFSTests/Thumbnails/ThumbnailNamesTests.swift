// The names file managers look thumbnails up by: the file URI as GLib's g_filename_to_uri spells
// it, and the MD5 of that URI. The expected values were taken from GLib 2.74 itself
// (g_filename_to_uri through ctypes) and Python's hashlib.md5.

import Foundation
import Testing

@testable import DropboxFS

@Suite enum ThumbnailTests {}

extension ThumbnailTests {
    @Suite struct NameTests {
        @Test(arguments: [
            ("/tmp/a b.jpg", "file:///tmp/a%20b.jpg", "45f1b47640b52dc5428fd58ac89fec15.png"),
            (
                "/home/u/dropbox/Camera Uploads/IMG_0001.jpg", "file:///home/u/dropbox/Camera%20Uploads/IMG_0001.jpg",
                "e06a75771044e8e28b5c603a190a3d11.png"
            ),
            (
                "/m/Caf\u{E9} \u{2615}/100% #1?.png", "file:///m/Caf%C3%A9%20%E2%98%95/100%25%20%231%3F.png",
                "bd559a5daad199db5033d5cc228fdc44.png"
            ),
            (
                "/m/a'b(c)!$&+,;=@~[x]{y}^`|\\\"<>.jpg",
                "file:///m/a'b(c)!$&+,%3B=@~%5Bx%5D%7By%7D%5E%60%7C%5C%22%3C%3E.jpg",
                "2b2bbbbec7e9008d3b48edf01e220566.png"
            ),
            // An NFD name stays NFD: its bytes are escaped as they are.
            ("/m/cafe\u{301}.jpg", "file:///m/cafe%CC%81.jpg", "fe6c657bff4991eeaa01d9bd41c199d0.png"),
        ])
        func uriAndCacheName(path: String, uri: String, name: String) {
            #expect(ThumbnailNames.fileURI(path) == uri)
            #expect(ThumbnailNames.cacheFileName(uri: uri) == name)
        }

        @Test func everyASCIIByteIsEscapedAsGLibDoes() {
            let printable = (32...126).map { Character(Unicode.Scalar(UInt8($0))) }.filter { $0 != "/" }
            let path = "/" + String(printable) + "/\u{1}\u{7F}"
            // g_filename_to_uri of the same path.
            let glib = "file:///%20!%22%23$%25&'()*+,-.0123456789:%3B%3C=%3E%3F@ABCDEFGHIJKLMNOPQRSTUVWXYZ"
                + "%5B%5C%5D%5E_%60abcdefghijklmnopqrstuvwxyz%7B%7C%7D~/%01%7F"
            #expect(ThumbnailNames.fileURI(path) == glib)
        }

        @Test func md5OfKnownInputs() {
            func hex(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }
            #expect(hex(ThumbnailNames.md5([])) == "d41d8cd98f00b204e9800998ecf8427e")
            #expect(hex(ThumbnailNames.md5(Array("abc".utf8))) == "900150983cd24fb0d6963f7d28e17f72")
        }

        @Test func imagesByExtensionAndSize() {
            for name in ["a.jpg", "A.JPG", "b.jpeg", "c.png", "d.tiff", "e.TIF", "f.gif", "g.webp", "h.ppm", "i.Bmp"] {
                #expect(ThumbnailNames.isImage(name: name, size: 1000), "\(name)")
            }
            for name in ["notes.txt", "jpg", ".jpg.txt", "a.jpgx", "a.heic", "a.", "a.pdf"] {
                #expect(!ThumbnailNames.isImage(name: name, size: 1000), "\(name)")
            }
            #expect(ThumbnailNames.isImage(name: "a.jpg", size: 20 << 20))
            #expect(!ThumbnailNames.isImage(name: "a.jpg", size: (20 << 20) + 1))
            #expect(!ThumbnailNames.isImage(name: "a.jpg", size: 0))
        }
    }
}
