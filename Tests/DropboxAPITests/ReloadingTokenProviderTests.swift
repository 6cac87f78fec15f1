// A token source that changes while mounted is read again (ReloadingTokenProvider.swift): at most
// once per check interval before a token is handed out, and at once after a rejected token the
// provider in use cannot renew.

import Synchronization
import Testing

@testable import DropboxAPI

@Suite struct ReloadingTokenProviderTests {
    final class Source: Sendable {
        let state = Mutex<(version: String?, token: String, loads: Int)>(("v1", "t1", 0))
        let clock = Mutex<ContinuousClock.Instant>(.now)

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
}
