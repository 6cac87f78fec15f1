// The PNG work a thumbnail needs, and no more: reading the chunk list (every CRC checked, IHDR
// first, IEND last, at least one IDAT), adding `tEXt` chunks (the standard's Thumb::URI and
// Thumb::MTime) before the first IDAT of the image Dropbox sent, and reading the `tEXt` chunks of a
// cache file to see whether it is current. Pixels are never decoded.

enum PNGText {
    static let signature: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]

    /// One chunk: its four-byte type and where its data and the whole chunk lie in the file.
    struct Chunk: Equatable {
        var type: String
        /// The data, without length, type and CRC.
        var data: Range<Int>
        /// The whole chunk: length, type, data, CRC.
        var whole: Range<Int>
    }

    /// The chunks of a well-formed PNG, or nil: no signature, a chunk cut short or with a wrong
    /// CRC, IHDR not first, no IDAT, or bytes after IEND.
    static func chunks(_ png: [UInt8]) -> [Chunk]? {
        guard png.count >= signature.count, png.starts(with: signature) else { return nil }
        var chunks: [Chunk] = []
        var offset = signature.count
        while offset < png.count {
            guard png.count - offset >= 12 else { return nil }
            let length = Int(readUInt32(png, at: offset))
            guard length <= png.count - offset - 12 else { return nil }
            let typeRange = offset + 4..<offset + 8
            let data = offset + 8..<offset + 8 + length
            guard crc32(png[typeRange.lowerBound..<data.upperBound]) == readUInt32(png, at: data.upperBound) else {
                return nil
            }
            let type = String(decoding: png[typeRange], as: UTF8.self)
            chunks.append(Chunk(type: type, data: data, whole: offset..<data.upperBound + 4))
            offset = data.upperBound + 4
            if type == "IEND" { break }
        }
        guard offset == png.count, chunks.first?.type == "IHDR", chunks.last?.type == "IEND",
            chunks.contains(where: { $0.type == "IDAT" })
        else { return nil }
        return chunks
    }

    /// `png` with a `tEXt` chunk per entry (keyword, Latin-1 text) before its first IDAT; text
    /// chunks it already had under the same keywords are left out. Nil when `png` is not a
    /// well-formed PNG or an entry cannot be a tEXt chunk (keyword of 1 to 79 printable Latin-1
    /// characters, text without NUL, both within Latin-1).
    static func adding(_ entries: [(keyword: String, text: String)], to png: [UInt8]) -> [UInt8]? {
        guard let chunks = chunks(png), let firstData = chunks.firstIndex(where: { $0.type == "IDAT" }) else {
            return nil
        }
        var added: [UInt8] = []
        for entry in entries {
            guard let chunk = textChunk(entry.keyword, entry.text) else { return nil }
            added += chunk
        }
        let replaced = Set(entries.map(\.keyword))
        var out = signature
        out.reserveCapacity(png.count + added.count)
        for (index, chunk) in chunks.enumerated() {
            if index == firstData { out += added }
            if chunk.type == "tEXt" || chunk.type == "zTXt" || chunk.type == "iTXt",
                let keyword = keyword(of: chunk, in: png), replaced.contains(keyword)
            {
                continue
            }
            out += png[chunk.whole]
        }
        return out
    }

    /// The `tEXt` entries of a well-formed PNG (keyword -> text), nil for anything else.
    static func text(of png: [UInt8]) -> [String: String]? {
        guard let chunks = chunks(png) else { return nil }
        var entries: [String: String] = [:]
        for chunk in chunks where chunk.type == "tEXt" {
            let data = png[chunk.data]
            guard let zero = data.firstIndex(of: 0) else { continue }
            entries[latin1(data[data.startIndex..<zero])] = latin1(data[(zero + 1)...])
        }
        return entries
    }

    private static func keyword(of chunk: Chunk, in png: [UInt8]) -> String? {
        let data = png[chunk.data]
        guard let zero = data.firstIndex(of: 0) else { return nil }
        return latin1(data[data.startIndex..<zero])
    }

    /// length, "tEXt", keyword, NUL, text, CRC.
    private static func textChunk(_ keyword: String, _ text: String) -> [UInt8]? {
        guard let key = latin1Bytes(keyword), let value = latin1Bytes(text), (1...79).contains(key.count),
            key.allSatisfy({ (32...126).contains($0) || $0 >= 161 }), !value.contains(0)
        else { return nil }
        let body = Array("tEXt".utf8) + key + [0] + value
        return bigEndian(UInt32(body.count - 4)) + body + bigEndian(crc32(body[...]))
    }

    private static func latin1Bytes(_ text: String) -> [UInt8]? {
        var bytes: [UInt8] = []
        for scalar in text.unicodeScalars {
            guard scalar.value <= 0xFF else { return nil }
            bytes.append(UInt8(scalar.value))
        }
        return bytes
    }

    private static func latin1(_ bytes: ArraySlice<UInt8>) -> String {
        String(String.UnicodeScalarView(bytes.map { Unicode.Scalar($0) }))
    }

    private static func readUInt32(_ bytes: [UInt8], at offset: Int) -> UInt32 {
        UInt32(bytes[offset]) << 24 | UInt32(bytes[offset + 1]) << 16 | UInt32(bytes[offset + 2]) << 8
            | UInt32(bytes[offset + 3])
    }

    private static func bigEndian(_ value: UInt32) -> [UInt8] {
        [UInt8(value >> 24), UInt8((value >> 16) & 0xFF), UInt8((value >> 8) & 0xFF), UInt8(value & 0xFF)]
    }

    // MARK: CRC-32

    /// CRC-32 as PNG defines it (ISO 3309, polynomial 0xEDB88320 reflected), over type and data.
    static func crc32(_ bytes: ArraySlice<UInt8>) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in bytes {
            crc = crcTable[Int((crc ^ UInt32(byte)) & 0xFF)] ^ (crc >> 8)
        }
        return ~crc
    }

    private static let crcTable: [UInt32] = (0..<256).map { (n: UInt32) -> UInt32 in
        var c = n
        for _ in 0..<8 {
            c = c & 1 == 1 ? 0xEDB8_8320 ^ (c >> 1) : c >> 1
        }
        return c
    }
}
