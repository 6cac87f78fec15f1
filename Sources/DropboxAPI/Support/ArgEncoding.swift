// JSON for the Dropbox-API-Arg header. Header values must be "HTTP header safe"
// (docs/DROPBOX-API.md, "Dropbox-API-Arg encoding"): 0x7F and every non-ASCII character become
// \uXXXX with lowercase hex, and characters above U+FFFF become a UTF-16 surrogate pair. Raw UTF-8
// there gets a 400 from Dropbox.

import Foundation

public enum ArgEncoding {
    /// `value` as compact JSON, escaped for use as a header value.
    public static func headerJSON(_ value: some Encodable) throws(DropboxError) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.withoutEscapingSlashes, .sortedKeys]
        let data: Data
        do {
            data = try encoder.encode(value)
        } catch {
            throw .malformedResponse("could not encode the request argument: \(error)")
        }
        return escapeForHeader(String(decoding: data, as: UTF8.self))
    }

    /// Replaces 0x7F and every non-ASCII character of `json` by a `\uXXXX` escape. Only valid when
    /// such characters occur inside JSON strings, which is always so for encoder output.
    public static func escapeForHeader(_ json: String) -> String {
        let hex = Array("0123456789abcdef".utf8)
        var out = [UInt8]()
        out.reserveCapacity(json.utf8.count)
        for unit in json.utf16 {
            if unit < 0x7F {
                out.append(UInt8(unit))
            } else {
                out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "u")])
                for shift in [12, 8, 4, 0] {
                    out.append(hex[Int((unit >> UInt16(shift)) & 0xF)])
                }
            }
        }
        return String(decoding: out, as: UTF8.self)
    }
}
