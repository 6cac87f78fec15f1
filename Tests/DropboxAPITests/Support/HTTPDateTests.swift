// The HTTP-date parser behind a Retry-After that names a time (HTTPDate.swift): IMF-fixdate is read
// exactly, to the second; the obsolete forms and anything not a real date are refused.

import Testing

@testable import DropboxAPI

@Suite struct HTTPDateTests {
    @Test(arguments: [
        ("Thu, 01 Jan 1970 00:00:00 GMT", 0),
        ("Sun, 06 Nov 1994 08:49:37 GMT", 784_111_777),
        ("Wed, 21 Oct 2026 07:28:00 GMT", 1_792_567_680),
        ("Tue, 29 Feb 2028 23:59:59 GMT", 1_835_481_599),
        ("Fri, 31 Dec 9999 23:59:59 GMT", 253_402_300_799),
        ("  Wed, 21 Oct 2026 07:28:00 GMT ", 1_792_567_680),
    ] as [(String, Int64)])
    func readsIMFFixdate(_ text: String, _ seconds: Int64) {
        #expect(HTTPDate.parse(text) == seconds)
    }

    @Test(arguments: [
        "",
        "120",
        "Wednesday, 21-Oct-26 07:28:00 GMT",  // RFC 850
        "Wed Oct 21 07:28:00 2026",  // asctime
        "Wed, 21 Oct 2026 07:28:00 UTC",
        "Wed, 21 Oct 2026 07:28:00 gmt",
        "wed, 21 Oct 2026 07:28:00 GMT",
        "Wed, 21 oct 2026 07:28:00 GMT",
        "Wed, 21 Oct 2026 07:28:00 +0000",
        "Wed, 21 Oct 2026 7:28:00 GMT",
        "Wed,21 Oct 2026 07:28:00 GMT ",
        "Wed, 21 Oct 26 07:28:00 GMT",
        "Wed, 32 Oct 2026 07:28:00 GMT",
        "Wed, 00 Oct 2026 07:28:00 GMT",
        "Sun, 29 Feb 2026 07:28:00 GMT",
        "Thu, 31 Apr 2026 07:28:00 GMT",
        "Wed, 21 Oct 2026 24:00:00 GMT",
        "Wed, 21 Oct 2026 07:60:00 GMT",
        "Wed, 21 Oct 2026 07:28:61 GMT",
        "Wed, 21 Oct 0000 07:28:00 GMT",
        "Xyz, 21 Oct 2026 07:28:00 GMT",
        "Wed, 2x Oct 2026 07:28:00 GMT",
        "Wed, 21 Oct 2026 07:28:00 GMTX",
    ])
    func refusesEverythingElse(_ text: String) {
        #expect(HTTPDate.parse(text) == nil)
    }
}
