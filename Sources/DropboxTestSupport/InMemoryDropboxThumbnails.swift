// files/get_thumbnail_batch for the in-memory Dropbox: each entry answered alone, with the failures
// Dropbox gives (a path that names no file, a name without an image extension or an export-only
// document, an image over 20 MiB or empty), and for an image a small valid image in the format asked
// (8 x 6 pixels, or 6 x 8): a PNG whose colours come from the revision's content_hash, or a JPEG or
// WebP of one colour from it (TestImages.swift), so a new revision gives another picture. The PNG is built here with its own CRC-32 and Adler-32, written apart from the
// filesystem core's, so tests can check one against the other.

import DropboxAPI

extension InMemoryDropboxStore {
    /// The extensions Dropbox thumbnails (docs/DROPBOX-API.md, "Thumbnails"), lower-case.
    static let imageExtensions: Set<String> = ["jpg", "jpeg", "png", "tiff", "tif", "gif", "webp", "ppm", "bmp"]

    /// Dropbox does not convert images over 20 MiB.
    static let thumbnailSizeLimit: UInt64 = 20 << 20

    func thumbnail(_ arg: ThumbnailArg) -> Result<[UInt8], ThumbnailFailure> {
        let found: StoredRevision
        switch revision(at: arg.path) {
        case .success(let revision): found = revision
        case .failure(.lookup(let failure)): return .failure(.path(failure))
        case .failure: return .failure(.path(.malformedPath))
        }
        let file = found.metadata
        let name = file.name.lowercased()
        guard file.isDownloadable, let dot = name.lastIndex(of: "."),
            Self.imageExtensions.contains(String(name[name.index(after: dot)...]))
        else { return .failure(.unsupportedExtension) }
        guard file.size > 0, file.size <= Self.thumbnailSizeLimit else { return .failure(.unsupportedImage) }
        let hash = file.contentHash?.bytes ?? Array(file.rev.utf8)
        let portrait = hash.last.map { $0 % 2 == 1 } ?? false
        let (width, height) = portrait ? (6, 8) : (8, 6)
        let colour = (hash[0], hash[1 % hash.count], hash[2 % hash.count])
        switch arg.format {
        case .png: return .success(TestPNG.picture(seed: hash, portrait: portrait))
        case .jpeg: return .success(TestImages.jpeg(width: width, height: height, rgb: colour))
        case .webp: return .success(TestImages.webp(width: width, height: height, rgb: colour))
        }
    }
}

/// A minimal PNG encoder: 8-bit RGB, no filter, the image data in one stored (uncompressed) deflate
/// block.
public enum TestPNG {
    public static let signature: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]

    /// An 8 x 6 (or 6 x 8) picture whose pixel colours are taken from `seed`'s bytes.
    static func picture(seed: [UInt8], portrait: Bool) -> [UInt8] {
        let (width, height) = portrait ? (6, 8) : (8, 6)
        var raw: [UInt8] = []
        for y in 0..<height {
            raw.append(0)  // filter type 0 for the row
            for x in 0..<width {
                let base = seed.isEmpty ? 0 : (y * width + x) * 3
                for channel in 0..<3 {
                    raw.append(seed.isEmpty ? 0x80 : seed[(base + channel) % seed.count] &* 37)
                }
            }
        }
        return encode(width: width, height: height, raw: raw)
    }

    /// A PNG of `raw` scanlines (each a filter byte then RGB pixels).
    public static func encode(width: Int, height: Int, raw: [UInt8]) -> [UInt8] {
        var header: [UInt8] = []
        header += bigEndian(UInt32(width))
        header += bigEndian(UInt32(height))
        header += [8, 2, 0, 0, 0]  // bit depth, RGB, deflate, filter method 0, no interlace
        var zlib: [UInt8] = [0x78, 0x01]
        // Stored blocks of at most 65535 bytes.
        var offset = 0
        repeat {
            let count = min(65535, raw.count - offset)
            let last = offset + count == raw.count
            zlib.append(last ? 1 : 0)
            zlib += [UInt8(count & 0xFF), UInt8(count >> 8), UInt8(~count & 0xFF), UInt8((~count >> 8) & 0xFF)]
            zlib += raw[offset..<offset + count]
            offset += count
        } while offset < raw.count
        zlib += bigEndian(adler32(raw))
        return signature + chunk("IHDR", header) + chunk("IDAT", zlib) + chunk("IEND", [])
    }

    /// One chunk: length, type, data, CRC-32 of type and data.
    public static func chunk(_ type: String, _ data: [UInt8]) -> [UInt8] {
        let typeBytes = Array(type.utf8)
        return bigEndian(UInt32(data.count)) + typeBytes + data + bigEndian(crc32(typeBytes + data))
    }

    /// CRC-32 (ISO 3309, as PNG uses it), bit by bit.
    public static func crc32(_ bytes: [UInt8]) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in bytes {
            crc ^= UInt32(byte)
            for _ in 0..<8 {
                crc = crc & 1 == 1 ? (crc >> 1) ^ 0xEDB8_8320 : crc >> 1
            }
        }
        return ~crc
    }

    static func adler32(_ bytes: [UInt8]) -> UInt32 {
        var a: UInt32 = 1
        var b: UInt32 = 0
        for byte in bytes {
            a = (a + UInt32(byte)) % 65521
            b = (b + a) % 65521
        }
        return b << 16 | a
    }

    static func bigEndian(_ value: UInt32) -> [UInt8] {
        [UInt8(value >> 24), UInt8((value >> 16) & 0xFF), UInt8((value >> 8) & 0xFF), UInt8(value & 0xFF)]
    }
}
