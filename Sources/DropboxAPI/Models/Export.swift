// The `Dropbox-API-Result` of files/export: the exported file's name and size, and the metadata
// of the document it was exported from (docs/SEMANTICS.md, "Export-only documents").

struct ExportReply: Decodable {
    struct ExportMetadata: Decodable {
        var name: String
        var size: UInt64?
        enum CodingKeys: String, CodingKey { case name, size }
    }

    struct SourceMetadata: Decodable {
        var rev: String?
    }

    var exportMetadata: ExportMetadata
    var fileMetadata: SourceMetadata?

    enum CodingKeys: String, CodingKey {
        case exportMetadata = "export_metadata"
        case fileMetadata = "file_metadata"
    }
}
