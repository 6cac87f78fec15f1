// files/get_thumbnail_batch (docs/DROPBOX-API.md, "Thumbnails"): up to 25 images per request, each
// answered on its own, so one file Dropbox cannot thumbnail (not an image, over 20 MiB, gone) fails
// only its own entry. The argument's unions are sent in their tagged form ({".tag": "png"}); the
// reply's `metadata` is not decoded (the caller asked by revision and knows the file).

import Foundation

/// One image to thumbnail.
public struct ThumbnailArg: Sendable, Equatable, Hashable {
    public enum Format: String, Sendable { case jpeg, png, webp }

    /// The box the thumbnail fits in (with `mode` strict: neither side larger, aspect kept).
    public enum Size: String, Sendable {
        case w32h32, w64h64, w128h128, w256h256, w480h320, w640h480, w960h640, w1024h768, w2048h1536
    }

    public enum Mode: String, Sendable { case strict, bestfit, fitoneBestfit = "fitone_bestfit", original }

    /// "/a/b.jpg", "id:..." or "rev:...".
    public var path: String
    public var format: Format
    public var size: Size
    public var mode: Mode

    public init(path: String, format: Format = .png, size: Size = .w128h128, mode: Mode = .strict) {
        self.path = path
        self.format = format
        self.size = size
        self.mode = mode
    }

    /// The most entries one request may carry (more is a `too_many_files` error).
    public static let batchLimit = 25
}

/// Why Dropbox made no thumbnail of one entry of a batch.
public enum ThumbnailFailure: Error, Sendable, Equatable {
    /// `path/...`: no such file, a folder, ...
    case path(LookupFailure)
    /// Not an image type Dropbox thumbnails (by extension; also export-only documents).
    case unsupportedExtension
    /// An image Dropbox will not thumbnail: over 20 MiB, empty, or unreadable.
    case unsupportedImage
    case conversionError
    case encryptedContent
    case other(String)

    init(tag: String, pathTag: String?) {
        switch tag {
        case "path": self = .path(LookupFailure(tag: pathTag ?? "other"))
        case "unsupported_extension": self = .unsupportedExtension
        case "unsupported_image": self = .unsupportedImage
        case "conversion_error": self = .conversionError
        case "encrypted_content": self = .encryptedContent
        default: self = .other(tag)
        }
    }
}

// MARK: wire forms

struct ThumbnailBatchArg: Encodable {
    var entries: [ThumbnailArg]
}

/// `{".tag": "..."}`, how the route's unions are sent.
private struct Tag: Encodable {
    var tag: String
    enum CodingKeys: String, CodingKey { case tag = ".tag" }
}

extension ThumbnailArg: Encodable {
    enum CodingKeys: String, CodingKey { case path, format, size, mode }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(path, forKey: .path)
        try container.encode(Tag(tag: format.rawValue), forKey: .format)
        try container.encode(Tag(tag: size.rawValue), forKey: .size)
        try container.encode(Tag(tag: mode.rawValue), forKey: .mode)
    }
}

struct ThumbnailBatchReply: Decodable {
    /// One entry, decoded leniently: an entry of a shape not understood fails alone (as an unknown
    /// tag), never the whole batch.
    struct Entry: Decodable {
        /// The failure union; it and its `path` member may each be a bare tag.
        struct Failure: Decodable {
            var tag: String
            var path: UnionTag?
            enum CodingKeys: String, CodingKey { case path }

            init(from decoder: any Decoder) throws {
                tag = try UnionTag(from: decoder).tag
                // A lookup error that cannot be read is `other` (ThumbnailFailure.init).
                path = try? decoder.container(keyedBy: CodingKeys.self).decodeIfPresent(UnionTag.self, forKey: .path)
            }
        }
        var tag: String
        /// Base64 of the image bytes, on success.
        var thumbnail: String?
        var failure: Failure?
        enum CodingKeys: String, CodingKey { case thumbnail, failure }

        init(from decoder: any Decoder) throws {
            guard let tag = try? UnionTag(from: decoder).tag else {
                self.tag = "undecodable entry"
                return
            }
            self.tag = tag
            let c = try? decoder.container(keyedBy: CodingKeys.self)
            thumbnail = try? c?.decodeIfPresent(String.self, forKey: .thumbnail)
            failure = try? c?.decodeIfPresent(Failure.self, forKey: .failure)
        }
    }
    var entries: [Entry]

    /// One result per entry, in order; an entry tagged success without decodable bytes fails alone.
    func results(expected count: Int, route: String) throws(DropboxError) -> [Result<[UInt8], ThumbnailFailure>] {
        guard entries.count == count else {
            throw .malformedResponse("\(route): \(entries.count) entries for \(count) asked")
        }
        return entries.map { entry in
            switch entry.tag {
            case "success":
                guard let text = entry.thumbnail, let data = Data(base64Encoded: text), !data.isEmpty else {
                    return .failure(.other("undecodable thumbnail"))
                }
                return .success(Array(data))
            case "failure":
                let failure = entry.failure
                return .failure(ThumbnailFailure(tag: failure?.tag ?? "other", pathTag: failure?.path?.tag))
            default:
                return .failure(.other(entry.tag))
            }
        }
    }
}
