// Seeded random reference tests (docs/STYLE.md "Tests"): a random tree with nasty names, random remote
// mutation sequences, and after the watcher caught up, a full walk of the core compared with what
// the in-memory Dropbox holds (names the kernel cannot carry hidden, with everything below them).
// Every scenario runs under an adversarial listing shape of the fake (AdversarialModes: shuffled
// pages, folders after their subtree, irregular and empty pages, repeats, case drift, a folding
// unlike ours, ghost deletions, file <-> folder replacement) or all of them at once, so no test
// depends on the tidy shape a fake would otherwise give. CI runs a quick slice; set
// DROPBOXFS_REFERENCE_SEEDS=N (e.g. 300) for N seeds per mode with bigger trees. A failing seed is
// printed with each difference; replay it by running the test with that seed.

import DropboxAPI
import DropboxTestSupport
import Foundation
import Testing

@testable import DropboxFS

extension CoreTests {
    @Suite struct ReferenceModelTests {
        struct Scenario: Sendable, CustomTestStringConvertible {
            var seed: UInt64
            var prefetch: Bool
            var reportsDeletedChildren: Bool
            var pageLimit: UInt32
            var modes: AdversarialModes
            var entries: Int

            var testDescription: String {
                "seed \(seed) \(prefetch ? "prefetch" : "lazy")\(reportsDeletedChildren ? " deleted-children" : "") pages of \(pageLimit) modes [\(modes)] \(entries) entries"
            }
        }

        /// Every single mode, all of them together, and none.
        static let modeSets: [AdversarialModes] =
            [[], .shuffle, .lateParents, .pages, .repeats, .caseDrift, .fold, .ghostDeletes, .replace, .all]

        /// Seeds per mode set: 1 in CI (plus extra seeds of `.all`), DROPBOXFS_REFERENCE_SEEDS in the long run.
        static let longSeeds = Int(ProcessInfo.processInfo.environment["DROPBOXFS_REFERENCE_SEEDS"] ?? "") ?? 0

        static let scenarios: [Scenario] = {
            let pageLimits: [UInt32] = [3, 7, 50, 2000]
            var out: [Scenario] = []
            var n = 0
            for modes in modeSets {
                let seeds = longSeeds > 0 ? longSeeds : (modes == .all ? 4 : 1)
                for _ in 0..<seeds {
                    n += 1
                    out.append(
                        Scenario(
                            seed: UInt64(1000 + n), prefetch: n % 2 == 0, reportsDeletedChildren: n % 3 == 0,
                            pageLimit: pageLimits[n % 4], modes: modes,
                            entries: longSeeds > 0 ? 300 + (n * 7919) % 2700 : 80))
                }
            }
            return out
        }()

        /// Random remote changes: add files, folders, symlinks and hostile names; modify, delete and
        /// move entries (never a case-only rename: Dropbox does not report those).
        struct Mutator {
            var builder: TreeBuilder
            var fake: InMemoryDropbox { builder.fake }

            /// Every live entry as (display path, is folder), from the fake itself.
            func entries() async throws -> [(path: String, folder: Bool)] {
                var displayOf: [[UInt8]: String] = [[]: ""]
                var out: [(String, Bool)] = []
                for entry in fake.entries {
                    guard let lower = entry.pathLower.map({ Array($0.utf8) }) else { continue }
                    let slash = lower.lastIndex(of: UInt8(ascii: "/")) ?? 0
                    guard let parent = displayOf[Array(lower[..<slash])] else { continue }
                    let path = parent + "/" + entry.name
                    displayOf[lower] = path
                    if case .folder = entry { out.append((path, true)) } else { out.append((path, false)) }
                }
                return out
            }

            mutating func mutate(log: inout [String]) async throws {
                let live = try await entries()
                builder.folders = [""] + live.filter(\.folder).map(\.path)
                let files = live.filter { !$0.folder }.map(\.path)
                switch Int.random(in: 0..<100, using: &builder.random) {
                case 0..<30:
                    builder.addOne()
                    log.append("add")
                case 30..<45 where !files.isEmpty:
                    let path = files.randomElement(using: &builder.random)!
                    let size = Int.random(in: 0...3000, using: &builder.random)
                    fake.modifyFile(path, contents: Array(repeating: UInt8(size % 251), count: size))
                    log.append("modify \(path.debugDescription)")
                case 45..<65 where !live.isEmpty:
                    let path = live.randomElement(using: &builder.random)!.path
                    fake.delete(path)
                    log.append("delete \(path.debugDescription)")
                case 65..<90 where !live.isEmpty:
                    let from = live.randomElement(using: &builder.random)!.path
                    let candidates = builder.folders.filter { $0 != from && !$0.hasPrefix(from + "/") }
                    guard let parent = candidates.randomElement(using: &builder.random) else { return }
                    let to = builder.freshPath(in: parent)
                    fake.move(from: from, to: to)
                    log.append("move \(from.debugDescription) -> \(to.debugDescription)")
                default:
                    let hostile = [".", "..", "nul\u{0}", String(repeating: "h", count: 256)]
                    let name = hostile.randomElement(using: &builder.random)!
                    let parent = builder.folders.randomElement(using: &builder.random)!
                    guard fake.entry(parent + "/" + name) == nil else { return }
                    if Bool.random(using: &builder.random) {
                        fake.addFile(parent + "/" + name + "/inside", size: 1)
                    } else {
                        fake.addFile(parent + "/" + name, size: 2)
                    }
                    log.append("hostile \((parent + "/" + name).debugDescription)")
                }
            }
        }

        /// Serialized: a long run's hundreds of scenarios would otherwise fill their trees at once on
        /// two cores and time out waiting for each other.
        @Test(.serialized, arguments: scenarios)
        func theCoreFollowsRandomRemoteChanges(scenario: Scenario) async throws {
            let fake = InMemoryDropbox(
                reportsDeletedChildren: scenario.reportsDeletedChildren, adversarial: scenario.modes,
                adversarialSeed: scenario.seed)
            fake.longpollSecond = .milliseconds(5)
            var mutator = Mutator(builder: TreeBuilder(fake, seed: scenario.seed, nasty: true))
            mutator.builder.add(entries: scenario.entries)
            let fs = Filesystem(
                client: fake,
                options: options(
                    pageLimit: scenario.pageLimit, prefetch: scenario.prefetch, watchChanges: true, prefetchWait: 0.05,
                    longpollTimeout: 30))
            fs.startSync()
            defer { fs.stop() }
            try await waitUntil("the watcher longpolls") { fake.callCount(.listFolderLongpoll) >= 1 }

            let initial = try await walk(fs)
            let problems = differences(core: initial, expected: try await reference(fake))
            #expect(problems == [], "\(scenario.testDescription): initial tree")
            if !problems.isEmpty { return }

            var log: [String] = []
            for round in 1...4 {
                for _ in 0..<8 { try await mutator.mutate(log: &log) }
                try await ChangeWatcherTests.catchUp(fs, fake, round: round)
                let requests = fake.callCount(.listFolder)
                let core = try await walk(fs)
                let walkListings = fake.callCount(.listFolder) - requests
                let problems = differences(core: core, expected: try await reference(fake))
                #expect(
                    problems == [],
                    "\(scenario.testDescription), round \(round); changes:\n\(log.joined(separator: "\n"))")
                #expect(walkListings == 0, "\(scenario.testDescription), round \(round): the walk needed \(walkListings) listings")
                if !problems.isEmpty { return }
            }
            // The fixed seeds of the quick slice try every kind of change; long runs use any seeds.
            for kind in ["add", "modify", "delete", "move"] where Self.longSeeds == 0 {
                #expect(log.contains { $0.hasPrefix(kind) }, "\(scenario.testDescription) never tried \(kind)")
            }
        }
    }
}
