// Reachability per host and the sign-in's health (Connectivity.swift, SignInHealth.swift): any
// answer proves its host reachable, only a failure that heard nothing marks it unreachable, user
// requests are held back only for the host they need, a refused sign-in is not "offline", and the
// status line says all of it, with the tree's age (SyncProgress.swift). Clocks are injected.

import DropboxAPI
import DropboxTestSupport
import Testing

@testable import DropboxFS

#if canImport(Glibc)
    import Glibc
#endif

extension CoreTests {
    @Suite struct ConnectivityTests {
        static let refused = DropboxError.transport(TransportError(kind: .couldNotConnect, message: "refused"))
        static let silent = DropboxError.transport(TransportError(kind: .timeout, message: "no reply", silent: true))

        struct Setup {
            let fake = InMemoryDropbox()
            let client: FaultInjectingClient<InMemoryDropbox>
            let clock = ManualClock()
            let connectivity: Connectivity
            let user: ConnectivityGate
            let sync: ConnectivityGate

            init(offline: Bool = false) {
                client = FaultInjectingClient(fake)
                connectivity = Connectivity(
                    offline: offline, retryInterval: 10, now: clock.function, wallNow: { 1_800_000_000 })
                user = ConnectivityGate(client: client, connectivity: connectivity, blocksWhileOffline: true)
                sync = ConnectivityGate(client: client, connectivity: connectivity, blocksWhileOffline: false)
                _ = fake.addFile("/a.txt", contents: Array("hello".utf8))
            }
        }

        @Test func aRefusedConnectionMarksOnlyItsHost() async throws {
            let s = Setup()
            s.client.failNext(.getSpaceUsage, with: Self.refused)
            await #expect(throws: Self.refused) { _ = try await s.user.getSpaceUsage() }
            #expect(s.connectivity.isOffline && s.connectivity.unreachableSince(.api) == 1_800_000_000)
            #expect(s.connectivity.unreachableSince(.content) == nil)
            let bytes = try await s.user.download(path: "/a.txt", range: nil).data
            #expect(bytes == Array("hello".utf8), "the content host is asked: it was not found unreachable")
            #expect(s.connectivity.statusFields() == ["unreachable_api=2027-01-15T08:00:00Z"])
        }

        @Test func whileUnreachableUserRequestsFailAtOnceAndOneProbesPerInterval() async throws {
            let s = Setup()
            s.client.failNext(.getMetadata, with: Self.silent)
            await #expect(throws: Self.silent) { _ = try await s.user.getMetadata(path: "/a.txt") }
            let calls = s.client.callCount(.getMetadata)
            for _ in 0..<3 {
                await #expect(throws: DropboxError.self) { _ = try await s.user.getMetadata(path: "/a.txt") }
            }
            #expect(s.client.callCount(.getMetadata) == calls, "held back without asking")
            do {
                _ = try await s.user.getMetadata(path: "/a.txt")
            } catch {
                #expect(FilesystemError(error).errno == ENETUNREACH)
            }
            s.clock.advance(by: 10)
            _ = try await s.user.getMetadata(path: "/a.txt")
            #expect(s.client.callCount(.getMetadata) == calls + 1, "the probe went through")
            #expect(!s.connectivity.isOffline)
        }

        @Test func anErrorAnswerProvesTheHostReachableAndARefusedSignInIsNotOffline() async throws {
            let s = Setup(offline: true)
            #expect(s.connectivity.isOffline)
            s.client.failNext(.listFolderContinue, with: .authentication(.invalidAccessToken))
            await #expect(throws: DropboxError.self) { _ = try await s.sync.listFolderContinue(cursor: "c") }
            #expect(!s.connectivity.isOffline, "a 401 is an answer")
            let problem = try #require(s.connectivity.signIn.problem)
            #expect(problem.since == Int64(time(nil)) || problem.since > 0)
            #expect(s.connectivity.signIn.statusFields().first == "sign_in=refused")
            #expect(FilesystemError(.authentication(.invalidAccessToken)).errno == EACCES)
            _ = try await s.sync.listFolder(ListFolderArg(path: ""))
            #expect(s.connectivity.signIn.problem == nil, "a success clears the refusal")
            #expect(s.connectivity.signIn.statusFields().isEmpty)
        }

        @Test func aHostThatAnswersAgainLetsTheOthersBeProbedAtOnce() async throws {
            let s = Setup(offline: true)
            await #expect(throws: DropboxError.self) { _ = try await s.user.download(path: "/a.txt", range: nil) }
            #expect(s.client.callCount(.download) == 0, "held back: the mount started offline")
            #expect(s.connectivity.unreachableSince(.notify) == nil, "left to the watcher's longpoll")
            _ = try await s.sync.listFolder(ListFolderArg(path: ""))
            #expect(!s.connectivity.isOffline)
            _ = try await s.user.download(path: "/a.txt", range: nil)
            #expect(s.client.callCount(.download) == 1, "probed at once, without waiting out the interval")
            #expect(s.connectivity.unreachableSince(.content) == nil)
        }

        @Test func failuresAfterAnAnswerSayNothingAboutReachability() async throws {
            let s = Setup()
            let midway: [DropboxError] = [
                .transport(TransportError(kind: .timeout, message: "slow body", silent: false)),
                .transport(TransportError(kind: .connectionLost, message: "reset")),
                .serverError(status: 503),
            ]
            for error in midway {
                s.client.failNext(.download, with: error)
                await #expect(throws: error) { _ = try await s.user.download(path: "/a.txt", range: nil) }
                #expect(s.connectivity.unreachableSince(.content) == nil, "\(error)")
            }
        }

        @Test func theNotifyHostAloneDoesNotTakeTheMountOffline() async throws {
            let s = Setup()
            s.client.failNext(.listFolderLongpoll, with: Self.refused)
            await #expect(throws: Self.refused) {
                _ = try await s.sync.listFolderLongpoll(cursor: "c", timeoutSeconds: 30)
            }
            #expect(s.connectivity.unreachableSince(.notify) != nil)
            #expect(!s.connectivity.isOffline && s.connectivity.anyUnreachable)
            _ = try await s.user.listFolder(ListFolderArg(path: ""))
            _ = try await s.user.download(path: "/a.txt", range: nil)
            #expect(s.connectivity.unreachableSince(.notify) != nil, "only an answer from notify clears it")
        }

        @Test func userRequestsFailFastButTheSyncClientRetries() async throws {
            let s = Setup()
            let seen = Locked<[Bool]>([])
            let probe = ProbeClient(seen: seen)
            let user = ConnectivityGate(client: probe, connectivity: s.connectivity, blocksWhileOffline: true)
            let sync = ConnectivityGate(client: probe, connectivity: s.connectivity, blocksWhileOffline: false)
            _ = try await user.getSpaceUsage()
            _ = try await sync.getSpaceUsage()
            #expect(seen.value == [true, false])
        }

        @Test(arguments: [
            (TransportError(kind: .timeout, message: "silent", silent: true), ENETUNREACH),
            (TransportError(kind: .unreachable, message: "silent", silent: true), ENETUNREACH),
            (TransportError(kind: .couldNotConnect, message: "refused"), ENETUNREACH),
            (TransportError(kind: .timeout, message: "slow", silent: false), EIO),
            (TransportError(kind: .connectionLost, message: "reset"), EIO),
        ])
        func silentFailuresAreUnreachableOthersAreIO(failure: TransportError, errno: Int32) {
            #expect(FilesystemError(.transport(failure)).errno == errno)
        }

        @Test func theStatusShowsTheTreesAgeAndStaleness() {
            var progress = SyncProgress()
            progress.current(at: 1_000)
            var line = progress.summary(entriesInTree: 1, now: 0, wall: 1_010, staleAfter: 300)
            #expect(line.contains("as_of=1970-01-01T00:16:40Z"))
            #expect(!line.contains("behind_since") && !line.contains("stale="))
            progress.behind(at: 1_100, reason: "Dropbox rejected the access token")
            progress.behind(at: 1_200, reason: "the Dropbox access token has expired")
            line = progress.summary(entriesInTree: 1, now: 0, wall: 1_250, staleAfter: 300)
            #expect(line.contains("behind_since=1970-01-01T00:18:20Z"), "since the first failure")
            #expect(line.contains("behind_error=the_Dropbox_access_token_has_expired"))
            #expect(!line.contains("stale="), "250 s behind is within the bound")
            line = progress.summary(entriesInTree: 1, now: 0, wall: 1_301, staleAfter: 300)
            #expect(line.contains("stale=1"))
            progress.current(at: 1_400)
            line = progress.summary(entriesInTree: 1, now: 0, wall: 1_400, staleAfter: 300)
            #expect(!line.contains("stale=") && !line.contains("behind_since") && line.contains("as_of="))
        }
    }
}

/// Records whether each call ran failing fast.
private struct ProbeClient: DropboxClient {
    let seen: CoreTests.Locked<[Bool]>

    private func record() { seen.value = seen.value + [FailFast.enabled] }

    func listFolder(_ arg: ListFolderArg) async throws(DropboxError) -> ListFolderResult { throw .unexpectedStatus(0) }
    func listFolderContinue(cursor: String) async throws(DropboxError) -> ListFolderResult {
        throw .unexpectedStatus(0)
    }
    func listFolderAll(_ arg: ListFolderArg, each: (ListFolderResult) -> Bool) async throws(DropboxError) -> String? {
        throw .unexpectedStatus(0)
    }
    func listFolderGetLatestCursor(_ arg: ListFolderArg) async throws(DropboxError) -> String {
        throw .unexpectedStatus(0)
    }
    func listFolderLongpoll(cursor: String, timeoutSeconds: Int) async throws(DropboxError) -> LongpollResult {
        throw .unexpectedStatus(0)
    }
    func getMetadata(path: String) async throws(DropboxError) -> Metadata { throw .unexpectedStatus(0) }
    func download(path: String, range: ByteRange?) async throws(DropboxError) -> DownloadResult {
        throw .unexpectedStatus(0)
    }
    func export(path: String) async throws(DropboxError) -> ExportResult { throw .unexpectedStatus(0) }
    func getThumbnailBatch(_ entries: [ThumbnailArg]) async throws(DropboxError)
        -> [Result<[UInt8], ThumbnailFailure>]
    {
        throw .unexpectedStatus(0)
    }
    func listRevisions(_ arg: ListRevisionsArg) async throws(DropboxError) -> ListRevisionsResult {
        throw .unexpectedStatus(0)
    }
    func getCurrentAccount() async throws(DropboxError) -> FullAccount { throw .unexpectedStatus(0) }
    func getSpaceUsage() async throws(DropboxError) -> SpaceUsage {
        record()
        return SpaceUsage(used: 0, allocation: .individual(allocated: 1))
    }
}
