// The members of a zip archive held in memory. A whole folder comes from Dropbox as one zip
// (files/download_zip answers a folder's files in one reply, without Range), and the daemon must take
// the files out of those bytes itself. Everything in a reply is untrusted, so this reads the archive
// the way a careful reader must: the central directory is authoritative (a member written with a
// data descriptor has its sizes and CRC-32 only there), every offset and size is checked against the
// archive before use, members may not overlap (the trick of zips that inflate one piece of data
// many times), a member's size is compared with the caller's limit before anything is allocated or
// inflated, inflating stops as soon as more bytes come out than the directory declared, and the
// result is checked against the member's CRC-32. Any fault is a `DropboxError.malformedResponse`
// whose text starts with "zip: "; no input traps.
//
// Read: stored (method 0) and deflate (method 8) members, zip64 (the zip64 end record through its
// locator, the zip64 extra field of a member), UTF-8 names. Not read: encrypted members, other
// methods, archives split across disks. Names are not checked as paths here: the caller matches them
// against the folder's listing. The records are parsed in ZipRecords.swift, inflate and CRC-32 go
// through zlib in Inflate.swift.

public struct ZipArchive: Sendable {
    public struct Member: Sendable, Equatable {
        /// The name as stored (decoded as UTF-8 whether or not the UTF-8 flag is set; bytes that are
        /// not UTF-8 become U+FFFD), e.g. "Photos/2019/a.jpg"; a directory's name ends with "/".
        public var name: String
        public var isDirectory: Bool
        /// The uncompressed size in bytes, from the central directory.
        public var size: UInt64
        /// The CRC-32 of the uncompressed bytes, from the central directory.
        public internal(set) var crc32: UInt32
        /// The compression method (0 stored, 8 deflate; others are refused by `contents`).
        var method: UInt16
        /// The general-purpose flags (bit 0: encrypted, bit 3: data descriptor, bit 11: UTF-8 name).
        var flags: UInt16
        /// The bytes the member's data takes in the archive.
        var compressedSize: UInt64
        /// Where the member's local header starts in the archive.
        var localHeaderOffset: UInt64
    }

    /// The archive; members are read from it on demand.
    private let bytes: [UInt8]
    /// Where the central directory starts: every member's local header and data lie before it.
    private let directoryOffset: Int
    public let members: [Member]

    /// Parses the end-of-central-directory record (zip64 too) and the central directory of `bytes`
    /// (the whole archive in memory), and checks that every member's local header and data lie inside
    /// the archive, before the central directory, without overlapping another member's. Throws
    /// DropboxError.malformedResponse("zip: ...") on anything malformed. Never traps on any input.
    public init(_ bytes: [UInt8]) throws(DropboxError) {
        let archive = ZipBytes(bytes)
        let directory = try ZipRecords.locateDirectory(archive)
        let members = try ZipRecords.readDirectory(archive, directory)
        try ZipRecords.checkDataLayout(members, archive, before: directory.offset)
        self.bytes = bytes
        self.directoryOffset = directory.offset
        self.members = members
    }

    /// The member's uncompressed bytes (stored or deflate), checked: exactly `size` bytes and the
    /// CRC-32 matches. Throws DropboxError.malformedResponse("zip: ...") otherwise, for another
    /// method (named in the message), for an encrypted member, or when `size` exceeds `limit`: that
    /// is checked before anything is allocated or inflated, and inflating stops once more than `size`
    /// bytes come out, so a zip bomb never costs more than `limit` bytes of memory.
    public func contents(of member: Member, limit: UInt64) throws(DropboxError) -> [UInt8] {
        let name = member.name
        guard member.size <= limit else {
            throw .malformedResponse("zip: member \"\(name)\" is \(member.size) bytes, more than the limit of \(limit)")
        }
        guard member.flags & ZipRecords.encryptedFlag == 0 else {
            throw .malformedResponse("zip: member \"\(name)\" is encrypted")
        }
        guard member.method == 0 || member.method == 8 else {
            throw .malformedResponse(
                "zip: member \"\(name)\" uses compression method \(Self.methodDescription(member.method)); "
                    + "only 0 (stored) and 8 (deflate) are read")
        }
        let range = try ZipRecords.dataRange(of: member, ZipBytes(bytes), before: directoryOffset)
        guard let size = Int(exactly: member.size) else {
            throw .malformedResponse("zip: member \"\(name)\" is \(member.size) bytes, more than memory can hold")
        }
        let output: [UInt8]
        if member.method == 0 {
            guard range.count == size else {
                throw .malformedResponse(
                    "zip: stored member \"\(name)\" has \(range.count) bytes of data, the directory says \(size)")
            }
            output = Array(bytes[range])
        } else {
            switch RawInflate.inflate(bytes, range, size: size) {
            case .success(let inflated): output = inflated
            case .failure(let failure):
                throw .malformedResponse("zip: member \"\(name)\": \(failure.description(declaredSize: size))")
            }
        }
        let crc = CRC32.checksum(output)
        guard crc == member.crc32 else {
            throw .malformedResponse(
                "zip: member \"\(name)\" fails its CRC-32 check (the data gives \(Self.hex(crc)), "
                    + "the directory says \(Self.hex(member.crc32)))")
        }
        return output
    }

    /// A method's number with its name where the format assigns one, for the error message.
    static func methodDescription(_ method: UInt16) -> String {
        let names: [UInt16: String] = [
            1: "shrink", 6: "implode", 9: "deflate64", 12: "bzip2", 14: "LZMA", 93: "zstandard", 95: "xz",
            98: "PPMd", 99: "AES encryption",
        ]
        guard let known = names[method] else { return "\(method)" }
        return "\(method) (\(known))"
    }

    static func hex(_ value: UInt32) -> String {
        let digits = String(value, radix: 16)
        return "0x" + String(repeating: "0", count: 8 - digits.count) + digits
    }
}
