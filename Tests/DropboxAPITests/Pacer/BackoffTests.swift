// The backoff and the pacer's decision are pure functions: checked here from tables, no clock.

import DropboxAPI
import Testing

@Suite struct BackoffTests {
    static let defaults = RetryPolicy()

    @Test(arguments: [
        (1, 0.0, Duration.milliseconds(100)),
        (1, 0.5, .milliseconds(150)),
        (1, 0.75, .milliseconds(175)),
        (1, 1.0, .milliseconds(200)),
        (0, 0.0, .milliseconds(100)),
        (2, 0.0, .milliseconds(200)),
        (3, 0.0, .milliseconds(400)),
        (3, 0.5, .milliseconds(600)),
        (5, 0.0, .milliseconds(1600)),
        (6, 0.0, .milliseconds(2500)),
        (6, 0.5, .milliseconds(3750)),
        (40, 0.0, .milliseconds(2500)),
        (1000, 0.75, .milliseconds(4375)),
        (2, -3.0, .milliseconds(200)),
        (2, 7.0, .milliseconds(400)),
    ])
    func defaultPolicy(failure: Int, random: Double, expected: Duration) {
        #expect(Backoff.delay(afterFailure: failure, random: random, policy: Self.defaults) == expected)
    }

    @Test func customPolicy() {
        let policy = RetryPolicy(baseDelay: .seconds(1), maxDelay: .seconds(8))
        let table: [(Int, Duration)] = [
            (1, .milliseconds(500)), (2, .seconds(1)), (3, .seconds(2)), (4, .seconds(4)), (5, .seconds(4)),
        ]
        for (failure, expected) in table {
            #expect(Backoff.delay(afterFailure: failure, random: 0, policy: policy) == expected)
        }
    }

    @Test func neverAboveTheCapNorBelowHalfTheCeiling() {
        for failure in 1...30 {
            for random in stride(from: 0.0, to: 1.0, by: 0.1) {
                let d = Backoff.delay(afterFailure: failure, random: random, policy: Self.defaults)
                #expect(d <= .seconds(5) && d >= .milliseconds(100))
            }
        }
    }
}

@Suite struct PacerDecisionTests {
    typealias Attempts = PacerDecision.Attempts

    struct Case: Sendable, CustomTestStringConvertible {
        var error: DropboxError
        var before: Attempts
        var random: Double = 0
        var decision: PacerDecision
        var after: Attempts
        var testDescription: String { "\(error) after \(before.failures)/\(before.rateLimits)" }
    }

    static let timeout = DropboxError.transport(TransportError(kind: .timeout, message: "t"))
    static let refused = DropboxError.transport(TransportError(kind: .couldNotConnect, message: "c"))
    static let lost = DropboxError.transport(TransportError(kind: .connectionLost, message: "l"))

    static let cases: [Case] = [
        Case(
            error: .serverError(status: 503), before: Attempts(), decision: .retry(after: .milliseconds(100)),
            after: Attempts(failures: 1)),
        Case(
            error: .serverError(status: 500), before: Attempts(failures: 1),
            decision: .retry(after: .milliseconds(200)), after: Attempts(failures: 2)),
        Case(
            error: .serverError(status: 502), before: Attempts(failures: 3), random: 0.5,
            decision: .retry(after: .milliseconds(1200)), after: Attempts(failures: 4)),
        Case(
            error: .serverError(status: 503), before: Attempts(failures: 4), decision: .fail,
            after: Attempts(failures: 5)),
        Case(
            error: timeout, before: Attempts(), decision: .retry(after: .milliseconds(100)),
            after: Attempts(failures: 1)),
        Case(
            error: refused, before: Attempts(rateLimits: 3), decision: .retry(after: .milliseconds(100)),
            after: Attempts(failures: 1, rateLimits: 3)),
        Case(
            error: lost, before: Attempts(failures: 1), decision: .retry(after: .milliseconds(200)),
            after: Attempts(failures: 2)),
        Case(error: lost, before: Attempts(failures: 4), decision: .fail, after: Attempts(failures: 5)),
        Case(
            error: .transport(TransportError(kind: .tls, message: "x")), before: Attempts(), decision: .fail,
            after: Attempts()),
        Case(
            error: .transport(TransportError(kind: .cancelled, message: "x")), before: Attempts(), decision: .fail,
            after: Attempts()),
        Case(
            error: .transport(TransportError(kind: .other, message: "x")), before: Attempts(), decision: .fail,
            after: Attempts()),
        Case(
            error: .rateLimited(retryAfter: 3), before: Attempts(), decision: .pauseAll(for: .seconds(3)),
            after: Attempts(rateLimits: 1)),
        Case(
            error: .rateLimited(retryAfter: 3), before: Attempts(failures: 2), random: 0.5,
            decision: .pauseAll(for: .milliseconds(3125)), after: Attempts(failures: 2, rateLimits: 1)),
        // retry_after 0 (or a Retry-After date already past): no wait but the jitter.
        Case(
            error: .rateLimited(retryAfter: 0), before: Attempts(), random: 0.5,
            decision: .pauseAll(for: .milliseconds(125)), after: Attempts(rateLimits: 1)),
        Case(
            error: .rateLimited(retryAfter: 0.5), before: Attempts(rateLimits: 9),
            decision: .pauseAll(for: .milliseconds(500)), after: Attempts(rateLimits: 10)),
        Case(
            error: .rateLimited(retryAfter: 1), before: Attempts(rateLimits: 10), decision: .fail,
            after: Attempts(rateLimits: 10)),
        Case(error: .badRequest(message: "x"), before: Attempts(), decision: .fail, after: Attempts()),
        Case(error: .authentication(.expiredAccessToken), before: Attempts(), decision: .fail, after: Attempts()),
        Case(error: .accessDenied(tag: "no_permission"), before: Attempts(), decision: .fail, after: Attempts()),
        Case(error: .lookup(.notFound), before: Attempts(), decision: .fail, after: Attempts()),
        Case(error: .cursorReset, before: Attempts(), decision: .fail, after: Attempts()),
        Case(error: .rangeNotSatisfiable, before: Attempts(), decision: .fail, after: Attempts()),
        Case(error: .pathRoot(tag: "invalid_root"), before: Attempts(), decision: .fail, after: Attempts()),
        Case(error: .unexpectedStatus(404), before: Attempts(), decision: .fail, after: Attempts()),
        Case(error: .malformedResponse("x"), before: Attempts(), decision: .fail, after: Attempts()),
        Case(
            error: .oauth(error: "invalid_client", description: ""), before: Attempts(), decision: .fail,
            after: Attempts()),
    ]

    @Test(arguments: cases)
    func decides(_ c: Case) {
        var attempts = c.before
        #expect(
            PacerDecision.after(c.error, attempts: &attempts, random: c.random, policy: RetryPolicy()) == c.decision)
        #expect(attempts == c.after)
    }
}
