// The concurrency model test (docs/SEMANTICS.md, "Listings in flight"; docs/TESTING.md): the
// reference model of ReferenceModelTests, but with the interleavings chosen by the seed. Every
// list_folder, continue and get_latest_cursor reply is taken from the in-memory Dropbox at once (its
// snapshot) or when released, and held by a gate until the schedule releases it, in random order
// (some calls are slow: released last), or fails it. Meanwhile the schedule starts users' listings
// and lookups, changes the account (the watcher's change batches are held the same way), resets the
// cursors, and remounts from the tree store. The fill runs in parallel branches that split. After
// every schedule everything is let through, and the mounted tree, and then the stored one, must
// equal the account. No sleeps: the schedule waits for conditions (docs/TESTING.md has the figures).
//
// Some schedules aim at the window an older listing needs to land over a newer one: a user's
// listing held with its reply taken, a change to its folder, a cursor reset, and the listing let go
// only after the refill ended (docs/TESTING.md has how often this catches the bug it guards).
// CI runs a quick slice (one schedule per adversarial mode set, a few more of all modes at once);
// DROPBOXFS_CONCURRENCY_SEEDS=N runs N schedules per mode set with bigger trees and longer
// schedules (DROPBOXFS_CONCURRENCY_SMALL=1 keeps the slice's sizes, DROPBOXFS_CONCURRENCY_SEED_BASE
// picks another set of seeds).
// Which reply is pending at a step depends on the threads, so a seed fixes the schedule's choices
// but not every interleaving; a failure prints the seed and the schedule's log.

import DropboxAPI
import DropboxTestSupport
import Foundation
import Synchronization
import Testing

@testable import DropboxFS

extension CoreTests {
    @Suite struct ConcurrencyModelTests {
        struct Scenario: Sendable, CustomTestStringConvertible {
            var seed: UInt64
            var modes: AdversarialModes
            var entries: Int
            var steps: Int
            var parallelism: Int
            var pageLimit: UInt32

            var testDescription: String {
                "seed \(seed) modes [\(modes)] \(entries) entries \(steps) steps parallelism \(parallelism) pages of \(pageLimit)"
            }
        }

        static let longSeeds = Int(ProcessInfo.processInfo.environment["DROPBOXFS_CONCURRENCY_SEEDS"] ?? "") ?? 0
        /// DROPBOXFS_CONCURRENCY_SEED_BASE moves every seed (another set of schedules, same shapes).
        static let seedBase = UInt64(ProcessInfo.processInfo.environment["DROPBOXFS_CONCURRENCY_SEED_BASE"] ?? "") ?? 5000
        /// DROPBOXFS_CONCURRENCY_SMALL=1 keeps the quick slice's sizes (60 entries, 120 steps) in a
        /// long run: many cheap schedules rather than few big ones.
        static let smallSchedules = ProcessInfo.processInfo.environment["DROPBOXFS_CONCURRENCY_SMALL"] == "1"

        static let scenarios: [Scenario] = {
            var out: [Scenario] = []
            var n = 0
            for listed in ReferenceModelTests.modeSets {
                let modes = listed
                let seeds = longSeeds > 0 ? longSeeds : (modes == .all ? 3 : 1)
                for _ in 0..<seeds {
                    n += 1
                    out.append(
                        Scenario(
                            seed: seedBase + UInt64(n), modes: modes,
                            entries: longSeeds > 0 && !smallSchedules ? 300 + (n * 7919) % 2700 : 60,
                            steps: longSeeds > 0 && !smallSchedules ? 600 : 120, parallelism: n % 3 == 0 ? 1 : 4,
                            pageLimit: [3, 5, 9][n % 3]))
                }
            }
            return out
        }()

        /// Holds every listing and cursor reply (taken from the fake when the call arrives) until
        /// the schedule releases or fails it; a held call whose task is cancelled ends at once.
        final class ScheduleGate: ForwardingClient, Sendable {
            private struct State {
                var pending: [UInt64: CheckedContinuation<DropboxError?, Never>] = [:]
                /// Whether each pending call is a listing's (which may be failed), not a change batch's.
                var failable: [UInt64: Bool] = [:]
                var next: UInt64 = 0
                /// Calls entered and not yet returned (held ones included).
                var inFlight = 0
                /// The next listing of this folder by itself takes its reply at once and is slow
                /// (`aim`); set back to nil once that listing is held.
                var aimed: String?
                var aimedHeld = false
                /// Held calls released only by `releaseLate` (or `openAll`): the aimed listing.
                var late: Set<UInt64> = []
                /// The lowercased path of each held listing of a folder by itself.
                var heldListings: [UInt64: String] = [:]
                var open = false
                /// Cursors of listings with more pages: their continue is a listing's page.
                var listingCursors: Set<String> = []
                /// Decides, per call, whether its snapshot is taken when it arrives or when released,
                /// and whether it is slow.
                var random: SplitMix
                /// Held calls of a slow server: released only when no other call is held, or now and
                /// then. They make the windows a race needs (a slow cursor, a slow page).
                var slow: Set<UInt64> = []
            }

            /// Set in the task of the user whose listing is aimed at: only that user's listing
            /// (and no listing of the fill's of the same folder) takes the aim.
            @TaskLocal static var aimedCaller = false

            let base: InMemoryDropbox
            var forwardee: any DropboxClient { base }
            private let state: Mutex<State>

            init(_ base: InMemoryDropbox, seed: UInt64) {
                self.base = base
                self.state = Mutex(State(random: SplitMix(seed: seed)))
            }

            /// Makes the next listing by itself of the folder at `listingPath` (an id, or a path)
            /// take its reply when it arrives and be slow (released last): the listing a race
            /// needs to land late with an old snapshot. nil: no listing is aimed at any more.
            func aim(_ listingPath: String?) {
                state.withLock { s in
                    s.aimed = listingPath?.lowercased()
                    if listingPath != nil { s.aimedHeld = false }
                }
            }

            /// Whether the aimed listing is held (its reply taken).
            var aimedHeld: Bool { state.withLock { $0.aimedHeld } }

            /// Whether a listing of the folder at `listingPath` by itself is held (a user's request
            /// that joined a listing already running waits for that one).
            func holdsListing(of listingPath: String) -> Bool {
                state.withLock { s in s.heldListings.values.contains(listingPath.lowercased()) }
            }

            /// Whether the next call's reply is taken from the fake before it is held (a server that
            /// answers at once, slow to deliver) rather than when it is released (a slow server).
            private func snapshotEarly() -> Bool { state.withLock { $0.random.next() % 2 == 0 } }

            var pendingCount: Int { state.withLock { $0.pending.count } }
            /// Whether a call is on its way to the gate (entered, not held yet).
            var arriving: Bool { state.withLock { $0.inFlight > $0.pending.count } }

            /// Lets every held call go, and every later one pass.
            func openAll() {
                let waiters = state.withLock { s -> [CheckedContinuation<DropboxError?, Never>] in
                    s.open = true
                    defer {
                        s.pending = [:]
                        s.slow = []
                        s.late = []
                        s.heldListings = [:]
                    }
                    return Array(s.pending.values)
                }
                for waiter in waiters { waiter.resume(returning: nil) }
            }

            /// Whether a call waits for `releaseLate`.
            var holdsLate: Bool { state.withLock { !$0.late.isEmpty } }

            /// Lets every held call go but the late ones, and every later one pass.
            func openAllButLate() {
                let waiters = state.withLock { s -> [CheckedContinuation<DropboxError?, Never>] in
                    s.open = true
                    let ids = s.pending.keys.filter { !s.late.contains($0) }
                    return ids.compactMap { id in
                        s.slow.remove(id)
                        s.failable[id] = nil
                        s.heldListings[id] = nil
                        return s.pending.removeValue(forKey: id)
                    }
                }
                for waiter in waiters { waiter.resume(returning: nil) }
            }

            /// Lets the calls held for late release go.
            func releaseLate() {
                let waiters = state.withLock { s in
                    defer { s.late = [] }
                    return s.late.compactMap { id -> CheckedContinuation<DropboxError?, Never>? in
                        s.slow.remove(id)
                        s.failable[id] = nil
                        s.heldListings[id] = nil
                        return s.pending.removeValue(forKey: id)
                    }
                }
                for waiter in waiters { waiter.resume(returning: nil) }
            }

            /// Holds calls again (after a remount).
            func close() { state.withLock { $0.open = false } }

            /// Releases one held call picked by `random`, failing it (a listing's only) when `fail`.
            /// Returns what it did.
            func releaseOne(using random: inout SplitMix, fail: Bool) -> String? {
                let (all, slow) = state.withLock { s in (s.pending.keys.filter { !s.late.contains($0) }.sorted(), s.slow) }
                let quick = all.filter { !slow.contains($0) }
                let ids = quick.isEmpty || Int.random(in: 0..<8, using: &random) == 0 ? all : quick
                guard !ids.isEmpty else { return nil }
                let id = ids[Int.random(in: 0..<ids.count, using: &random)]
                let (waiter, failable) = state.withLock { s in
                    s.slow.remove(id)
                    s.heldListings[id] = nil
                    return (s.pending.removeValue(forKey: id), s.failable.removeValue(forKey: id) ?? false)
                }
                guard let waiter else { return nil }
                let failure: DropboxError? = fail && failable ? .serverError(status: 500) : nil
                waiter.resume(returning: failure)
                return failure == nil ? "release" : "fail"
            }

            /// `slowOdds`: one call in that many is slow.
            private func gate(
                failable: Bool, slowOdds: UInt64 = 5, aimed: Bool = false, listing: String? = nil
            ) async throws(DropboxError) {
                let id = state.withLock { s in
                    s.next += 1
                    return s.next
                }
                let cancelled = DropboxError.transport(TransportError(kind: .cancelled, message: "cancelled"))
                let failure = await withTaskCancellationHandler {
                    await withCheckedContinuation { (continuation: CheckedContinuation<DropboxError?, Never>) in
                        let now = state.withLock { s -> DropboxError?? in
                            if s.open { return .some(nil) }
                            if Task.isCancelled { return .some(cancelled) }
                            s.pending[id] = continuation
                            s.failable[id] = failable
                            if aimed {
                                s.late.insert(id)
                                s.aimedHeld = true
                            } else if s.random.next() % slowOdds == 0 {
                                s.slow.insert(id)
                            }
                            if let listing { s.heldListings[id] = listing }
                            return nil
                        }
                        if let now { continuation.resume(returning: now) }
                    }
                } onCancel: {
                    let waiter = state.withLock { s in
                        s.failable[id] = nil
                        s.slow.remove(id)
                        s.late.remove(id)
                        s.heldListings[id] = nil
                        return s.pending.removeValue(forKey: id)
                    }
                    waiter?.resume(returning: cancelled)
                }
                if let failure { throw failure }
            }

            private func enter() { state.withLock { $0.inFlight += 1 } }
            private func leave() { state.withLock { $0.inFlight -= 1 } }

            private func note(_ page: ListFolderResult) {
                if page.hasMore { state.withLock { _ = $0.listingCursors.insert(page.cursor) } }
            }

            func listFolder(_ arg: ListFolderArg) async throws(DropboxError) -> ListFolderResult {
                enter()
                defer { leave() }
                // A folder's own listing is slow more often: the older listing that lands late.
                let aimed = state.withLock { s in
                    guard Self.aimedCaller, !arg.recursive, let path = s.aimed, path == arg.path.lowercased() else {
                        return false
                    }
                    s.aimed = nil
                    return true
                }
                let early = aimed || snapshotEarly()
                let odds: UInt64 = arg.recursive ? 5 : 2
                let listing = arg.recursive ? nil : arg.path.lowercased()
                if !early { try await gate(failable: true, slowOdds: odds, listing: listing) }
                let page = try await base.listFolder(arg)
                note(page)
                if early { try await gate(failable: true, slowOdds: odds, aimed: aimed, listing: listing) }
                return page
            }

            func listFolderContinue(cursor: String) async throws(DropboxError) -> ListFolderResult {
                enter()
                defer { leave() }
                let isListing = state.withLock { $0.listingCursors.remove(cursor) != nil }
                // A failed change batch makes the watcher pause a real second: only listings fail.
                let early = snapshotEarly()
                if !early { try await gate(failable: isListing) }
                let page = try await base.listFolderContinue(cursor: cursor)
                if isListing { note(page) }
                if early { try await gate(failable: isListing) }
                return page
            }

            func listFolderGetLatestCursor(_ arg: ListFolderArg) async throws(DropboxError) -> String {
                enter()
                defer { leave() }
                let early = snapshotEarly()
                if !early { try await gate(failable: true, slowOdds: 2) }
                let cursor = try await base.listFolderGetLatestCursor(arg)
                if early { try await gate(failable: true, slowOdds: 2) }
                return cursor
            }
        }

        /// One mount of the schedule: its Filesystem and store.
        struct Mounted {
            var fs: Filesystem
            var store: TreeStore
        }

        static func mount(
            _ client: any DropboxClient, folder: String, scenario: Scenario, startSync: Bool = true
        ) throws -> Mounted {
            let store = try TreeStoreTests.open(folder)
            let stored = store.loadTree(folderTime: CoreTests.folderTime, now: 0)
            var options = CoreTests.options(
                pageLimit: scenario.pageLimit, prefetch: true, watchChanges: true, prefetchWait: 0.01, longpollTimeout: 30,
                fill: FillOptions(parallelism: scenario.parallelism, maxListings: 32, splitAfterPages: 2))
            options.store = store
            options.fillRetryScale = 0.001
            let fs = Filesystem(client: client, options: options, restoring: stored)
            if startSync { fs.startSync() }
            return Mounted(fs: fs, store: store)
        }

        /// Counts the users' tasks that ended.
        final class Ended: Sendable {
            let count = Atomic<Int>(0)
            func add() { count.add(1, ordering: .relaxed) }
            var value: Int { count.load(ordering: .relaxed) }
        }

        /// Whether nothing is expected to reach the gate soon: no user task running, no call on its
        /// way, and the engine idle (no listing, no fill).
        static func quiet(_ fs: Filesystem, _ gate: ScheduleGate, usersRunning: Bool) -> Bool {
            guard !usersRunning, !gate.arriving else { return false }
            return fs.sync.state.withLock { s in
                s.listings.isEmpty && s.recursiveListings.isEmpty && s.fillQueue == nil && s.progress.phase != .filling
            }
        }

        /// Adds a file to `folder` or deletes one of its children, when it is still a folder.
        /// Returns whether it changed something.
        static func change(
            in folder: String, _ fake: InMemoryDropbox, _ mutator: inout ReferenceModelTests.Mutator,
            using random: inout SplitMix, log: inout [String]
        ) async throws -> Bool {
            if !folder.isEmpty {
                guard case .folder = fake.entry(folder) else { return false }
            }
            let children = try await mutator.entries().filter { entry in
                entry.path.hasPrefix(folder + "/") && !entry.path.dropFirst(folder.count + 1).contains("/")
            }
            if let child = children.randomElement(using: &random), Bool.random(using: &random) {
                fake.delete(child.path)
                log.append("delete \(child.path.debugDescription)")
            } else {
                let path = mutator.builder.freshPath(in: folder)
                fake.addFile(path, size: 9)
                log.append("add \(path.debugDescription)")
            }
            return true
        }

        /// A random attached folder of the mounted tree; mostly one not completely listed yet (a
        /// complete one is answered without a listing, so it races with nothing).
        static func randomFolder(_ fs: Filesystem, using random: inout SplitMix) -> UInt32 {
            let (all, unlisted) = fs.tree.read { t in
                let all = t.tree.nodes.indices.filter { t.tree.nodes[$0].attached && t.tree.nodes[$0].kind == .folder }
                return (all, all.filter { !t.tree.isComplete(UInt32($0)) })
            }
            let folders = unlisted.isEmpty || Int.random(in: 0..<5, using: &random) == 0 ? all : unlisted
            return UInt32(folders[Int.random(in: 0..<folders.count, using: &random)])
        }

        @Test(.serialized, arguments: scenarios)
        func theTreeAndTheStoreEqualTheAccountAfterAnyInterleaving(scenario: Scenario) async throws {
            let folder = TreeStoreTests.folder()
            defer { try? FileManager.default.removeItem(atPath: folder) }
            let fake = InMemoryDropbox(adversarial: scenario.modes, adversarialSeed: scenario.seed)
            fake.longpollSecond = .milliseconds(5)
            var mutator = ReferenceModelTests.Mutator(builder: TreeBuilder(fake, seed: scenario.seed, nasty: true))
            mutator.builder.add(entries: scenario.entries)
            let gate = ScheduleGate(fake, seed: scenario.seed)
            var random = SplitMix(seed: scenario.seed &* 7 &+ 1)
            var mounted = try Self.mount(gate, folder: folder, scenario: scenario)
            var users: [Task<Void, Never>] = []
            let ended = Ended()
            var log: [String] = []
            /// The display path of the folder a user listed last: half the changes land in it, so
            /// a change often falls between that listing's snapshot and a newer one of the folder.
            var lastListed: String?

            for step in 0..<scenario.steps {
                let roll = Int.random(in: 0..<100, using: &random)
                switch roll {
                case 0..<62:
                    let fs = mounted.fs
                    let started = users.count
                    try await waitUntil("a reply to release at step \(step)", timeout: .seconds(30)) {
                        gate.pendingCount > 0 || Self.quiet(fs, gate, usersRunning: ended.value < started)
                    }
                    if let what = gate.releaseOne(using: &random, fail: Int.random(in: 0..<10, using: &random) == 0) {
                        log.append(what)
                    }
                case 62..<74:
                    let fs = mounted.fs
                    let target = Self.randomFolder(fs, using: &random)
                    lastListed = fs.tree.read { t in t.tree.path(of: target) }
                    users.append(
                        Task {
                            _ = try? await names(fs, UInt64(target))
                            ended.add()
                        })
                    log.append("ls \(target)")
                case 74..<79:
                    let fs = mounted.fs
                    let live = try await mutator.entries()
                    guard let path = live.randomElement(using: &random)?.path else { break }
                    users.append(
                        Task {
                            _ = try? await resolve(fs, path)
                            ended.add()
                        })
                    log.append("lookup \(path.debugDescription)")
                case 79..<95:
                    if let folder = lastListed, Bool.random(using: &random),
                        try await Self.change(in: folder, fake, &mutator, using: &random, log: &log)
                    {
                        break
                    }
                    try await mutator.mutate(log: &log)
                case 95..<97:
                    // The window a refill opens: a user lists a folder the fill has
                    // not listed yet, the folder changes right after that listing's snapshot, and
                    // then the cursors are reset. The refill takes a cursor after the change and
                    // lists the folder again, so its listing is newer than the user's, and the
                    // change is in no batch after the refill's cursor. The user's listing is let
                    // go only after the fill ended (below the steps), and must not land over the
                    // refill's. Not a folder whose listing is in flight already (the user's
                    // request joins it: no call of its own comes).
                    let fs = mounted.fs
                    let target = Self.randomFolder(fs, using: &random)
                    let (path, listingPath, ref) = fs.tree.read { t in
                        (t.tree.path(of: target), t.tree.listingPath(of: target), t.tree.ref(target))
                    }
                    let listing = fs.sync.state.withLock { $0.listings[ref] != nil }
                    if !listing {
                        lastListed = path
                        gate.aim(listingPath)
                        let answered = Ended()
                        users.append(
                            Task {
                                await ScheduleGate.$aimedCaller.withValue(true) {
                                    _ = try? await names(fs, UInt64(target))
                                }
                                answered.add()
                                ended.add()
                            })
                        log.append("ls \(target) before a reset")
                        // Held with its reply taken, or joined a held listing of the folder; or
                        // answered without a listing of its own (a covering listing completed
                        // the folder), or failed. A request that joined a listing started a moment
                        // before, now waiting for a later page of it, waits for the steps: after
                        // a while the schedule goes on without the aim (this costs the schedule
                        // its aim, never its verdict).
                        do {
                            try await waitUntil("the listing of \(path.debugDescription) reached the server", timeout: .seconds(3)) {
                                gate.aimedHeld || answered.value > 0 || gate.holdsListing(of: listingPath)
                            }
                        } catch {
                            log.append("the aim missed")
                        }
                        gate.aim(nil)
                        _ = try await Self.change(in: path, fake, &mutator, using: &random, log: &log)
                        if ProcessInfo.processInfo.environment["DROPBOXFS_CONCURRENCY_DEBUG"] != nil {
                            print("AIMED \(scenario.seed) step \(step) held=\(gate.aimedHeld) \(fs.syncStatus())")
                        }
                    }
                    fake.resetCursors()
                    log.append("reset")
                default:
                    // Remount from the store: everything in flight is cancelled first.
                    mounted.fs.stop()
                    for task in users { task.cancel() }
                    for task in users { await task.value }
                    mounted.store.close()
                    mounted = try Self.mount(gate, folder: folder, scenario: scenario)
                    log.append("remount")
                }
            }

            if ProcessInfo.processInfo.environment["DROPBOXFS_CONCURRENCY_DEBUG"] != nil {
                let kinds = Dictionary(grouping: log.map { String($0.split(separator: " ").first ?? "") }, by: { $0 }).mapValues(\.count)
                print("SCHEDULE \(scenario.seed): \(kinds.sorted { $0.key < $1.key }) \(mounted.fs.syncStatus())")
            }
            // An aimed listing lands only once the fill that started after its reset has ended:
            // its snapshot is then older than the fill's listing of its folder.
            if gate.holdsLate {
                gate.openAllButLate()
                let fs = mounted.fs
                try await waitUntil("the fill ended before the aimed listing lands: \(fs.syncStatus())") {
                    fs.syncStatus().contains("phase=watching")
                }
                gate.releaseLate()
                log.append("release the aimed listing")
            }
            // Everything is let through; the mount must then follow the account.
            gate.openAll()
            for task in users { await task.value }
            users = []
            let fs = mounted.fs
            try await waitUntil("the fill ended: \(fs.syncStatus())") { fs.syncStatus().contains("phase=watching") }
            try await ChangeWatcherTests.catchUp(fs, fake, round: 1)
            // A cursor reset late in the schedule is noticed only now, and the refill does not
            // clear what complete folders show until it ends: the first canary may have come with
            // the refill's own pages. Once every listing ended, a second canary can come only as
            // a change batch, after every change before it.
            try await waitUntil("every listing ended: \(fs.syncStatus())") {
                Self.quiet(fs, gate, usersRunning: false) && fs.syncStatus().contains("phase=watching")
            }
            try await ChangeWatcherTests.catchUp(fs, fake, round: 2)
            let expected = try await reference(fake)
            let problems = differences(core: try await walk(fs), expected: expected)
            #expect(problems == [], "\(scenario.testDescription): the mounted tree; schedule:\n\(log.joined(separator: "\n"))")
            fs.stop()
            mounted.store.close()
            if !problems.isEmpty { return }

            // The stored tree, served by a new mount before any request of its own.
            let restored = try Self.mount(fake, folder: folder, scenario: scenario, startSync: false)
            defer {
                restored.fs.stop()
                restored.store.close()
            }
            #expect(
                differences(core: try await walk(restored.fs), expected: expected) == [],
                "\(scenario.testDescription): the stored tree; schedule:\n\(log.joined(separator: "\n"))")
        }
    }
}
