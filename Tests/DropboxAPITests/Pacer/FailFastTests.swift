// A request that fails fast (FailFast.swift) gives up at the first silent failure of its host,
// with the kind `.unreachable`; without it, the pacer retries as always. A failure after the host
// answered is retried either way.

import Testing

@testable import DropboxAPI

@Suite struct FailFastTests {
    static let silent = DropboxError.transport(TransportError(kind: .timeout, message: "no reply began", silent: true))
    static let midway = DropboxError.transport(TransportError(kind: .timeout, message: "stalled", silent: false))

    @Test func aSilentHostIsTriedOnceWhenFailingFast() async throws {
        let transport = ScriptedTransport { _, _ throws(DropboxError) in throw Self.silent }
        let client = makeClient(transport)
        let unreachable = TransportError(kind: .unreachable, message: "no reply began", silent: true)
        await #expect(throws: DropboxError.transport(unreachable)) {
            try await FailFast.$enabled.withValue(true) { _ = try await client.getSpaceUsage() }
        }
        #expect(transport.requests.count == 1)
    }

    @Test func withoutFailingFastTheSilentHostIsRetried() async throws {
        let transport = ScriptedTransport { _, _ throws(DropboxError) in throw Self.silent }
        let client = makeClient(transport)
        await #expect(throws: Self.silent) { _ = try await client.getSpaceUsage() }
        #expect(transport.requests.count == RetryPolicy().maxAttempts)
    }

    @Test func aFailureAfterAnAnswerIsRetriedEvenWhenFailingFast() async throws {
        let transport = ScriptedTransport { _, index throws(DropboxError) in
            if index == 0 { throw Self.midway }
            return .json(#"{"used":1,"allocation":{".tag":"individual","allocated":10}}"#)
        }
        let client = makeClient(transport)
        let usage = try await FailFast.$enabled.withValue(true) { try await client.getSpaceUsage() }
        #expect(usage.used == 1)
        #expect(transport.requests.count == 2)
    }

    @Test(arguments: [
        (TransportError(kind: .couldNotConnect, message: "refused"), true),
        (TransportError(kind: .timeout, message: "connect timeout", silent: true), true),
        (TransportError(kind: .tls, message: "certificate", silent: true), true),
        (TransportError(kind: .timeout, message: "slow body", silent: false), false),
        (TransportError(kind: .connectionLost, message: "reset", silent: true), false),
        (TransportError(kind: .cancelled, message: "cancelled", silent: true), false),
    ])
    func whichFailuresMeanUnreachable(failure: TransportError, unreachable: Bool) {
        #expect(failure.meansUnreachable == unreachable)
    }
}
