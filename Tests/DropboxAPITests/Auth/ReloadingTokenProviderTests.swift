// A token source that changes while mounted is read again (ReloadingTokenProvider.swift): at most
// once per check interval before a token is handed out, and at once after a rejected token the
// provider in use cannot renew.

import Log
import Synchronization
import Testing

@testable import DropboxAPI

@Suite struct ReloadingTokenProviderTests {
    final class Source: Sendable {
        let state = Mutex<(version: String?, token: String, loads: Int)>(("v1", "t1", 0))
        let clock = Mutex<ContinuousClock.Instant>(.now)

        /// What `accept` answers for a token (default: every token is accepted), and how often it was asked.
        let verdicts = Mutex<(answers: [String: ReloadingTokenProvider.Acceptance], asked: Int)>(([:], 0))

        func provider(checkEvery: Duration = .seconds(1)) -> ReloadingTokenProvider {
            ReloadingTokenProvider(
                initial: StaticTokenProvider(token: "t1"), source: "the test file", checkEvery: checkEvery,
                now: { self.clock.withLock { $0 } },
                version: { self.state.withLock { $0.version } },
                load: {
                    self.state.withLock { s in
                        s.loads += 1
                        return StaticTokenProvider(token: s.token)
                    }
                },
                accept: { provider in
                    let token = (try? await provider.accessToken()) ?? ""
                    return self.verdicts.withLock { v in
                        v.asked += 1
                        return v.answers[token] ?? .accepted
                    }
                })
        }

        func replace(version: String?, token: String) { state.withLock { $0.version = version; $0.token = token } }
        func advance(_ d: Duration) { clock.withLock { $0 += d } }
        var loads: Int { state.withLock { $0.loads } }
    }

    @Test func aChangedSourceIsUsedAfterTheCheckInterval() async throws {
        let source = Source()
        let tokens = source.provider()
        #expect(try await tokens.accessToken() == "t1")
        source.replace(version: "v2", token: "t2")
        #expect(try await tokens.accessToken() == "t1", "not looked at again within the interval")
        source.advance(.seconds(1))
        #expect(try await tokens.accessToken() == "t2")
        source.advance(.seconds(5))
        #expect(try await tokens.accessToken() == "t2")
        #expect(source.loads == 1, "an unchanged source is not loaded again")
    }

    @Test func aRejectedTokenLooksAtTheSourceAtOnce() async throws {
        let source = Source()
        let tokens = source.provider(checkEvery: .seconds(3600))
        await #expect(throws: DropboxError.authentication(.expiredAccessToken)) {
            _ = try await tokens.refreshAfterRejection(of: "t1")
        }
        source.replace(version: "v2", token: "t2")
        #expect(try await tokens.refreshAfterRejection(of: "t1") == "t2")
        #expect(try await tokens.accessToken() == "t2")
    }

    @Test func anUnreadableSourceKeepsTheTokenInUse() async throws {
        let source = Source()
        let tokens = source.provider()
        source.replace(version: nil, token: "t2")
        source.advance(.seconds(2))
        #expect(try await tokens.accessToken() == "t1")
        #expect(source.loads == 0)
    }

    @Test func anotherAccountsTokenIsRefusedOnceAndTheTokenInUseKept() async throws {
        let source = Source()
        source.verdicts.withLock { $0.answers = ["b1": .refused("they are of another account"), "t3": .unknown] }
        let tokens = source.provider()
        let logged = Mutex<[String]>([])
        let sink = Log.addSink { _, line in logged.withLock { $0.append(line) } }
        defer { Log.removeSink(sink) }
        source.replace(version: "v2", token: "b1")
        source.advance(.seconds(1))
        #expect(try await tokens.accessToken() == "t1", "refused: the token in use stays")
        source.advance(.seconds(1))
        #expect(try await tokens.accessToken() == "t1")
        #expect(source.verdicts.withLock { $0.asked } == 1, "a refused version is not judged again")
        #expect(logged.withLock { $0.filter { $0.contains("they are of another account") } }.count == 1)
        // Dropbox cannot say yet: asked again at the next check, and taken once accepted.
        source.replace(version: "v3", token: "t3")
        source.advance(.seconds(1))
        #expect(try await tokens.accessToken() == "t1")
        source.advance(.seconds(1))
        #expect(try await tokens.accessToken() == "t1")
        #expect(source.verdicts.withLock { $0.asked } == 3, "an unknown verdict is asked again")
        source.verdicts.withLock { $0.answers["t3"] = .accepted }
        source.advance(.seconds(1))
        #expect(try await tokens.accessToken() == "t3")
    }
}
