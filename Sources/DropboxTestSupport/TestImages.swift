// The in-memory Dropbox's JPEG and WebP thumbnails: Dropbox answers get_thumbnail_batch in the
// format asked (jpeg, png or webp), so a fake that always answered PNG would
// let a client that asked for one format and decoded another pass. The pictures are one flat colour
// (from the revision's content_hash), which keeps the encoders small: a baseline JPEG of flat 8 x 8
// blocks (DC coefficients only, the DC table of ITU-T T.81 Annex K.3, one end-of-block code) and a
// lossless WebP (VP8L: no transforms, one prefix code group, literal pixels or a backward
// reference to the row above). They are the HTTP fake's encoders
// (tools/fakedropbox/fakedropbox/thumbs.py) for a picture of one colour, byte for byte.

enum TestImages {
    // MARK: JPEG

    /// Code lengths 1...16 and symbols of the DC table (luminance, Annex K.3).
    private static let dcBits: [UInt8] = [0, 1, 5, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0]
    private static let dcValues: [UInt8] = Array(0...11)
    /// AC: only end-of-block is ever sent, a 1-bit code.
    private static let acBits: [UInt8] = [1] + Array(repeating: 0, count: 15)
    private static let acValues: [UInt8] = [0]
    /// Every quantiser step: a flat block's DC coefficient 8 × (v − 128) becomes v − 128.
    private static let quantiser: UInt8 = 8

    /// A baseline JFIF JPEG of `width` × `height` pixels of one colour, 4:4:4, one scan.
    static func jpeg(width: Int, height: Int, rgb: (UInt8, UInt8, UInt8)) -> [UInt8] {
        let dc = ycc(rgb)
        let blocks = ((width + 7) / 8) * ((height + 7) / 8)
        var bits = Bits()
        var predicted = [0, 0, 0]
        for _ in 0..<blocks {
            for c in 0..<3 {
                appendDC(dc[c] - predicted[c], to: &bits)
                predicted[c] = dc[c]
            }
        }
        var data: [UInt8] = []
        for byte in bits.bytesMSBFirst(padding: true) {
            data.append(byte)
            if byte == 0xFF { data.append(0) }  // byte stuffing
        }
        let huffman = [0x00] + dcBits + dcValues + [0x10] + acBits + acValues
        var frame: [UInt8] = [8]
        frame += bigEndian16(height) + bigEndian16(width)
        frame += [3, 0x01, 0x11, 0x00, 0x02, 0x11, 0x00, 0x03, 0x11, 0x00]
        return [0xFF, 0xD8]
            + segment(0xE0, Array("JFIF".utf8) + [0x00, 0x01, 0x01, 0x00, 0x00, 0x01, 0x00, 0x01, 0x00, 0x00])
            + segment(0xDB, [0x00] + Array(repeating: quantiser, count: 64))
            + segment(0xC0, frame)
            + segment(0xC4, huffman)
            + segment(0xDA, [0x03, 0x01, 0x00, 0x02, 0x00, 0x03, 0x00, 0x00, 0x3F, 0x00])
            + data + [0xFF, 0xD9]
    }

    /// Y, Cb, Cr of a colour, each minus 128 (the level shift).
    private static func ycc(_ rgb: (UInt8, UInt8, UInt8)) -> [Int] {
        let (r, g, b) = (Double(rgb.0), Double(rgb.1), Double(rgb.2))
        let y = 0.299 * r + 0.587 * g + 0.114 * b
        let cb = -0.168736 * r - 0.331264 * g + 0.5 * b + 128
        let cr = 0.5 * r - 0.418688 * g - 0.081312 * b + 128
        return [y, cb, cr].map { min(255, max(0, Int(($0 + 0.5).rounded(.towardZero)))) - 128 }
    }

    /// One block: the DC difference (its category's code, then the extra bits), then end-of-block.
    private static func appendDC(_ diff: Int, to bits: inout Bits) {
        let magnitude = diff.magnitude
        let category = magnitude == 0 ? 0 : UInt.bitWidth - magnitude.leadingZeroBitCount
        let (code, length) = canonicalCodes(dcBits, dcValues)[UInt8(category)]!
        bits.appendMSBFirst(code, count: length)
        if category > 0 {
            let extra = diff >= 0 ? diff : diff + (1 << category) - 1
            bits.appendMSBFirst(extra, count: category)
        }
        let (eob, eobLength) = canonicalCodes(acBits, acValues)[0]!
        bits.appendMSBFirst(eob, count: eobLength)
    }

    /// symbol → (code, length) of a canonical Huffman table given as counts per length 1...16.
    private static func canonicalCodes(_ counts: [UInt8], _ symbols: [UInt8]) -> [UInt8: (Int, Int)] {
        var out: [UInt8: (Int, Int)] = [:]
        var code = 0
        var k = 0
        for length in 1...16 {
            for _ in 0..<Int(counts[length - 1]) {
                out[symbols[k]] = (code, length)
                code += 1
                k += 1
            }
            code <<= 1
        }
        return out
    }

    private static func segment(_ marker: UInt8, _ data: [UInt8]) -> [UInt8] {
        [0xFF, marker] + bigEndian16(data.count + 2) + data
    }

    private static func bigEndian16(_ value: Int) -> [UInt8] {
        [UInt8((value >> 8) & 0xFF), UInt8(value & 0xFF)]
    }

    // MARK: WebP

    /// The order code lengths of the code-length code are sent in.
    private static let codeLengthOrder = [17, 18, 0, 1, 2, 3, 4, 5, 16, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15]
    /// Green: 256 literals and 24 length prefixes (no colour cache); 0...231 get 8-bit codes, the
    /// rest 9-bit ones.
    private static let greenSymbols = 256 + 24
    private static let greenShort = 232

    /// A lossless (VP8L) WebP of `width` × `height` pixels (each 1...4096) of one opaque colour.
    static func webp(width: Int, height: Int, rgb: (UInt8, UInt8, UInt8)) -> [UInt8] {
        var bits = Bits()
        bits.appendLSBFirst(0x2F, count: 8)
        bits.appendLSBFirst(width - 1, count: 14)
        bits.appendLSBFirst(height - 1, count: 14)
        bits.appendLSBFirst(0, count: 1)  // alpha hint
        bits.appendLSBFirst(0, count: 3)  // version
        bits.appendLSBFirst(0, count: 3)  // no transform, no colour cache, no meta prefix codes
        normalCode(
            Array(repeating: 8, count: greenShort) + Array(repeating: 9, count: greenSymbols - greenShort),
            alphabet: (8, 9), to: &bits)
        normalCode(Array(repeating: 8, count: 256), alphabet: (0, 8), to: &bits)  // red
        normalCode(Array(repeating: 8, count: 256), alphabet: (0, 8), to: &bits)  // blue
        bits.appendLSBFirst(0b101, count: 3)  // alpha: simple code, one 8-bit symbol...
        bits.appendLSBFirst(255, count: 8)  // ... 255
        bits.appendLSBFirst(0b0001, count: 4)  // distance: simple code, one 1-bit symbol, 0
        var previousBand = -1
        for y in 0..<height {
            // Rows in one band of the HTTP fake's 4 x 4 grid repeat the row above: a backward
            // reference of `width` pixels at distance code 1. A new band starts with literal pixels.
            let band = y * 4 / height
            if band == previousBand {
                let (symbol, extraCount, extra) = prefix(width)
                appendGreen(256 + symbol, to: &bits)
                bits.appendLSBFirst(extra, count: extraCount)
                continue
            }
            previousBand = band
            for _ in 0..<width {
                appendGreen(Int(rgb.1), to: &bits)
                bits.appendMSBFirst(Int(rgb.0), count: 8)
                bits.appendMSBFirst(Int(rgb.2), count: 8)
            }
        }
        var data = bits.bytesLSBFirst()
        let chunkLength = data.count
        if data.count % 2 == 1 { data.append(0) }  // RIFF chunks have even sizes; the pad is not counted
        let chunk = Array("VP8L".utf8) + littleEndian32(chunkLength) + data
        return Array("RIFF".utf8) + littleEndian32(4 + chunk.count) + Array("WEBP".utf8) + chunk
    }

    /// A "normal" prefix code whose symbol lengths are each one of the two in `alphabet`, sent with
    /// a code-length code of two 1-bit codes (the smaller length "0", the larger "1").
    private static func normalCode(_ lengths: [Int], alphabet: (Int, Int), to bits: inout Bits) {
        let (a, b) = (min(alphabet.0, alphabet.1), max(alphabet.0, alphabet.1))
        let count = max(codeLengthOrder.firstIndex(of: a)!, codeLengthOrder.firstIndex(of: b)!) + 1
        bits.appendLSBFirst(0, count: 1)
        bits.appendLSBFirst(count - 4, count: 4)
        for symbol in codeLengthOrder[..<count] {
            bits.appendLSBFirst(symbol == a || symbol == b ? 1 : 0, count: 3)
        }
        bits.appendLSBFirst(0, count: 1)  // max_symbol: the whole alphabet
        for length in lengths { bits.appendMSBFirst(length == a ? 0 : 1, count: 1) }
    }

    private static func appendGreen(_ symbol: Int, to bits: inout Bits) {
        if symbol < greenShort {
            bits.appendMSBFirst(symbol, count: 8)
        } else {
            bits.appendMSBFirst(2 * greenShort + symbol - greenShort, count: 9)
        }
    }

    /// (prefix symbol, extra bit count, extra bits) of a length or distance ≥ 1.
    private static func prefix(_ value: Int) -> (Int, Int, Int) {
        let v = value - 1
        if v < 4 { return (v, 0, 0) }
        let highBit = Int.bitWidth - 1 - v.leadingZeroBitCount
        let second = (v >> (highBit - 1)) & 1
        return (2 * highBit + second, highBit - 1, v & ((1 << (highBit - 1)) - 1))
    }

    private static func littleEndian32(_ value: Int) -> [UInt8] {
        [UInt8(value & 0xFF), UInt8((value >> 8) & 0xFF), UInt8((value >> 16) & 0xFF), UInt8((value >> 24) & 0xFF)]
    }

    /// A bit stream in the order the bits are sent.
    private struct Bits {
        var bits: [Bool] = []

        /// `count` bits of `value`, most significant first (JPEG values, Huffman codes).
        mutating func appendMSBFirst(_ value: Int, count: Int) {
            for shift in stride(from: count - 1, through: 0, by: -1) { bits.append((value >> shift) & 1 == 1) }
        }

        /// `count` bits of `value`, least significant first (VP8L values).
        mutating func appendLSBFirst(_ value: Int, count: Int) {
            for shift in 0..<count { bits.append((value >> shift) & 1 == 1) }
        }

        /// Packed most significant bit first, the last byte filled with 1-bits when `padding`.
        func bytesMSBFirst(padding: Bool) -> [UInt8] {
            var out: [UInt8] = []
            var index = 0
            while index < bits.count {
                var byte: UInt8 = 0
                for k in 0..<8 {
                    let bit = index + k < bits.count ? bits[index + k] : padding
                    byte = byte << 1 | (bit ? 1 : 0)
                }
                out.append(byte)
                index += 8
            }
            return out
        }

        /// Packed least significant bit first, the last byte filled with 0-bits.
        func bytesLSBFirst() -> [UInt8] {
            var out: [UInt8] = []
            var index = 0
            while index < bits.count {
                var byte: UInt8 = 0
                for k in 0..<8 where index + k < bits.count && bits[index + k] {
                    byte |= 1 << k
                }
                out.append(byte)
                index += 8
            }
            return out
        }
    }
}
