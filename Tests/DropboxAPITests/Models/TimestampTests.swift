// Dropbox timestamps: the fixed UTC form parses to the right epoch second, prints back the same,
// and anything else is rejected (fractions, offsets, separators, impossible fields).

import DropboxAPI
import Foundation
import Testing

@Suite struct TimestampTests {
    @Test(arguments: [
        ("2015-05-12T15:50:38Z", Int64(1_431_445_838)),
        ("1970-01-01T00:00:00Z", 0),
        ("1969-12-31T23:59:59Z", -1),
        ("2024-02-29T12:00:00Z", 1_709_208_000),
        ("2100-03-01T00:00:00Z", 4_107_542_400),
    ])
    func parsesAndRoundTrips(text: String, seconds: Int64) throws {
        let parsed = try #require(DropboxTimestamp(parsing: text))
        #expect(parsed.secondsSinceEpoch == seconds)
        #expect(parsed.description == text)
        #expect(DropboxTimestamp(parsing: DropboxTimestamp(secondsSinceEpoch: seconds).description) == parsed)
    }

    @Test(arguments: [
        "", "2015-05-12T15:50:38", "2015-05-12T15:50:38.123Z", "2015-05-12 15:50:38Z", "2015-05-12T15:50:38+00:00",
        "2015-13-12T15:50:38Z", "2015-00-12T15:50:38Z", "2015-05-32T15:50:38Z", "2015-05-12T24:00:00Z",
        "2015-05-12T15:60:38Z", "2015-05-12t15:50:38z", "20150512T155038Z", "２０15-05-12T15:50:38Z",
    ])
    func rejects(text: String) {
        #expect(DropboxTimestamp(parsing: text) == nil)
    }

    @Test func codableUsesTheFixedForm() throws {
        let value = DropboxTimestamp(secondsSinceEpoch: 1_431_445_838)
        let data = try JSONEncoder().encode([value])
        #expect(String(decoding: data, as: UTF8.self) == #"["2015-05-12T15:50:38Z"]"#)
        #expect(try JSONDecoder().decode([DropboxTimestamp].self, from: data) == [value])
        #expect(throws: DecodingError.self) {
            try JSONDecoder().decode([DropboxTimestamp].self, from: Data(#"["2015-05-12T15:50:38.5Z"]"#.utf8))
        }
    }
}
