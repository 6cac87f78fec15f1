// The zip reader that takes a folder's files out of a files/download_zip reply: round trips through
// the test support's writer in every shape it writes (stored, deflate, zip64, data descriptors,
// empty files, directories, UTF-8 names), an archive written by an independent writer (Python's
// zipfile), and the faults of an untrusted reply: every truncation, corrupt data, sizes over the
// caller's limit, streams that inflate past their declared size, unknown methods, bad records, and
// random byte flips that must never trap.

import DropboxAPI
import DropboxTestSupport
import Testing

@Suite struct ZipArchiveTests {
    // MARK: Round trips

    static let shapes: [(deflate: Bool, zip64: Bool, dataDescriptors: Bool)] = [
        (false, false, false), (true, false, false), (false, true, false), (true, true, false),
        (false, false, true), (true, false, true), (false, true, true), (true, true, true),
    ]

    static func sampleEntries() -> [ZipWriter.Entry] {
        var generator = SplitMix(seed: 7)
        let noise = (0..<70_000).map { _ in UInt8.random(in: 0...255, using: &generator) }
        let text = Array(String(repeating: "a line of text that repeats\n", count: 3000).utf8)
        return [
            .file("hello.txt", Array("hello, zip\n".utf8)),
            .file("empty.txt", []),
            .directory("Photos/"),
            .directory("Photos/2019/"),
            .file("Photos/2019/Zürich ☃.jpg", noise),
            .file("Photos/notes.txt", text),
        ]
    }

    @Test(arguments: shapes)
    func roundTrip(shape: (deflate: Bool, zip64: Bool, dataDescriptors: Bool)) throws {
        let entries = Self.sampleEntries()
        let bytes = ZipWriter.archive(
            entries, deflate: shape.deflate, zip64: shape.zip64, dataDescriptors: shape.dataDescriptors)
        let archive = try ZipArchive(bytes)
        #expect(archive.members.map(\.name) == entries.map(\.name))
        #expect(archive.members.map(\.isDirectory) == entries.map { $0.bytes == nil })
        for (member, entry) in zip(archive.members, entries) {
            #expect(member.size == UInt64(entry.bytes?.count ?? 0))
            #expect(try archive.contents(of: member, limit: member.size) == (entry.bytes ?? []))
        }
        let total = entries.reduce(0) { $0 + ($1.bytes?.count ?? 0) }
        if shape.deflate {
            #expect(bytes.count < total - 80_000, "the repeated text deflates to a fraction")
        } else {
            #expect(bytes.count > total)
        }
    }

    /// The round trips prove something only if the writer really leaves the local header without
    /// sizes when it writes data descriptors, and the 32-bit end record without counts for zip64
    /// (its archives were also checked once with Python's zipfile and Info-ZIP's unzip -t).
    @Test func writerWritesTheShapesTheReaderMustTake() throws {
        let plain = ZipWriter.archive([.file("a", [1, 2, 3])], deflate: true)
        #expect(plain[6..<8] == [0, 0] && plain[18..<26] != [0, 0, 0, 0, 0, 0, 0, 0])
        #expect(plain[8] == 8, "deflate")
        let described = ZipWriter.archive([.file("a", [1, 2, 3])], dataDescriptors: true)
        #expect(described[6] & 0x08 == 0x08, "flag bit 3")
        #expect(described[14..<26].allSatisfy { $0 == 0 }, "CRC-32 and sizes left out of the local header")
        #expect(try ZipArchive(described).members[0].crc32 == Self.bitwiseCRC32([1, 2, 3]))
        let wide = ZipWriter.archive([.file("a", [1, 2, 3])], zip64: true)
        let end = wide.count - 22
        #expect(wide[(end + 8)..<(end + 20)].allSatisfy { $0 == 0xFF }, "counts, size and offset only in zip64")
        #expect(Self.find([0x50, 0x4b, 0x06, 0x07], in: wide) == end - 20, "the zip64 locator")
        let utf8 = ZipWriter.archive([.file("Zürich", [])])
        #expect(utf8[7] & 0x08 == 0x08, "flag bit 11 for a name that is not ASCII")
    }

    @Test func emptyArchiveHasNoMembers() throws {
        #expect(try ZipArchive(ZipWriter.archive([])).members == [])
        #expect(try ZipArchive(ZipWriter.archive([], zip64: true)).members == [])
    }

    @Test func sizeEqualToTheLimitIsRead() throws {
        let archive = try ZipArchive(ZipWriter.archive([.file("a", [1, 2, 3])], deflate: true))
        let member = try #require(archive.members.first)
        #expect(try archive.contents(of: member, limit: 3) == [1, 2, 3])
        let refused = Self.message { _ = try archive.contents(of: member, limit: 2) }
        #expect(refused == "zip: member \"a\" is 3 bytes, more than the limit of 2")
    }

    // MARK: An independent writer

    /// Made once with Python's zipfile module (not at test time):
    ///   z = zipfile.ZipFile(buf, 'w')
    ///   z.writestr(ZipInfo('Readme.txt', date_time=(2020,1,2,3,4,6)), b'stored by zipfile\n',
    ///              compress_type=ZIP_STORED)
    ///   z.writestr(ZipInfo('Fotos/Zürich.txt', date_time=(2020,1,2,3,4,6)), b'deflated by zipfile; ' * 8,
    ///              compress_type=ZIP_DEFLATED)
    /// and printed with buf.getvalue().hex(). zipfile sets the UTF-8 flag (bit 11) on the second name only.
    static let pythonArchive = hex(
        "504b03041400000000008318225054907ad512000000120000000a000000526561646d652e74787473746f7265642062"
            + "79207a697066696c650a504b0304140000080800831822509b4159691a000000a800000011000000466f746f732f5ac3"
            + "bc726963682e7478744b494dcb492c494d5148aa54a8ca2c48cbcc49b55648197c8200504b0102140314000000000083"
            + "18225054907ad512000000120000000a0000000000000000000000800100000000526561646d652e747874504b010214"
            + "03140000080800831822509b4159691a000000a800000011000000000000000000000080013a000000466f746f732f5a"
            + "c3bc726963682e747874504b0506000000000200020077000000830000000000")

    @Test func readsAnArchiveOfPythonsZipfile() throws {
        let archive = try ZipArchive(Self.pythonArchive)
        #expect(archive.members.map(\.name) == ["Readme.txt", "Fotos/Zürich.txt"])
        #expect(archive.members.map(\.size) == [18, 168])
        #expect(archive.members.map(\.crc32) == [0xd57a_9054, 0x6959_419b])
        #expect(try archive.contents(of: archive.members[0], limit: 1000) == Array("stored by zipfile\n".utf8))
        #expect(
            try archive.contents(of: archive.members[1], limit: 1000)
                == Array(String(repeating: "deflated by zipfile; ", count: 8).utf8))
    }

    // MARK: Names

    @Test func nameThatIsNotUTF8KeepsAReplacementCharacter() throws {
        var bytes = ZipWriter.archive([.file("a_b.txt", [9])])
        let header = try #require(Self.find([0x50, 0x4b, 0x01, 0x02], in: bytes))
        #expect(bytes[header + 46 + 1] == UInt8(ascii: "_"))
        bytes[header + 46 + 1] = 0xFF
        let archive = try ZipArchive(bytes)
        #expect(archive.members.map(\.name) == ["a\u{FFFD}b.txt"])
        #expect(try archive.contents(of: archive.members[0], limit: 1) == [9])
    }

    // MARK: Faults

    @Test(arguments: [false, true])
    func everyTruncationThrows(zip64: Bool) {
        let bytes = ZipWriter.archive(
            [.file("one.txt", Array("first member".utf8)), .directory("d/"), .file("d/two", [1, 2, 3, 4])],
            deflate: true, zip64: zip64)
        for length in 0..<bytes.count {
            let message = Self.message { _ = try ZipArchive(Array(bytes[0..<length])) }
            #expect(message?.hasPrefix("zip: ") == true, "a prefix of \(length) of \(bytes.count) bytes")
        }
    }

    @Test func corruptStoredByteFailsTheCRC() throws {
        let content = Array("the stored content of a member".utf8)
        var bytes = ZipWriter.archive([.file("a.txt", content)])
        let data = try #require(Self.find(content, in: bytes))
        bytes[data + 4] ^= 0x20
        let archive = try ZipArchive(bytes)
        let message = Self.message { _ = try archive.contents(of: archive.members[0], limit: 1000) }
        #expect(message?.hasPrefix("zip: member \"a.txt\" fails its CRC-32 check") == true, "\(message ?? "")")
    }

    @Test func corruptDeflateByteIsRefused() throws {
        let content = Array(String(repeating: "deflate me ", count: 200).utf8)
        let member = ZipWriter.rawDeflate(content)
        var bytes = ZipWriter.archive([.file("a.txt", content)], deflate: true)
        let data = try #require(Self.find(member, in: bytes))
        bytes[data + member.count / 2] ^= 0x01
        let archive = try ZipArchive(bytes)
        let message = Self.message { _ = try archive.contents(of: archive.members[0], limit: 100_000) }
        #expect(message?.hasPrefix("zip: member \"a.txt\"") == true, "\(message ?? "")")
    }

    @Test func memberOverTheLimitIsRefusedBeforeInflating() throws {
        let zeros = [UInt8](repeating: 0, count: 1 << 20)
        let member = ZipWriter.rawDeflate(zeros)
        var bytes = ZipWriter.archive([.file("bomb", zeros)], deflate: true)
        let archive = try ZipArchive(bytes)
        let message = Self.message { _ = try archive.contents(of: archive.members[0], limit: 1000) }
        #expect(message == "zip: member \"bomb\" is 1048576 bytes, more than the limit of 1000")

        // With its deflate data ruined, the answer is still the limit's: nothing was inflated.
        let data = try #require(Self.find(member, in: bytes))
        for index in data..<(data + member.count) { bytes[index] = 0xFF }
        let ruined = try ZipArchive(bytes)
        #expect(Self.message { _ = try ruined.contents(of: ruined.members[0], limit: 1000) } == message)
        #expect(Self.message { _ = try ruined.contents(of: ruined.members[0], limit: 1 << 20) }?
            .contains("deflate data is corrupt") == true)
    }

    @Test func streamThatInflatesPastItsDeclaredSizeIsRefused() throws {
        let zeros = [UInt8](repeating: 0, count: 100_000)
        var bytes = ZipWriter.archive([.file("liar", zeros)], deflate: true)
        let header = try #require(Self.find([0x50, 0x4b, 0x01, 0x02], in: bytes))
        Self.put32(10, at: header + 24, in: &bytes)  // the uncompressed size
        let archive = try ZipArchive(bytes)
        #expect(archive.members[0].size == 10)
        let message = Self.message { _ = try archive.contents(of: archive.members[0], limit: 1 << 30) }
        #expect(
            message == "zip: member \"liar\": the deflate data inflates to more than the 10 bytes the directory declares")

        Self.put32(100_001, at: header + 24, in: &bytes)
        let short = try ZipArchive(bytes)
        #expect(Self.message { _ = try short.contents(of: short.members[0], limit: 1 << 30) }
            == "zip: member \"liar\": the deflate data inflates to 100000 bytes, the directory declares 100001")
    }

    @Test func unknownMethodIsNamed() throws {
        var bytes = ZipWriter.archive([.file("x.bz2", [1, 2, 3])])
        let header = try #require(Self.find([0x50, 0x4b, 0x01, 0x02], in: bytes))
        bytes[header + 10] = 12
        let archive = try ZipArchive(bytes)
        #expect(Self.message { _ = try archive.contents(of: archive.members[0], limit: 100) }
            == "zip: member \"x.bz2\" uses compression method 12 (bzip2); only 0 (stored) and 8 (deflate) are read")
        bytes[header + 10] = 77
        let other = try ZipArchive(bytes)
        #expect(Self.message { _ = try other.contents(of: other.members[0], limit: 100) }?
            .contains("method 77;") == true)
    }

    @Test func encryptedMemberIsRefused() throws {
        var bytes = ZipWriter.archive([.file("secret", [1, 2, 3])])
        let header = try #require(Self.find([0x50, 0x4b, 0x01, 0x02], in: bytes))
        bytes[header + 8] |= 1
        let archive = try ZipArchive(bytes)
        #expect(Self.message { _ = try archive.contents(of: archive.members[0], limit: 100) }
            == "zip: member \"secret\" is encrypted")
    }

    /// Each fault names what is wrong; `patch` edits a valid two-member archive.
    @Test(arguments: [
        ("not a zip", "no end of central directory record"),
        ("more members than the directory holds", "cannot fit in a central directory"),
        ("directory past the end", "does not fit in the"),
        ("bad directory signature", "no central directory header at offset"),
        ("bad local signature", "no local header at offset"),
        ("local header past the directory", "lies outside the members' part"),
        ("overlapping members", "overlap"),
        ("split across disks", "split across disks"),
        ("bytes left in the directory", "bytes after its 1 members"),
    ])
    func malformedArchiveIsRefused(fault: String, expected: String) throws {
        var bytes = ZipWriter.archive([.file("first", Array("one".utf8)), .file("second", Array("two".utf8))])
        let directory = try #require(Self.find([0x50, 0x4b, 0x01, 0x02], in: bytes))
        let end = bytes.count - 22
        switch fault {
        case "not a zip": bytes = Array("just some text, certainly not an archive".utf8)
        case "more members than the directory holds":
            Self.put16(1000, at: end + 8, in: &bytes)
            Self.put16(1000, at: end + 10, in: &bytes)
        case "directory past the end": Self.put32(UInt32(bytes.count), at: end + 16, in: &bytes)
        case "bad directory signature": bytes[directory + 3] = 9
        case "bad local signature": bytes[0] = 0
        case "local header past the directory": Self.put32(UInt32(directory), at: directory + 42, in: &bytes)
        case "overlapping members":
            let second = try #require(Self.find([0x50, 0x4b, 0x01, 0x02], in: bytes, from: directory + 4))
            Self.put32(0, at: second + 42, in: &bytes)
        case "split across disks": Self.put16(1, at: end + 4, in: &bytes)
        case "bytes left in the directory":
            Self.put16(1, at: end + 8, in: &bytes)
            Self.put16(1, at: end + 10, in: &bytes)
        default: Issue.record("no such fault \(fault)")
        }
        let message = Self.message { _ = try ZipArchive(bytes) }
        #expect(message?.hasPrefix("zip: ") == true && message?.contains(expected) == true, "\(message ?? "no error")")
    }

    @Test func zip64EndRecordIsRead() throws {
        var bytes = ZipWriter.archive([.file("a", [1])], zip64: true)
        // The 32-bit end record says only "see zip64"; without the zip64 record nothing is found.
        let record = try #require(Self.find([0x50, 0x4b, 0x06, 0x06], in: bytes))
        bytes[record] = 0
        #expect(Self.message { _ = try ZipArchive(bytes) }?.hasPrefix("zip: no zip64 end record at offset") == true)
    }

    @Test func memberOfAnotherArchiveIsCheckedAgainstThisOne() throws {
        let big = try ZipArchive(ZipWriter.archive([.file("pad", [UInt8](repeating: 1, count: 5000)), .file("b", [2])]))
        let small = try ZipArchive(ZipWriter.archive([.file("a", [1])]))
        #expect(Self.message { _ = try small.contents(of: big.members[1], limit: 100) }?.hasPrefix("zip: ") == true)
    }

    /// Random byte flips of valid archives never trap, and whatever contents come back are whole
    /// and match their CRC-32 (computed here without zlib).
    @Test func randomFlipsNeverTrapAndContentsPassTheirCRC() {
        let entries = Self.sampleEntries().map { entry in
            ZipWriter.Entry(name: entry.name, bytes: entry.bytes.map { Array($0.prefix(3000)) })
        }
        let archives = [
            ZipWriter.archive(entries, deflate: true),
            ZipWriter.archive(entries, zip64: true, dataDescriptors: true),
        ]
        var generator = SplitMix(seed: 0x5A1F)
        var opened = 0
        var read = 0
        for round in 0..<500 {
            var bytes = archives[round % archives.count]
            for _ in 0..<Int.random(in: 1...3, using: &generator) {
                let index = Int.random(in: 0..<bytes.count, using: &generator)
                bytes[index] ^= UInt8.random(in: 1...255, using: &generator)
            }
            guard let archive = try? ZipArchive(bytes) else { continue }
            opened += 1
            for member in archive.members {
                guard let contents = try? archive.contents(of: member, limit: 1 << 20) else { continue }
                read += 1
                #expect(UInt64(contents.count) == member.size, "round \(round)")
                #expect(Self.bitwiseCRC32(contents) == member.crc32, "round \(round)")
            }
        }
        // Most flips land in member data, so most archives still open and many members still read.
        #expect(opened > 100 && read > 100, "opened \(opened), read \(read)")
    }

    // MARK: Helpers

    /// The message of the malformedResponse `body` throws, nil when it throws nothing.
    static func message(_ body: () throws -> Void) -> String? {
        do {
            try body()
            return nil
        } catch {
            guard case .malformedResponse(let message) = error as? DropboxError else {
                return "another error: \(error)"
            }
            return message
        }
    }

    static func find(_ pattern: [UInt8], in bytes: [UInt8], from start: Int = 0) -> Int? {
        guard bytes.count >= pattern.count else { return nil }
        return (start...(bytes.count - pattern.count)).first { bytes[$0..<($0 + pattern.count)].elementsEqual(pattern) }
    }

    static func put16(_ value: UInt16, at offset: Int, in bytes: inout [UInt8]) {
        bytes[offset] = UInt8(truncatingIfNeeded: value)
        bytes[offset + 1] = UInt8(truncatingIfNeeded: value >> 8)
    }

    static func put32(_ value: UInt32, at offset: Int, in bytes: inout [UInt8]) {
        for index in 0..<4 { bytes[offset + index] = UInt8(truncatingIfNeeded: value >> UInt32(8 * index)) }
    }

    static func hex(_ text: String) -> [UInt8] {
        var bytes: [UInt8] = []
        var iterator = text.makeIterator()
        while let high = iterator.next(), let low = iterator.next() {
            bytes.append(UInt8(String([high, low]), radix: 16)!)
        }
        return bytes
    }

    /// CRC-32 (reflected, polynomial 0xEDB88320) bit by bit, independent of zlib.
    static func bitwiseCRC32(_ bytes: [UInt8]) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in bytes {
            crc ^= UInt32(byte)
            for _ in 0..<8 { crc = crc & 1 == 1 ? (crc >> 1) ^ 0xEDB8_8320 : crc >> 1 }
        }
        return ~crc
    }
}
