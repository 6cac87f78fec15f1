// Dropbox timestamps are always "%Y-%m-%dT%H:%M:%SZ" (UTC, no fraction). Parsing them by hand is
// about 100x cheaper than ISO8601DateFormatter, which matters when a listing holds a million files.

/// Seconds since the Unix epoch, as Dropbox reports them (whole seconds, UTC).
public struct DropboxTimestamp: Sendable, Hashable, Comparable, CustomStringConvertible {
    public var secondsSinceEpoch: Int64

    public init(secondsSinceEpoch: Int64) {
        self.secondsSinceEpoch = secondsSinceEpoch
    }

    /// Parses the fixed form `YYYY-MM-DDTHH:MM:SSZ`; returns nil for anything else.
    public init?(parsing text: String) {
        var text = text
        let parsed: Int64? = text.withUTF8 { Self.parse($0) }
        guard let parsed else { return nil }
        self.secondsSinceEpoch = parsed
    }

    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.secondsSinceEpoch < rhs.secondsSinceEpoch }

    public var description: String { Self.format(secondsSinceEpoch) }

    static func parse(_ b: UnsafeBufferPointer<UInt8>) -> Int64? {
        guard b.count == 20, b[4] == UInt8(ascii: "-"), b[7] == UInt8(ascii: "-"),
            b[10] == UInt8(ascii: "T"), b[13] == UInt8(ascii: ":"), b[16] == UInt8(ascii: ":"),
            b[19] == UInt8(ascii: "Z")
        else { return nil }
        func digits(_ start: Int, _ count: Int) -> Int64? {
            var value: Int64 = 0
            for i in start..<(start + count) {
                let d = b[i] &- UInt8(ascii: "0")
                guard d < 10 else { return nil }
                value = value * 10 + Int64(d)
            }
            return value
        }
        guard let year = digits(0, 4), let month = digits(5, 2), let day = digits(8, 2),
            let hour = digits(11, 2), let minute = digits(14, 2), let second = digits(17, 2),
            (1...12).contains(month), (1...31).contains(day), hour < 24, minute < 60, second < 61
        else { return nil }
        let days = daysFromCivil(year: year, month: month, day: day)
        return days * 86_400 + hour * 3_600 + minute * 60 + second
    }

    /// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
    static func daysFromCivil(year: Int64, month: Int64, day: Int64) -> Int64 {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let mp = (month + 9) % 12
        let doy = (153 * mp + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }

    static func format(_ seconds: Int64) -> String {
        let days = seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400
        let rem = seconds - days * 86_400
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let day = doy - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        let year = yoe + era * 400 + (month <= 2 ? 1 : 0)
        func pad(_ v: Int64, _ width: Int) -> String {
            let s = String(v)
            return String(repeating: "0", count: max(0, width - s.count)) + s
        }
        return "\(pad(year, 4))-\(pad(month, 2))-\(pad(day, 2))T\(pad(rem / 3_600, 2)):"
            + "\(pad(rem % 3_600 / 60, 2)):\(pad(rem % 60, 2))Z"
    }
}

extension DropboxTimestamp: Codable {
    public init(from decoder: any Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        guard let value = DropboxTimestamp(parsing: text) else {
            throw DecodingError.dataCorrupted(
                .init(codingPath: decoder.codingPath, debugDescription: "not a Dropbox timestamp: \(text)"))
        }
        self = value
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(description)
    }
}
