// The records of a zip archive, read from its bytes: the end of central directory record (and the
// zip64 end record its locator points at), the central directory's file headers with their zip64
// extra fields, and a member's local header. The layouts (all numbers little-endian) are those of
// the zip format (PKWARE's APPNOTE):
//   end of central directory   0x06054b50, 22 bytes + comment: disk, directory's disk, members on
//                              this disk, members, directory size (4), directory offset (4), comment length
//   zip64 end locator          0x07064b50, 20 bytes just before that: disk, zip64 end offset (8), disks
//   zip64 end record           0x06064b50: record size (8, not counting its first 12 bytes), versions,
//                              disk, directory's disk, members on this disk (8), members (8), size (8),
//                              offset (8)
//   central directory header   0x02014b50, 46 bytes + name + extra + comment
//   local file header          0x04034b50, 30 bytes + name + extra, then the member's data
// A 32-bit size or offset of 0xFFFFFFFF (a 16-bit disk of 0xFFFF) means the value is in the zip64
// extra field (id 0x0001), which holds in this order only the ones so marked: uncompressed size,
// compressed size, local header offset (8 bytes each), disk (4).
// Every read here is bounds-checked and every number from the archive is compared with the archive's
// length before it becomes an offset, so that no input traps: a fault throws
// DropboxError.malformedResponse("zip: ...").

struct ZipBytes {
    let bytes: [UInt8]

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    var count: Int { bytes.count }

    /// Whether `length` bytes from `offset` lie inside the archive.
    func has(_ offset: Int, _ length: Int) -> Bool {
        offset >= 0 && length >= 0 && offset <= bytes.count && length <= bytes.count - offset
    }

    func u16(_ offset: Int) throws(DropboxError) -> UInt16 {
        guard has(offset, 2) else { throw Self.outside(offset, 2) }
        return UInt16(bytes[offset]) | UInt16(bytes[offset + 1]) << 8
    }

    func u32(_ offset: Int) throws(DropboxError) -> UInt32 {
        guard has(offset, 4) else { throw Self.outside(offset, 4) }
        var value: UInt32 = 0
        for index in (0..<4).reversed() { value = value << 8 | UInt32(bytes[offset + index]) }
        return value
    }

    func u64(_ offset: Int) throws(DropboxError) -> UInt64 {
        guard has(offset, 8) else { throw Self.outside(offset, 8) }
        var value: UInt64 = 0
        for index in (0..<8).reversed() { value = value << 8 | UInt64(bytes[offset + index]) }
        return value
    }

    func slice(_ offset: Int, _ length: Int) throws(DropboxError) -> ArraySlice<UInt8> {
        guard has(offset, length) else { throw Self.outside(offset, length) }
        return bytes[offset..<(offset + length)]
    }

    private static func outside(_ offset: Int, _ length: Int) -> DropboxError {
        .malformedResponse("zip: a read of \(length) bytes at offset \(offset) lies outside the archive")
    }
}

/// Where the central directory lies, from the end records.
struct ZipDirectoryLocation {
    var memberCount: Int
    var offset: Int
    var size: Int
}

enum ZipRecords {
    static let localHeaderSignature: UInt32 = 0x0403_4b50
    static let directoryHeaderSignature: UInt32 = 0x0201_4b50
    static let endSignature: UInt32 = 0x0605_4b50
    static let zip64EndSignature: UInt32 = 0x0606_4b50
    static let zip64LocatorSignature: UInt32 = 0x0706_4b50
    static let zip64ExtraID: UInt16 = 0x0001
    static let encryptedFlag: UInt16 = 1

    static let endLength = 22
    static let zip64LocatorLength = 20
    static let zip64EndLength = 56
    static let directoryHeaderLength = 46
    static let localHeaderLength = 30

    /// Finds the end of central directory record (the last one whose comment ends the archive
    /// exactly), follows the zip64 locator before it when there is one, and checks that the directory
    /// it names lies before the end records and can hold the members it claims.
    static func locateDirectory(_ archive: ZipBytes) throws(DropboxError) -> ZipDirectoryLocation {
        guard archive.count >= endLength else {
            throw .malformedResponse(
                "zip: \(archive.count) bytes, too short for an end of central directory record")
        }
        var end = archive.count - endLength
        let lowest = max(0, end - Int(UInt16.max))
        while true {
            if try archive.u32(end) == endSignature, try Int(archive.u16(end + 20)) == archive.count - end - endLength {
                break
            }
            guard end > lowest else {
                throw .malformedResponse("zip: no end of central directory record (truncated, or not a zip)")
            }
            end -= 1
        }

        var disk = UInt64(try archive.u16(end + 4))
        var directoryDisk = UInt64(try archive.u16(end + 6))
        var membersOnDisk = UInt64(try archive.u16(end + 8))
        var members = UInt64(try archive.u16(end + 10))
        var size = UInt64(try archive.u32(end + 12))
        var offset = UInt64(try archive.u32(end + 16))
        // The directory ends where the end records start.
        var directoryLimit = end

        let locator = end - zip64LocatorLength
        if locator >= 0, try archive.u32(locator) == zip64LocatorSignature {
            let recordDisk = try archive.u32(locator + 4)
            let recordOffset = try archive.u64(locator + 8)
            let disks = try archive.u32(locator + 16)
            guard recordDisk == 0, disks <= 1 else {
                throw .malformedResponse("zip: the archive is split across \(disks) disks, which is not read")
            }
            guard locator >= zip64EndLength, recordOffset <= UInt64(locator - zip64EndLength) else {
                throw .malformedResponse("zip: the zip64 end record's offset \(recordOffset) lies outside the archive")
            }
            let record = Int(recordOffset)
            guard try archive.u32(record) == zip64EndSignature else {
                throw .malformedResponse("zip: no zip64 end record at offset \(record)")
            }
            let recordSize = try archive.u64(record + 4)
            guard recordSize >= UInt64(zip64EndLength - 12), recordSize <= UInt64(locator - record - 12) else {
                throw .malformedResponse(
                    "zip: the zip64 end record's size \(recordSize) does not fit before its locator")
            }
            disk = UInt64(try archive.u32(record + 16))
            directoryDisk = UInt64(try archive.u32(record + 20))
            membersOnDisk = try archive.u64(record + 24)
            members = try archive.u64(record + 32)
            size = try archive.u64(record + 40)
            offset = try archive.u64(record + 48)
            directoryLimit = record
        }

        guard disk == 0, directoryDisk == 0, membersOnDisk == members else {
            throw .malformedResponse("zip: the archive is split across disks, which is not read")
        }
        guard offset <= UInt64(directoryLimit), size <= UInt64(directoryLimit) - offset else {
            throw .malformedResponse(
                "zip: the central directory (\(size) bytes at offset \(offset)) does not fit in the "
                    + "\(directoryLimit) bytes before the end record")
        }
        guard members <= size / UInt64(directoryHeaderLength) else {
            throw .malformedResponse("zip: \(members) members cannot fit in a central directory of \(size) bytes")
        }
        return ZipDirectoryLocation(memberCount: Int(members), offset: Int(offset), size: Int(size))
    }

    /// The central directory's members, in their order there. The directory must hold exactly the
    /// members the end record counts, with no bytes left over.
    static func readDirectory(
        _ archive: ZipBytes, _ directory: ZipDirectoryLocation
    ) throws(DropboxError) -> [ZipArchive.Member] {
        var members: [ZipArchive.Member] = []
        members.reserveCapacity(directory.memberCount)
        let end = directory.offset + directory.size
        var position = directory.offset
        for index in 0..<directory.memberCount {
            guard end - position >= directoryHeaderLength else {
                throw .malformedResponse("zip: the central directory ends inside the header of member \(index)")
            }
            guard try archive.u32(position) == directoryHeaderSignature else {
                throw .malformedResponse("zip: no central directory header at offset \(position) (member \(index))")
            }
            let flags = try archive.u16(position + 8)
            let method = try archive.u16(position + 10)
            let crc = try archive.u32(position + 16)
            let compressedSize32 = try archive.u32(position + 20)
            let size32 = try archive.u32(position + 24)
            let nameLength = Int(try archive.u16(position + 28))
            let extraLength = Int(try archive.u16(position + 30))
            let commentLength = Int(try archive.u16(position + 32))
            let disk16 = try archive.u16(position + 34)
            let offset32 = try archive.u32(position + 42)
            let variableLength = nameLength + extraLength + commentLength
            guard end - position - directoryHeaderLength >= variableLength else {
                throw .malformedResponse(
                    "zip: the name, extra field and comment of member \(index) run past the central directory")
            }
            let nameBytes = try archive.slice(position + directoryHeaderLength, nameLength)
            let extra = try archive.slice(position + directoryHeaderLength + nameLength, extraLength)
            let name = String(decoding: nameBytes, as: UTF8.self)

            var size = UInt64(size32)
            var compressedSize = UInt64(compressedSize32)
            var offset = UInt64(offset32)
            var disk = UInt32(disk16)
            let marked = UInt32.max
            if size32 == marked || compressedSize32 == marked || offset32 == marked || disk16 == UInt16.max {
                guard let field = zip64Field(in: extra) else {
                    throw .malformedResponse("zip: member \"\(name)\" needs a zip64 extra field and has none")
                }
                var cursor = field.startIndex
                func next(_ length: Int) throws(DropboxError) -> UInt64 {
                    guard field.endIndex - cursor >= length else {
                        throw .malformedResponse("zip: the zip64 extra field of member \"\(name)\" is too short")
                    }
                    var value: UInt64 = 0
                    for index in (0..<length).reversed() { value = value << 8 | UInt64(field[cursor + index]) }
                    cursor += length
                    return value
                }
                if size32 == marked { size = try next(8) }
                if compressedSize32 == marked { compressedSize = try next(8) }
                if offset32 == marked { offset = try next(8) }
                if disk16 == UInt16.max { disk = UInt32(truncatingIfNeeded: try next(4)) }
            }
            guard disk == 0 else {
                throw .malformedResponse("zip: member \"\(name)\" lies on disk \(disk); split archives are not read")
            }
            members.append(
                ZipArchive.Member(
                    name: name, isDirectory: name.hasSuffix("/"), size: size, crc32: crc, method: method,
                    flags: flags, compressedSize: compressedSize, localHeaderOffset: offset))
            position += directoryHeaderLength + variableLength
        }
        guard position == end else {
            throw .malformedResponse(
                "zip: the central directory has \(end - position) bytes after its \(directory.memberCount) members")
        }
        return members
    }

    /// The data of the zip64 extra field (id 0x0001) in a member's extra block, or nil when there
    /// is none. A block whose last field runs past its end is read up to that field.
    static func zip64Field(in extra: ArraySlice<UInt8>) -> ArraySlice<UInt8>? {
        var cursor = extra.startIndex
        while extra.endIndex - cursor >= 4 {
            let id = UInt16(extra[cursor]) | UInt16(extra[cursor + 1]) << 8
            let length = Int(UInt16(extra[cursor + 2]) | UInt16(extra[cursor + 3]) << 8)
            let data = cursor + 4
            guard extra.endIndex - data >= length else { return nil }
            if id == zip64ExtraID { return extra[data..<(data + length)] }
            cursor = data + length
        }
        return nil
    }

    /// Where a member's data lies: after its local header (whose own name and extra lengths count,
    /// they may differ from the central directory's), entirely before `limit` (the central
    /// directory's start).
    static func dataRange(
        of member: ZipArchive.Member, _ archive: ZipBytes, before limit: Int
    ) throws(DropboxError) -> Range<Int> {
        let name = member.name
        guard limit <= archive.count, member.localHeaderOffset <= UInt64(limit),
            limit - Int(member.localHeaderOffset) >= localHeaderLength
        else {
            throw .malformedResponse(
                "zip: the local header of member \"\(name)\" (offset \(member.localHeaderOffset)) lies outside "
                    + "the members' part of the archive")
        }
        let header = Int(member.localHeaderOffset)
        guard try archive.u32(header) == localHeaderSignature else {
            throw .malformedResponse("zip: no local header at offset \(header) for member \"\(name)\"")
        }
        let start = header + localHeaderLength + Int(try archive.u16(header + 26)) + Int(try archive.u16(header + 28))
        guard start <= limit, member.compressedSize <= UInt64(limit - start) else {
            throw .malformedResponse(
                "zip: the data of member \"\(name)\" (\(member.compressedSize) bytes at offset \(start)) runs "
                    + "past the members' part of the archive")
        }
        return start..<(start + Int(member.compressedSize))
    }

    /// Checks that every member's local header and data lie before the central directory and that no
    /// two members share bytes (a legitimate archive never does; a zip bomb may point many members at
    /// one piece of data).
    static func checkDataLayout(
        _ members: [ZipArchive.Member], _ archive: ZipBytes, before limit: Int
    ) throws(DropboxError) {
        var spans: [(start: Int, end: Int, index: Int)] = []
        spans.reserveCapacity(members.count)
        for (index, member) in members.enumerated() {
            let data = try dataRange(of: member, archive, before: limit)
            spans.append((Int(member.localHeaderOffset), data.upperBound, index))
        }
        spans.sort { $0.start < $1.start }
        for (earlier, later) in zip(spans, spans.dropFirst()) where earlier.end > later.start {
            throw .malformedResponse(
                "zip: members \"\(members[earlier.index].name)\" and \"\(members[later.index].name)\" overlap")
        }
    }
}
