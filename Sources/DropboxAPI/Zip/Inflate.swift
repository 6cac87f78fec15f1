// Raw deflate (a zip member's method 8, a deflate stream without zlib's header and trailer) and
// CRC-32, through the system zlib: the one place the zip reader calls it. Inflating is bounded by
// the size the central directory declares: the output buffer is exactly that size, and once it is
// full one more byte of room is offered only to find out whether the stream would give more, which
// is then refused, so a stream that inflates to far more than it declares costs no more memory than
// its declared size (which the caller has already compared with its limit).

import CZlib

/// Why a member's deflate stream was refused.
enum InflateFailure: Error {
    /// The stream gives more bytes than the directory declares.
    case tooLong
    /// The stream ends after `produced` bytes, fewer than declared.
    case tooShort(produced: Int)
    /// The member's data ends before the stream does.
    case truncated
    /// zlib found the stream invalid, with its message.
    case corrupt(String)
    /// zlib failed otherwise (out of memory, ...), with its status code.
    case zlib(Int32)

    func description(declaredSize: Int) -> String {
        switch self {
        case .tooLong: "the deflate data inflates to more than the \(declaredSize) bytes the directory declares"
        case .tooShort(let produced):
            "the deflate data inflates to \(produced) bytes, the directory declares \(declaredSize)"
        case .truncated: "the deflate data ends before its stream does"
        case .corrupt(let message): "the deflate data is corrupt (\(message))"
        case .zlib(let status): "zlib failed to inflate (status \(status))"
        }
    }
}

enum RawInflate {
    /// Inflates the raw deflate stream in `input[range]` into exactly `size` bytes, or says why not.
    static func inflate(_ input: [UInt8], _ range: Range<Int>, size: Int) -> Result<[UInt8], InflateFailure> {
        var stream = z_stream()
        guard inflateInit2_(&stream, -15, ZLIB_VERSION, Int32(MemoryLayout<z_stream>.size)) == Z_OK else {
            return .failure(.zlib(Z_MEM_ERROR))
        }
        defer { inflateEnd(&stream) }
        var output = [UInt8](repeating: 0, count: size)
        // The one byte of room offered once the output is full.
        var probe: [UInt8] = [0]
        let failure: InflateFailure? = input.withUnsafeBufferPointer { source in
            output.withUnsafeMutableBufferPointer { target in
                probe.withUnsafeMutableBufferPointer { probe in
                    var nextInput = range.lowerBound
                    var produced = 0
                    while true {
                        if stream.avail_in == 0, nextInput < range.upperBound, let base = source.baseAddress {
                            let chunk = min(range.upperBound - nextInput, Int(UInt32.max))
                            stream.next_in = UnsafeMutablePointer(mutating: base + nextInput)
                            stream.avail_in = UInt32(chunk)
                            nextInput += chunk
                        }
                        let full = produced == size
                        let room: Int
                        if !full, let base = target.baseAddress {
                            room = min(size - produced, Int(UInt32.max))
                            stream.next_out = base + produced
                        } else {
                            room = 1
                            stream.next_out = probe.baseAddress
                        }
                        stream.avail_out = UInt32(room)
                        let status = CZlib.inflate(&stream, Z_NO_FLUSH)
                        let made = room - Int(stream.avail_out)
                        if full {
                            if made > 0 { return .tooLong }
                        } else {
                            produced += made
                        }
                        switch status {
                        case Z_OK: continue
                        case Z_STREAM_END: return produced == size ? nil : .tooShort(produced: produced)
                        // No progress was possible though there was room for output: the input ran out.
                        case Z_BUF_ERROR: return .truncated
                        case Z_DATA_ERROR: return .corrupt(stream.msg.map { String(cString: $0) } ?? "invalid data")
                        case Z_NEED_DICT: return .corrupt("it asks for a preset dictionary")
                        default: return .zlib(status)
                        }
                    }
                }
            }
        }
        if let failure { return .failure(failure) }
        return .success(output)
    }
}

/// The CRC-32 of the zip format (the same as zlib's, gzip's and PNG's).
enum CRC32 {
    static func checksum(_ bytes: [UInt8]) -> UInt32 {
        bytes.withUnsafeBufferPointer { buffer in
            var crc = CZlib.crc32(0, nil, 0)
            guard let base = buffer.baseAddress else { return UInt32(truncatingIfNeeded: crc) }
            var offset = 0
            while offset < buffer.count {
                let chunk = min(buffer.count - offset, Int(UInt32.max))
                crc = CZlib.crc32(crc, base + offset, UInt32(chunk))
                offset += chunk
            }
            return UInt32(truncatingIfNeeded: crc)
        }
    }
}
