// Numbers the server controls are bounded where they enter (ServerLimits): an absurd retry_after,
// longpoll backoff, token lifetime or file size gives a bounded value (or an undecodable entry)
// and one log line, never a trap, an endless sleep or a refresh loop.

import DropboxTestSupport
import Foundation
import Testing

@testable import DropboxAPI

@Suite struct ServerLimitsTests {
    static func rateLimit(_ body: String, json: Bool = true, header: String? = nil) -> DropboxError {
        var headers = HTTPHeaders()
        headers.add("Content-Type", json ? "application/json" : "text/plain")
        if let header { headers.add("Retry-After", header) }
        return DropboxError.fromReply(status: 429, headers: headers, body: Array(body.utf8))
    }

    @Test func absurdRetryAfterIsCutToTenMinutes() {
        #expect(Self.rateLimit(#"{"error":{"retry_after":10000000000}}"#) == .rateLimited(retryAfter: 600))
        #expect(Self.rateLimit(#"{"error":{"retry_after":1e308}}"#) == .rateLimited(retryAfter: 600))
        #expect(Self.rateLimit("slow down", json: false, header: "10000000000") == .rateLimited(retryAfter: 600))
        #expect(Self.rateLimit("slow down", json: false, header: "inf") == .rateLimited(retryAfter: 600))
        #expect(Self.rateLimit(#"{"error":{"retry_after":3}}"#) == .rateLimited(retryAfter: 3))
    }

    @Test(arguments: [1e10, 1e300, Double.infinity, Double.nan, -5])
    func thePacerNeverTrapsOnAWait(_ seconds: Double) {
        var attempts = PacerDecision.Attempts()
        let decision = PacerDecision.after(
            .rateLimited(retryAfter: seconds), attempts: &attempts, random: 1, policy: RetryPolicy())
        guard case .pauseAll(let wait) = decision else {
            Issue.record("not a pause: \(decision)")
            return
        }
        #expect(wait <= .seconds(600) + RetryPolicy().rateLimitJitter)
        #expect(wait >= .zero)
    }

    @Test func longpollBackoffIsBounded() throws {
        func decode(_ json: String) throws -> LongpollResult {
            try JSONDecoder().decode(LongpollResult.self, from: Data(json.utf8))
        }
        #expect(try decode(#"{"changes":false,"backoff":60}"#).backoff == 60)
        #expect(try decode(#"{"changes":false,"backoff":99999999999}"#).backoff == 600)
        #expect(try decode(#"{"changes":false,"backoff":1e30}"#).backoff == 600)
        #expect(try decode(#"{"changes":true,"backoff":-3}"#).backoff == 0)
        #expect(try decode(#"{"changes":true}"#).backoff == nil)
        #expect(try decode(#"{"changes":true,"backoff":null}"#).backoff == nil)
    }

    @Test func tokenLifetimesAreBounded() {
        #expect(ServerLimits.tokenLifetime(0) == 5)
        #expect(ServerLimits.tokenLifetime(-100) == 5)
        #expect(ServerLimits.tokenLifetime(14_400) == 14_400)
        #expect(ServerLimits.tokenLifetime(Int.max) == 30 * 86_400)
        // A token that lives the minimum is renewed halfway, not on every request.
        #expect(RefreshingTokenProvider.renewBefore(.seconds(5), margin: .seconds(300)) == .milliseconds(2500))
    }

    /// Sizes past 2^53 make the entry undecodable in both decoders (it is then hidden and counted).
    @Test(arguments: ["9007199254740993", "18446744073709551615", "36028797018963968"])
    func hugeSizesAreUndecodable(_ size: String) throws {
        let good =
            #"{".tag":"file","name":"a","id":"id:a","path_lower":"/a","path_display":"/a","client_modified":"2020-01-02T03:04:05Z","server_modified":"2021-01-02T03:04:05Z","rev":"0123456789","size":9007199254740992}"#
        let bad = good.replacingOccurrences(of: "9007199254740992", with: size)
        let page = Array(#"{"entries":[\#(good),\#(bad)],"cursor":"c","has_more":false}"#.utf8)
        let fast = try ListFolderResult.decode(json: page)
        #expect(fast.entries.count == 1)
        #expect(fast.undecodableEntries == 1)
        let slow = try JSONDecoder().decode(ListFolderResult.self, from: Data(page))
        #expect(slow.entries.count == 1)
        #expect(slow.undecodableEntries == 1)
        #expect(slow == fast)
    }
}
