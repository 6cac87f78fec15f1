// A 429's Retry-After may name a time instead of a number of seconds (docs/DROPBOX-API.md, "Rate
// limits and Retry-After"). Only IMF-fixdate ("Sun, 06 Nov 1994 08:49:37 GMT"), the one form a
// server may send, is read: a strict parser of its 29 fixed bytes, so the result depends on no
// locale (DateFormatter's does) and costs a few comparisons. The obsolete RFC 850 and asctime forms
// count as unreadable, and their reply gets the default wait.

#if canImport(Glibc)
    import Glibc
#endif

enum HTTPDate {
    private static let dayNames = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"]
    private static let monthNames = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    /// Seconds since the Unix epoch of an IMF-fixdate (surrounding spaces allowed), or nil for
    /// anything else, a day the month does not have included. The day name is not checked against
    /// the date.
    static func parse(_ text: String) -> Int64? {
        let b = Array(text.trimmingSpaces.utf8)
        guard b.count == 29 else { return nil }
        func word(_ start: Int) -> String { String(decoding: b[start..<(start + 3)], as: UTF8.self) }
        func digits(_ start: Int, _ count: Int) -> Int64? {
            var value: Int64 = 0
            for byte in b[start..<(start + count)] {
                let d = byte &- UInt8(ascii: "0")
                guard d < 10 else { return nil }
                value = value * 10 + Int64(d)
            }
            return value
        }
        let punctuation: [(Int, Character)] = [
            (3, ","), (4, " "), (7, " "), (11, " "), (16, " "), (19, ":"), (22, ":"), (25, " "),
        ]
        guard punctuation.allSatisfy({ b[$0.0] == $0.1.asciiValue }), word(26) == "GMT", dayNames.contains(word(0)),
            let monthIndex = monthNames.firstIndex(of: word(8)),
            let day = digits(5, 2), let year = digits(12, 4), let hour = digits(17, 2), let minute = digits(20, 2),
            let second = digits(23, 2)
        else { return nil }
        let month = Int64(monthIndex + 1)
        guard year >= 1, day >= 1, day <= daysIn(month: month, year: year), hour < 24, minute < 60, second <= 60
        else { return nil }
        let days = DropboxTimestamp.daysFromCivil(year: year, month: month, day: day)
        return days * 86_400 + hour * 3_600 + minute * 60 + second
    }

    /// The local wall clock, in whole seconds since the epoch.
    static func now() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return Int64(ts.tv_sec)
    }

    private static func daysIn(month: Int64, year: Int64) -> Int64 {
        switch month {
        case 2: return year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }
}
