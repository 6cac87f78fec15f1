// list_folder: the byte-level decoder (ListFolderDecoding.swift) against JSONDecoder through the
// Decodable conformances, on the same bytes. What "agree" means:
//
// - Both accept: the results are identical (Exact.render): the same entries in the same order, every
//   String byte for byte (not Swift's canonical-equivalence `==`), the same undecodableEntries,
//   cursor and has_more.
// - Only the byte decoder accepts: allowed. JSONDecoder fails a whole page for a bad escape or a raw
//   control character in a string it reads; the byte decoder drops just that entry (by design).
// - Only JSONDecoder accepts: allowed only for text that is not JSON by RFC 8259 (JSONDecoder takes
//   trailing commas, leading zeros, "1."; Dropbox sends none of them) or nests deeper than the
//   byte decoder's limit. A valid page it rejects is a failure.
// - Neither accepts: fine; nothing may crash on the way.
//
// ListFolderHead (the cursor read ahead of decoding) is checked against the byte decoder: when both
// read the page they must give the same cursor (byte for byte) and has_more.

import Foundation

@testable import DropboxAPI

enum ListFolderFuzz {
    static func check(_ input: UnsafeBufferPointer<UInt8>) -> String? {
        let bytes = Array(input)
        let fast = try? ListFolderResult.decode(json: bytes)
        let reference = try? JSONDecoder().decode(ListFolderResult.self, from: Data(bytes))
        if let fast, let reference {
            let got = Exact.render(fast)
            let want = Exact.render(reference)
            if got != want { return "the decoders disagree: byte decoder \(got), JSONDecoder \(want)" }
        }
        if fast == nil, reference != nil, StrictJSON.check(input, lazyStrings: false) == .valid {
            return "the byte decoder rejects a valid page that JSONDecoder decodes"
        }
        if let fast {
            if let head = ListFolderHead.scan(bytes),
                Exact.render(head.cursor) != Exact.render(fast.cursor) || head.hasMore != fast.hasMore
            {
                return "ListFolderHead read \(Exact.render(head.cursor)) \(head.hasMore), "
                    + "the page is \(Exact.render(fast.cursor)) \(fast.hasMore)"
            }
            for entry in fast.entries {
                if case .file(let file) = entry, file.size > ServerLimits.maxFileSize {
                    return "an entry of size \(file.size), above ServerLimits.maxFileSize"
                }
            }
        }
        return nil
    }
}
