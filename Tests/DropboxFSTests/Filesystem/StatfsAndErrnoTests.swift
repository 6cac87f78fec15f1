// statfs from users/get_space_usage (individual and team allocations, cached for spaceUsageTTL,
// the last answer kept when Dropbox fails), and the errno table with the DropboxError mapping.

import DropboxAPI
import DropboxTestSupport
import Synchronization
import Testing

@testable import DropboxFS

#if canImport(Glibc)
    import Glibc
#endif

extension CoreTests {
    @Suite struct StatfsTests {
        @Test func individualAllocationMapsToBlocks() async throws {
            let fake = InMemoryDropbox(allocation: .individual(allocated: 10_000_000_000))
            fake.addFile("/a", size: 1_000_000)
            fake.addFile("/b/c", size: 4097)
            let fs = Filesystem(client: fake, options: options())
            _ = try await walk(fs)
            let stats = try await fs.statistics()
            #expect(stats.blockSize == 4096)
            #expect(stats.totalBlocks == 10_000_000_000 / 4096)
            #expect(stats.freeBlocks == (10_000_000_000 - 1_004_097) / 4096)
            #expect(stats.maxNameLength == 255)
            #expect(stats.files == 4, "root, a, b, b/c")
        }

        @Test func teamAllocationWithoutAUserLimitUsesTheTeamNumbers() async throws {
            let fake = InMemoryDropbox(
                allocation: .team(used: 27_182_818_284, allocated: 100_000_000_000, userLimit: 0))
            fake.addFile("/a", size: 5_000)
            let fs = Filesystem(client: fake, options: options())
            let stats = try await fs.statistics()
            #expect(stats.totalBlocks == 100_000_000_000 / 4096)
            #expect(stats.freeBlocks == (100_000_000_000 - 27_182_818_284) / 4096)
        }

        @Test func teamAllocationWithAUserLimitUsesTheUsersShare() async throws {
            let fake = InMemoryDropbox(
                allocation: .team(used: 27_182_818_284, allocated: 100_000_000_000, userLimit: 8_000_000))
            fake.addFile("/a", size: 5_000_000)
            let fs = Filesystem(client: fake, options: options())
            let stats = try await fs.statistics()
            #expect(stats.totalBlocks == 8_000_000 / 4096)
            #expect(stats.freeBlocks == 3_000_000 / 4096)
        }

        @Test func overQuotaAndUnknownAllocationsReportNoFreeSpace() async throws {
            let full = InMemoryDropbox(allocation: .individual(allocated: 1_000))
            full.addFile("/big", size: 50_000)
            let stats = try await Filesystem(client: full, options: options()).statistics()
            #expect(stats.freeBlocks == 0 && stats.totalBlocks == 0)

            let odd = InMemoryDropbox(allocation: .other("mystery"))
            let oddStats = try await Filesystem(client: odd, options: options()).statistics()
            #expect(oddStats.totalBlocks == 0 && oddStats.freeBlocks == 0 && oddStats.blockSize == 4096)
        }

        @Test func answersAreCachedForTheTTLThenRefreshedInTheBackground() async throws {
            let fake = InMemoryDropbox(allocation: .individual(allocated: 1 << 30))
            let clock = ManualClock()
            let fs = Filesystem(client: fake, options: options(spaceUsageTTL: 30, clock: clock))
            let first = try await fs.statistics()
            #expect(fake.callCount(.getSpaceUsage) == 1)
            fake.addFile("/grown", size: 1 << 20)
            clock.advance(by: 29)
            #expect(try await fs.statistics() == first)
            #expect(fake.callCount(.getSpaceUsage) == 1)
            clock.advance(by: 2)
            #expect(try await fs.statistics() == first, "an old answer is given at once")
            try await CoreTests.waitUntil("the background refresh") { fake.callCount(.getSpaceUsage) == 2 }
            try await CoreTests.waitUntil("the refreshed answer") {
                try await fs.statistics().freeBlocks == first.freeBlocks - 256
            }
            #expect(fake.callCount(.getSpaceUsage) == 2)
        }

        @Test func aSlowDropboxNeverHoldsDfOnceAnAnswerIsKnown() async throws {
            let fake = InMemoryDropbox(allocation: .individual(allocated: 1 << 30))
            let clock = ManualClock()
            let fs = Filesystem(client: fake, options: options(spaceUsageTTL: 30, clock: clock))
            let first = try await fs.statistics()
            fake.latency = .seconds(3600)
            clock.advance(by: 60)
            let answered = Mutex(0)
            let dfs = Task {
                for _ in 0..<5 {
                    _ = try await fs.statistics()
                    answered.withLock { $0 += 1 }
                }
                return try await fs.statistics()
            }
            // Each would wait an hour for Dropbox if it asked in the foreground.
            try await CoreTests.waitUntil("five df answered", timeout: .seconds(20)) { answered.withLock { $0 } == 5 }
            #expect(try await dfs.value == first)
            // The fake counts a call when it starts or when it ends (its latency runs first): one
            // request at most beyond the first, still under way.
            #expect(fake.callCount(.getSpaceUsage) <= 2, "one background request, not one per df")
            let refreshing = fs.spaceUsageRefreshing.load(ordering: .acquiring)
            #expect(refreshing, "the refresh is still waiting for Dropbox")
        }

        @Test func aFailureFallsBackToTheLastAnswer() async throws {
            let fake = InMemoryDropbox(allocation: .individual(allocated: 1 << 30))
            let client = FaultInjectingClient(fake)
            let clock = ManualClock()
            let fs = Filesystem(client: client, options: options(spaceUsageTTL: 30, clock: clock))

            client.failNext(.getSpaceUsage, with: .transport(TransportError(kind: .timeout, message: "slow")))
            let none = try await fs.statistics()
            #expect(none.totalBlocks == 0 && none.freeBlocks == 0 && none.maxNameLength == 255, "no answer yet: zeros")

            let good = try await fs.statistics()
            #expect(good.totalBlocks == (1 << 30) / 4096)
            clock.advance(by: 31)
            client.failNext(.getSpaceUsage, with: .serverError(status: 503))
            #expect(try await fs.statistics() == good)
            try await CoreTests.waitUntil("the failed refresh") { client.callCount(.getSpaceUsage) == 3 && !fs.spaceUsageRefreshing.load(ordering: .acquiring) }
            client.failNext(.getSpaceUsage, with: .authentication(.expiredAccessToken))
            #expect(try await fs.statistics() == good)
            try await CoreTests.waitUntil("a failure is not cached: asked again") { client.callCount(.getSpaceUsage) == 4 && !fs.spaceUsageRefreshing.load(ordering: .acquiring) }
            #expect(try await fs.statistics() == good)
            try await CoreTests.waitUntil("asked again") { client.callCount(.getSpaceUsage) == 5 && !fs.spaceUsageRefreshing.load(ordering: .acquiring) }
            #expect(try await fs.statistics() == good)
            #expect(client.callCount(.getSpaceUsage) == 5, "the new answer is cached again")
        }

        @Test func offlineItAnswersAtOnceAndTriesAgainAfterTheRetryInterval() async throws {
            let fake = InMemoryDropbox(allocation: .individual(allocated: 1 << 30))
            let client = FaultInjectingClient(fake)
            let clock = ManualClock()
            let fs = Filesystem(
                client: client, options: options(spaceUsageTTL: 0, clock: clock),
                connectivity: Connectivity(retryInterval: 10, now: clock.function))
            let good = try await fs.statistics()
            client.failNext(.getSpaceUsage, with: .transport(TransportError(kind: .couldNotConnect, message: "refused")))
            #expect(try await fs.statistics() == good)
            try await CoreTests.waitUntil("offline after the refresh failed") { fs.connectivity.isOffline }
            #expect(fs.syncStatus().contains("offline_since="))
            try await CoreTests.waitUntil("the refresh ended") { !fs.spaceUsageRefreshing.load(ordering: .acquiring) }
            let calls = client.callCount(.getSpaceUsage)
            #expect(try await fs.statistics() == good, "offline: the last answer, without asking")
            try await CoreTests.waitUntil("the refresh ended") { !fs.spaceUsageRefreshing.load(ordering: .acquiring) }
            #expect(client.callCount(.getSpaceUsage) == calls)
            clock.advance(by: 10)
            #expect(try await fs.statistics() == good, "one request goes through as the probe, and succeeds")
            try await CoreTests.waitUntil("back online") { !fs.connectivity.isOffline }
            #expect(client.callCount(.getSpaceUsage) == calls + 1)
        }
    }

    @Suite struct ErrnoTableTests {
        @Test(arguments: [
            (FilesystemError.notFound, ENOENT),
            (.nameTooLong, ENAMETOOLONG),
            (.notADirectory, ENOTDIR),
            (.isADirectory, EISDIR),
            (.readOnly, EROFS),
            (.stale, ESTALE),
            (.badHandle, EBADF),
            (.notSupported, EOPNOTSUPP),
            (.noAttribute, ENODATA),
            (.bufferTooSmall, ERANGE),
            (.notDownloadable, EACCES),
            (.accessDenied(.authentication(.expiredAccessToken)), EACCES),
            (.remote(.transport(TransportError(kind: .timeout, message: "timed out"))), EIO),
            (.integrity(.contentHashMismatch(file: "/a.txt")), EIO),
            (.integrity(.shortDownload(file: "/a.txt")), EIO),
            (.local(.diskCache(operation: "pread", errno: EIO)), EIO),
            (.local(.evicted(file: "/a.txt")), EIO),
            (.interrupted, EINTR),
            (.offline, ENETUNREACH),
            (.unmounting, ENOTCONN),
        ])
        func everyCaseHasItsErrno(error: FilesystemError, errno: Int32) {
            #expect(error.errno == errno)
        }

        @Test(arguments: [
            (DropboxError.lookup(.notFound), FilesystemError.notFound),
            (.lookup(.notFolder), .notADirectory),
            (.lookup(.notFile), .isADirectory),
            (.unsupportedFile, .notDownloadable),
            (.transport(TransportError(kind: .cancelled, message: "request cancelled")), .interrupted),
        ])
        func dropboxAnswersMapToTheirCases(dropbox: DropboxError, expected: FilesystemError) {
            #expect(FilesystemError(dropbox) == expected)
        }

        @Test(arguments: [
            (DropboxError.lookup(.notFound), ENOENT),
            (.lookup(.notFolder), ENOTDIR),
            (.lookup(.notFile), EISDIR),
            (.unsupportedFile, EACCES),
            (.authentication(.expiredAccessToken), EACCES),
            (.authentication(.invalidAccessToken), EACCES),
            (.authentication(.missingScope("files.content.read")), EACCES),
            (.authentication(.userSuspended), EACCES),
            (.authentication(.noCredentials("revoked")), EACCES),
            (.accessDenied(tag: "no_permission"), EACCES),
            (.transport(TransportError(kind: .timeout, message: "timed out")), EIO),
            (.transport(TransportError(kind: .couldNotConnect, message: "refused")), ENETUNREACH),
            (.transport(TransportError(kind: .offline, message: "offline")), ENETUNREACH),
            (.transport(TransportError(kind: .connectionLost, message: "reset")), EIO),
            (.transport(TransportError(kind: .tls, message: "bad certificate")), EIO),
            (.serverError(status: 500), EIO),
            (.serverError(status: 503), EIO),
            (.unexpectedStatus(418), EIO),
            (.malformedResponse("not JSON"), EIO),
            (.rateLimited(retryAfter: 300), EIO),
            (.cursorReset, EIO),
            (.routeError(summary: "other/.."), EIO),
            (.badRequest(message: "bad"), EIO),
        ])
        func dropboxErrorsSurfaceAsErrnos(dropbox: DropboxError, errno: Int32) {
            #expect(FilesystemError(dropbox).errno == errno, "\(dropbox)")
        }

        @Test func failuresKeepTheirCauseAsAValue() {
            let scope = DropboxError.authentication(.missingScope("files.content.read"))
            #expect(FilesystemError(scope) == .accessDenied(scope))
            #expect(FilesystemError(scope).description.contains("files.content.read"))
            #expect(FilesystemError(.serverError(status: 502)) == .remote(.serverError(status: 502)))
            #expect(FilesystemError(.serverError(status: 502)).description.contains("502"))
        }

        @Test(arguments: [
            (DropboxError.lookup(.notFound), FilesystemError.stale),
            (.rangeNotSatisfiable, .stale),
            (.serverError(status: 503), .remote(.serverError(status: 503))),
            (.transport(TransportError(kind: .cancelled, message: "request cancelled")), .interrupted),
            (.lookup(.notFile), .isADirectory),
        ])
        func aDownloadOfAGoneRevisionIsAStaleHandle(dropbox: DropboxError, expected: FilesystemError) {
            #expect(FilesystemError.download(dropbox) == expected)
        }

        @Test(arguments: [
            (DropboxError.lookup(.notFound), FilesystemError.notFound),
            (.lookup(.notFile), .notFound),
            (.routeError(summary: "invalid_before_rev/.."), .notFound),
            (.routeError(summary: "before_rev_not_supported/"), .remote(.routeError(summary: "before_rev_not_supported/"))),
            (.serverError(status: 503), .remote(.serverError(status: 503))),
            (.transport(TransportError(kind: .offline, message: "offline")), .offline),
        ])
        func whatTheHistoryViewsCannotFindIsNoSuchEntry(dropbox: DropboxError, expected: FilesystemError) {
            #expect(FilesystemError.history(dropbox) == expected)
        }

        @Test func onlyNotFoundMeansAListedFolderIsGone() {
            #expect(FilesystemError.folderGone(.lookup(.notFound)))
            #expect(!FilesystemError.folderGone(.lookup(.notFolder)))
            #expect(!FilesystemError.folderGone(.serverError(status: 500)))
        }
    }
}
