// Builds a zip archive in memory, for the tests of the zip reader and for the fakes that answer a
// folder as one zip (files/download_zip). It writes the shapes the reader must take: stored or
// deflated members (raw deflate through the system zlib), directories (a name ending in "/", no
// data), UTF-8 names (flag bit 11 when a name is not ASCII), members whose sizes and CRC-32 come
// after their data in a data descriptor (flag bit 3; the local header then says 0), and zip64 (the
// zip64 extra field in every header and the zip64 end record with its locator, even for small sizes,
// so that the reader's zip64 path is tested without gigabytes). Record layouts are described in
// Sources/DropboxAPI/Zip/ZipRecords.swift. The time stamp of every member is 1980-01-01 00:00, so the
// same entries always give the same bytes.

import CZlib

public enum ZipWriter {
    public struct Entry: Sendable, Equatable {
        /// The stored name; a directory's ends with "/".
        public var name: String
        /// The member's bytes; nil for a directory.
        public var bytes: [UInt8]?

        public init(name: String, bytes: [UInt8]?) {
            self.name = name
            self.bytes = bytes
        }

        public static func file(_ name: String, _ bytes: [UInt8]) -> Entry { Entry(name: name, bytes: bytes) }

        public static func directory(_ name: String) -> Entry {
            Entry(name: name.hasSuffix("/") ? name : name + "/", bytes: nil)
        }
    }

    /// The archive of `entries` in their order. `deflate` compresses files (directories are always
    /// stored), `zip64` writes the zip64 records for every size, `dataDescriptors` writes every
    /// member's sizes and CRC-32 after its data instead of in its local header.
    public static func archive(
        _ entries: [Entry], deflate: Bool = false, zip64: Bool = false, dataDescriptors: Bool = false
    ) -> [UInt8] {
        var out: [UInt8] = []
        var directory: [UInt8] = []
        let versionNeeded: UInt16 = zip64 ? 45 : 20
        let marked = UInt32.max
        for entry in entries {
            let name = Array(entry.name.utf8)
            let data = entry.bytes ?? []
            let crc = crc32(data)
            let method: UInt16 = deflate && entry.bytes != nil ? 8 : 0
            let stored = method == 8 ? rawDeflate(data) : data
            var flags: UInt16 = 0
            if name.contains(where: { $0 >= 0x80 }) { flags |= 1 << 11 }
            if dataDescriptors { flags |= 1 << 3 }
            let offset = UInt64(out.count)

            // Local header: with a data descriptor the sizes and CRC-32 come after the data.
            var localExtra: [UInt8] = []
            if zip64 {
                append16(&localExtra, 0x0001)
                append16(&localExtra, 16)
                append64(&localExtra, dataDescriptors ? 0 : UInt64(data.count))
                append64(&localExtra, dataDescriptors ? 0 : UInt64(stored.count))
            }
            append32(&out, 0x0403_4b50)
            append16(&out, versionNeeded)
            append16(&out, flags)
            append16(&out, method)
            append16(&out, 0)  // time 00:00:00
            append16(&out, 0x21)  // date 1980-01-01
            append32(&out, dataDescriptors ? 0 : crc)
            append32(&out, zip64 ? marked : dataDescriptors ? 0 : UInt32(stored.count))
            append32(&out, zip64 ? marked : dataDescriptors ? 0 : UInt32(data.count))
            append16(&out, UInt16(name.count))
            append16(&out, UInt16(localExtra.count))
            out += name
            out += localExtra
            out += stored
            if dataDescriptors {
                append32(&out, 0x0807_4b50)
                append32(&out, crc)
                if zip64 {
                    append64(&out, UInt64(stored.count))
                    append64(&out, UInt64(data.count))
                } else {
                    append32(&out, UInt32(stored.count))
                    append32(&out, UInt32(data.count))
                }
            }

            // Central directory header: always the real sizes and CRC-32 (or their zip64 marks).
            var extra: [UInt8] = []
            if zip64 {
                append16(&extra, 0x0001)
                append16(&extra, 24)
                append64(&extra, UInt64(data.count))
                append64(&extra, UInt64(stored.count))
                append64(&extra, offset)
            }
            append32(&directory, 0x0201_4b50)
            append16(&directory, 0x031E)  // made by: Unix, version 3.0
            append16(&directory, versionNeeded)
            append16(&directory, flags)
            append16(&directory, method)
            append16(&directory, 0)
            append16(&directory, 0x21)
            append32(&directory, crc)
            append32(&directory, zip64 ? marked : UInt32(stored.count))
            append32(&directory, zip64 ? marked : UInt32(data.count))
            append16(&directory, UInt16(name.count))
            append16(&directory, UInt16(extra.count))
            append16(&directory, 0)  // comment length
            append16(&directory, 0)  // disk
            append16(&directory, 0)  // internal attributes
            // External attributes: the Unix mode in the high half, the MS-DOS directory bit.
            append32(&directory, entry.bytes == nil ? 0o40755 << 16 | 0x10 : 0o100644 << 16)
            append32(&directory, zip64 ? marked : UInt32(offset))
            directory += name
            directory += extra
        }

        let directoryOffset = UInt64(out.count)
        out += directory
        if zip64 {
            let recordOffset = UInt64(out.count)
            append32(&out, 0x0606_4b50)
            append64(&out, 44)  // the record's size after its first 12 bytes
            append16(&out, 0x031E)
            append16(&out, 45)
            append32(&out, 0)  // disk
            append32(&out, 0)  // the directory's disk
            append64(&out, UInt64(entries.count))
            append64(&out, UInt64(entries.count))
            append64(&out, UInt64(directory.count))
            append64(&out, directoryOffset)
            append32(&out, 0x0706_4b50)
            append32(&out, 0)  // the zip64 end record's disk
            append64(&out, recordOffset)
            append32(&out, 1)  // disks
        }
        append32(&out, 0x0605_4b50)
        append16(&out, 0)
        append16(&out, 0)
        append16(&out, zip64 ? UInt16.max : UInt16(entries.count))
        append16(&out, zip64 ? UInt16.max : UInt16(entries.count))
        append32(&out, zip64 ? marked : UInt32(directory.count))
        append32(&out, zip64 ? marked : UInt32(directoryOffset))
        append16(&out, 0)  // comment length
        return out
    }

    /// The CRC-32 of `bytes`, through zlib.
    public static func crc32(_ bytes: [UInt8]) -> UInt32 {
        let crc = bytes.withUnsafeBufferPointer { CZlib.crc32(0, $0.baseAddress, UInt32($0.count)) }
        return UInt32(truncatingIfNeeded: crc)
    }

    /// `bytes` as a raw deflate stream (no zlib header or trailer), as a zip member's method 8 holds.
    public static func rawDeflate(_ bytes: [UInt8]) -> [UInt8] {
        var stream = z_stream()
        guard
            deflateInit2_(
                &stream, Z_BEST_COMPRESSION, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY, ZLIB_VERSION,
                Int32(MemoryLayout<z_stream>.size)) == Z_OK
        else { fatalError("zlib could not start a raw deflate") }
        defer { deflateEnd(&stream) }
        var input = bytes
        var output = [UInt8](repeating: 0, count: Int(deflateBound(&stream, UInt(bytes.count))))
        let status = input.withUnsafeMutableBufferPointer { source in
            output.withUnsafeMutableBufferPointer { target in
                stream.next_in = source.baseAddress
                stream.avail_in = UInt32(source.count)
                stream.next_out = target.baseAddress
                stream.avail_out = UInt32(target.count)
                return CZlib.deflate(&stream, Z_FINISH)
            }
        }
        guard status == Z_STREAM_END else { fatalError("zlib could not finish a raw deflate (status \(status))") }
        return Array(output[0..<Int(stream.total_out)])
    }

    private static func append16(_ out: inout [UInt8], _ value: UInt16) {
        out += [UInt8(truncatingIfNeeded: value), UInt8(truncatingIfNeeded: value >> 8)]
    }

    private static func append32(_ out: inout [UInt8], _ value: UInt32) {
        for shift in stride(from: 0, to: 32, by: 8) { out.append(UInt8(truncatingIfNeeded: value >> UInt32(shift))) }
    }

    private static func append64(_ out: inout [UInt8], _ value: UInt64) {
        for shift in stride(from: 0, to: 64, by: 8) { out.append(UInt8(truncatingIfNeeded: value >> UInt64(shift))) }
    }
}
