// A download reply's header block: each line through HeaderLine as libcurl hands them over (a status
// line starts a new response and forgets earlier fields, as CurlEasyTransfer does), then the
// `Dropbox-API-Result` value decoded as the client decodes it (FileMetadata through JSONDecoder).
// Besides not crashing:
//
// - a decoded size is at most ServerLimits.maxFileSize;
// - when the value is JSON by RFC 8259, the same object as a file entry of a list_folder page
//   (`".tag":"file"` put first) decodes to the identical FileMetadata (Exact) with both listing
//   decoders: a file reads the same whether it arrives in a listing or with its bytes.

import Foundation

@testable import DropboxAPI

enum APIResultFuzz {
    static func check(_ input: UnsafeBufferPointer<UInt8>) -> String? {
        var fields: [HTTPHeader] = []
        var lines = Lines(input)
        while let line = lines.next() {
            switch HeaderLine(UnsafeRawBufferPointer(line)) {
            case .statusLine: fields.removeAll()
            case .field(let field): fields.append(field)
            case nil: break
            }
        }
        guard let value = HTTPHeaders(fields)["Dropbox-API-Result"] else { return nil }
        let json = Array(value.utf8)
        guard let metadata = try? DropboxHTTPClient.decode(FileMetadata.self, from: json, route: "files/download")
        else { return nil }
        if metadata.size > ServerLimits.maxFileSize { return "a size of \(metadata.size), above the limit" }
        // HeaderLine trims the value, and JSONDecoder took all of it: it is one object, "{...}".
        guard json.first == UInt8(ascii: "{") else { return "a FileMetadata decoded from something not an object" }
        // JSONDecoder also takes text that is not JSON (a leading zero, a trailing comma), which the
        // listing decoder refuses (ListFolderFuzz.swift): the comparison holds for JSON only.
        guard json.withUnsafeBufferPointer({ StrictJSON.check($0, lazyStrings: false) }) == .valid else { return nil }
        let page =
            Array(#"{"entries":[{".tag":"file","#.utf8) + json.dropFirst()
            + Array(#"],"cursor":"c","has_more":false}"#.utf8)
        let want = Exact.render(ListFolderResult(entries: [.file(metadata)], cursor: "c", hasMore: false))
        let fast = try? ListFolderResult.decode(json: page)
        if fast.map(Exact.render) != want {
            return "as a list_folder entry the byte decoder gives \(fast.map(Exact.render) ?? "nil"), the header \(want)"
        }
        let reference = try? JSONDecoder().decode(ListFolderResult.self, from: Data(page))
        if reference.map(Exact.render) != want {
            return "as a list_folder entry JSONDecoder gives \(reference.map(Exact.render) ?? "nil"), the header \(want)"
        }
        return nil
    }
}
