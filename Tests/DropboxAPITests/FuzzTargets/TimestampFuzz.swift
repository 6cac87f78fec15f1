// Dropbox timestamps (DropboxTimestamp.parse) on any bytes, against a reference that counts days
// year by year and month by month (no shared arithmetic with the parser's civil-date formula):
//
// - parse gives the reference's seconds for exactly the inputs of the form YYYY-MM-DDTHH:MM:SSZ
//   with month 1...12, day 1...31, hour < 24, minute < 60, second < 61 (a day past the month's end
//   or a leap second counts on into the next day, as the parser's formula does), nil for all else;
// - the String initializer and the Decodable path (a JSON string) agree with it;
// - format(parse(x)) parses back to the same seconds, and is x itself for a real calendar date.

import Foundation

@testable import DropboxAPI

enum TimestampFuzz {
    static func check(_ input: UnsafeBufferPointer<UInt8>) -> String? {
        let parsed = DropboxTimestamp.parse(input)
        let want = reference(input)
        guard parsed == want else {
            return "\(Exact.bytes(input)) parsed as \(parsed.map(String.init) ?? "nil"), reference \(want.map(String.init) ?? "nil")"
        }
        if let text = String(validating: input, as: UTF8.self) {
            let viaString = DropboxTimestamp(parsing: text)?.secondsSinceEpoch
            guard viaString == parsed else { return "the String initializer gives \(viaString.map(String.init) ?? "nil")" }
            if !input.contains(where: { $0 < 0x20 || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") }) {
                let json = Data("\"\(text)\"".utf8)
                let decoded = (try? JSONDecoder().decode(DropboxTimestamp.self, from: json))?.secondsSinceEpoch
                guard decoded == parsed else { return "Decodable gives \(decoded.map(String.init) ?? "nil")" }
            }
        }
        if let parsed {
            let printed = DropboxTimestamp.format(parsed)
            var copy = printed
            let again = copy.withUTF8 { DropboxTimestamp.parse($0) }
            // 9999-12-31T23:59:60Z and the like print as a five-digit year, which is not the form.
            if printed.utf8.count == 20, again != parsed { return "\(printed) parses back as \(again.map(String.init) ?? "nil")" }
            if isCalendarDate(input), !printed.utf8.elementsEqual(input) { return "\(Exact.bytes(input)) prints as \(printed)" }
        }
        return nil
    }

    private struct Fields {
        var year, month, day, hour, minute, second: Int64
    }

    private static func fields(_ b: UnsafeBufferPointer<UInt8>) -> Fields? {
        let shape = Array("dddd-dd-ddTdd:dd:ddZ".utf8)
        guard b.count == shape.count else { return nil }
        for (byte, expected) in zip(b, shape) {
            if expected == UInt8(ascii: "d") {
                guard byte >= 0x30, byte <= 0x39 else { return nil }
            } else if byte != expected {
                return nil
            }
        }
        func number(_ at: Int, _ count: Int) -> Int64 {
            b[at..<(at + count)].reduce(0) { $0 * 10 + Int64($1 - 0x30) }
        }
        let f = Fields(
            year: number(0, 4), month: number(5, 2), day: number(8, 2), hour: number(11, 2), minute: number(14, 2),
            second: number(17, 2))
        guard (1...12).contains(f.month), (1...31).contains(f.day), f.hour < 24, f.minute < 60, f.second < 61 else {
            return nil
        }
        return f
    }

    private static func isLeap(_ y: Int64) -> Bool { y % 4 == 0 && (y % 100 != 0 || y % 400 == 0) }

    private static func monthLengths(_ y: Int64) -> [Int64] { [31, isLeap(y) ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31] }

    static func reference(_ b: UnsafeBufferPointer<UInt8>) -> Int64? {
        guard let f = fields(b) else { return nil }
        var days: Int64 = 0
        if f.year >= 1970 {
            for y in 1970..<f.year { days += isLeap(y) ? 366 : 365 }
        } else {
            for y in f.year..<1970 { days -= isLeap(y) ? 366 : 365 }
        }
        days += monthLengths(f.year).prefix(Int(f.month - 1)).reduce(0, +)
        days += f.day - 1
        return days * 86_400 + f.hour * 3_600 + f.minute * 60 + f.second
    }

    private static func isCalendarDate(_ b: UnsafeBufferPointer<UInt8>) -> Bool {
        guard let f = fields(b) else { return false }
        return f.day <= monthLengths(f.year)[Int(f.month - 1)] && f.second < 60
    }
}
