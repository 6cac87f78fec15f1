// The namespace and shared helpers of the filesystem-core tests (target DropboxFS driven through
// the in-memory Dropbox, no FUSE, no network). Every suite of Filesystem/, Tree/, Sync/ and Store/
// that drives the core is nested in CoreTests, so `swift test --filter CoreTests` selects exactly
// them. Helpers are nested types too, so they never clash, whichever folder their file is in.
//
// Waiting: tests never sleep for a fixed time when a condition can be polled; `waitUntil` polls the
// core every couple of milliseconds and fails with a description after a timeout. The timeout is
// generous because it only matters when something is stuck: when the whole module runs, other
// suites can occupy the (2-thread) task pool for seconds.

import DropboxAPI
import DropboxTestSupport
import Foundation
import Synchronization
import SystemCalls
import Testing

@testable import DropboxFS

@Suite enum CoreTests {}

extension CoreTests {
    /// An injectable monotonic clock for FilesystemOptions.monotonicNow.
    final class ManualClock: Sendable {
        private let value: Mutex<Double>

        init(start: Double = 1_000) { value = Mutex(start) }

        var now: Double { value.withLock { $0 } }
        func advance(by seconds: Double) { value.withLock { $0 += seconds } }
        var function: @Sendable () -> Double { { self.now } }
    }

    /// A value shared with tasks and closures (a Mutex itself cannot be captured).
    final class Locked<Value: Sendable>: Sendable {
        private let storage: Mutex<Value>

        init(_ value: Value) { storage = Mutex(value) }

        var value: Value {
            get { storage.withLock { $0 } }
            set { storage.withLock { $0 = newValue } }
        }
    }

    struct WaitTimedOut: Error, CustomStringConvertible {
        var description: String
    }

    /// Polls `condition` until it holds; throws after `timeout` with `what` in the message.
    static func waitUntil(
        _ what: @autoclosure () -> String, timeout: Duration = .seconds(60),
        _ condition: () async throws -> Bool
    ) async throws {
        let clock = ContinuousClock()
        let deadline = clock.now + timeout
        while true {
            if try await condition() { return }
            if clock.now >= deadline { throw WaitTimedOut(description: "timed out waiting until \(what())") }
            try await Task.sleep(for: .milliseconds(2))
        }
    }

    /// For the child process of an exit test: ends the process with `code` after `seconds`, so a
    /// hang (a thread spinning with the core's lock held stalls every task) fails the test instead
    /// of stalling the whole run. A plain thread, because the task pool may be the thing stuck.
    static func startWatchdog(seconds: Double, code: Int32 = 3) {
        Thread {
            Thread.sleep(forTimeInterval: seconds)
            exit(code)
        }.start()
    }

    static let ownership = Ownership(uid: 4242, gid: 4343)
    static let folderTime: Int64 = 1_234_567_890

    /// Options with fixed ownership and folder time; everything else as given.
    static func options(
        folderListingTTL: Double = .infinity, pageLimit: UInt32 = 2000, spaceUsageTTL: Double = 60,
        prefetch: Bool = false, watchChanges: Bool = false, prefetchWait: Double = 0.5,
        subtreeListingAfter: Double = 2, longpollTimeout: Int = 30, clock: ManualClock? = nil,
        fill: FillOptions = FillOptions(parallelism: 1)
    ) -> FilesystemOptions {
        // The whole-account fill is one chain of pages unless a test asks for the parallel fill
        // (ParallelFillTests): most fill tests script or count that chain's pages.
        FilesystemOptions(
            ownership: ownership, folderTime: folderTime, folderListingTTL: folderListingTTL,
            pageLimit: pageLimit, spaceUsageTTL: spaceUsageTTL, prefetch: prefetch,
            watchChanges: watchChanges, prefetchWait: prefetchWait, fill: fill, subtreeListingAfter: subtreeListingAfter,
            longpollTimeout: longpollTimeout, monotonicNow: clock?.function ?? SystemClock.monotonicSeconds)
    }

    // MARK: Small accessors

    /// Resolves a "/a/b" path with lookups, releasing each lookup again (the kernel does not hold
    /// what this helper finds). Returns the attributes of the last component.
    @discardableResult
    static func resolve(_ fs: Filesystem, _ path: String) async throws -> FileAttributes {
        var attributes = try fs.attributes(of: Filesystem.rootInode)
        for component in path.utf8.split(separator: UInt8(ascii: "/")) {
            let name = String(decoding: component, as: UTF8.self)
            attributes = try await fs.lookup(parent: attributes.inode, name: name)
            fs.forget(attributes.inode, count: 1)
        }
        return attributes
    }

    static func inode(_ fs: Filesystem, _ path: String) async throws -> UInt64 {
        try await resolve(fs, path).inode
    }

    /// The child names of a folder (listed first when needed), "." and ".." left out.
    static func names(_ fs: Filesystem, _ folder: UInt64) async throws -> [String] {
        try await fs.prepareDirectory(folder)
        return try fs.directoryEntries(folder, from: 2).map(\.name)
    }

    static func id(of metadata: Metadata?) -> String? {
        switch metadata {
        case .file(let f): return f.id
        case .folder(let f): return f.id
        default: return nil
        }
    }

    /// The value of one `key=value` field of `syncStatus()`.
    static func statusField(_ fs: Filesystem, _ key: String) -> Int? {
        for part in fs.syncStatus().split(separator: " ") where part.hasPrefix(key + "=") {
            return Int(part.dropFirst(key.count + 1))
        }
        return nil
    }

    /// True once no recursive or lazy listing is running (reads core internals: there is no
    /// public signal for the end of a subtree listing).
    static func listingsIdle(_ fs: Filesystem) -> Bool {
        fs.sync.state.withLock { $0.recursiveListings.isEmpty && $0.listings.isEmpty }
    }

    /// Whether the root folder is completely listed and fresh (asks without waiting).
    static func rootIsComplete(_ fs: Filesystem) throws -> Bool {
        try fs.isDirectoryReady(Filesystem.rootInode)
    }

    /// Whether a name may reach the kernel (the rule NodeName implements, restated independently).
    static func kernelCanCarry(_ name: String) -> Bool {
        let bytes = Array(name.utf8)
        return !bytes.isEmpty && bytes.count <= 255 && bytes != [0x2E] && bytes != [0x2E, 0x2E]
            && !bytes.contains(0x2F) && !bytes.contains(0)
    }
}

// MARK: - Invalidation and log capture

extension CoreTests {
    /// Collects what the core publishes to its invalidation handler.
    final class InvalidationLog: Sendable {
        private let received = Mutex<[Invalidation]>([])

        init(_ fs: Filesystem) {
            fs.setInvalidationHandler { [self] batch in self.received.withLock { $0 += batch } }
        }

        var all: [Invalidation] { received.withLock { $0 } }
        func contains(_ invalidation: Invalidation) -> Bool { received.withLock { $0.contains(invalidation) } }
        func clear() { received.withLock { $0 = [] } }
    }
}

// MARK: - Whole-tree comparison

extension CoreTests {
    /// A path as bytes: Swift String equality would merge NFC and NFD spellings.
    struct BytePath: Hashable, Comparable, CustomStringConvertible {
        var bytes: [UInt8]

        init(_ bytes: [UInt8]) { self.bytes = bytes }

        func appending(_ name: String) -> BytePath { BytePath(bytes + [UInt8(ascii: "/")] + Array(name.utf8)) }

        static func < (a: Self, b: Self) -> Bool { a.bytes.lexicographicallyPrecedes(b.bytes) }

        var description: String {
            String(decoding: bytes, as: UTF8.self).unicodeScalars.map { scalar in
                scalar.isASCII && scalar.value >= 0x20 && scalar.value < 0x7F
                    ? String(scalar) : "\\u{\(String(scalar.value, radix: 16))}"
            }.joined()
        }
    }

    /// What a walk observes of one entry.
    struct Observed: Equatable, CustomStringConvertible {
        var kind: NodeKind
        var size: UInt64
        var mtime: Int64
        var ctime: Int64
        var target: String?

        var description: String { "\(kind) size=\(size) mtime=\(mtime) ctime=\(ctime)\(target.map { " -> \($0)" } ?? "")" }
    }

    /// Every entry of the core's tree by path: opendir/readdir of every folder, and a byte-exact
    /// lookup of every name (checked against the readdir attributes). Like the kernel, the walk
    /// holds the lookup of each folder it still has to enter (until the walk ends) and releases
    /// files at once.
    static func walk(_ fs: Filesystem) async throws -> [BytePath: Observed] {
        var out: [BytePath: Observed] = [:]
        var held: [UInt64] = []
        defer { for inode in held { fs.forget(inode, count: 1) } }
        var stack: [(UInt64, BytePath)] = [(Filesystem.rootInode, BytePath([]))]
        while let (folder, path) = stack.popLast() {
            try await fs.prepareDirectory(folder)
            let entries = try fs.directoryEntries(folder, from: 0)
            #expect(entries.prefix(2).map(\.name) == [".", ".."], "snapshot of \(path)")
            for entry in entries.dropFirst(2) {
                let childPath = path.appending(entry.name)
                let looked = try await fs.lookup(parent: folder, name: entry.name)
                if looked.kind == .folder { held.append(looked.inode) } else { fs.forget(looked.inode, count: 1) }
                #expect(looked == entry.attributes, "lookup vs readdir of \(childPath)")
                var target: String?
                if entry.attributes.kind == .symlink { target = try fs.readlink(entry.attributes.inode) }
                #expect(out[childPath] == nil, "\(childPath) listed twice")
                out[childPath] = Observed(
                    kind: entry.attributes.kind, size: entry.attributes.size, mtime: entry.attributes.mtime,
                    ctime: entry.attributes.ctime, target: target)
                if entry.attributes.kind == .folder { stack.append((entry.attributes.inode, childPath)) }
            }
        }
        return out
    }

    /// Calls list_folder and then continue until has_more is false, straight on a client.
    static func drain(_ client: some DropboxClient, _ arg: ListFolderArg) async throws -> [Metadata] {
        var page = try await client.listFolder(arg)
        var entries = page.entries
        while page.hasMore {
            page = try await client.listFolderContinue(cursor: page.cursor)
            entries += page.entries
        }
        return entries
    }

    /// The reference model: what the in-memory Dropbox holds, as the core should show it (names the
    /// kernel cannot carry hidden together with everything below them). Built from the fake's own
    /// live entries (not from a listing, whose shape an adversarial fake varies), by path_lower,
    /// with display names from each entry's own name.
    static func reference(_ fake: InMemoryDropbox) async throws -> [BytePath: Observed] {
        var pathOf: [[UInt8]: BytePath] = [[]: BytePath([])]
        var out: [BytePath: Observed] = [:]
        for entry in fake.entries {
            guard let lower = entry.pathLower.map({ Array($0.utf8) }) else { continue }
            let slash = lower.lastIndex(of: UInt8(ascii: "/")) ?? 0
            guard let parent = pathOf[Array(lower[..<slash])], kernelCanCarry(entry.name) else { continue }
            let path = parent.appending(entry.name)
            pathOf[lower] = path
            switch entry {
            case .file(let f):
                out[path] = Observed(
                    kind: f.symlinkTarget == nil ? .file : .symlink,
                    size: f.symlinkTarget.map { UInt64($0.utf8.count) } ?? f.size,
                    mtime: f.clientModified.secondsSinceEpoch, ctime: f.serverModified.secondsSinceEpoch,
                    target: f.symlinkTarget)
            case .folder:
                out[path] = Observed(kind: .folder, size: 0, mtime: folderTime, ctime: folderTime, target: nil)
            case .deleted:
                break
            }
        }
        return out
    }

    /// Describes the differences between two trees, empty when they are equal.
    static func differences(core: [BytePath: Observed], expected: [BytePath: Observed]) -> [String] {
        var out: [String] = []
        for path in Set(core.keys).union(expected.keys).sorted() {
            switch (core[path], expected[path]) {
            case (let c?, let e?) where c != e: out.append("\(path): core \(c), Dropbox \(e)")
            case (_?, nil): out.append("\(path): only in the core")
            case (nil, _?): out.append("\(path): missing from the core")
            default: break
            }
        }
        return out
    }
}

// MARK: - Client wrappers

extension CoreTests {
    /// Serves the in-memory Dropbox with some names replaced by ones the fake cannot build (empty,
    /// containing '/', starting with a combining mark ...): an entry named `marker` (and any path
    /// component equal to it) is reported under the replacement name. Markers are lowercase ASCII,
    /// so they read the same in path_lower and path_display.
    final class RenamingClient: ForwardingClient, Sendable {
        let base: InMemoryDropbox
        var forwardee: any DropboxClient { base }
        let renames: [String: String]
        /// Added to every page's count of entries that could not be decoded.
        let undecodablePerPage: Int

        init(_ base: InMemoryDropbox, renames: [String: String], undecodablePerPage: Int = 0) {
            self.base = base
            self.renames = renames
            self.undecodablePerPage = undecodablePerPage
        }

        private func renamePath(_ path: String?, lower: Bool) -> String? {
            guard let path else { return nil }
            let components = path.utf8.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false)
            return components.map { component -> String in
                let text = String(decoding: component, as: UTF8.self)
                guard let renamed = renames[text] else { return text }
                return lower ? renamed.lowercased().precomposedStringWithCanonicalMapping : renamed
            }.joined(separator: "/")
        }

        private func rename(_ entry: Metadata) -> Metadata {
            switch entry {
            case .file(var f):
                f.name = renames[f.name] ?? f.name
                (f.pathLower, f.pathDisplay) = (renamePath(f.pathLower, lower: true), renamePath(f.pathDisplay, lower: false))
                return .file(f)
            case .folder(var f):
                f.name = renames[f.name] ?? f.name
                (f.pathLower, f.pathDisplay) = (renamePath(f.pathLower, lower: true), renamePath(f.pathDisplay, lower: false))
                return .folder(f)
            case .deleted(var d):
                d.name = renames[d.name] ?? d.name
                (d.pathLower, d.pathDisplay) = (renamePath(d.pathLower, lower: true), renamePath(d.pathDisplay, lower: false))
                return .deleted(d)
            }
        }

        private func rename(_ page: ListFolderResult) -> ListFolderResult {
            var page = page
            page.entries = page.entries.map(rename)
            page.undecodableEntries += undecodablePerPage
            return page
        }

        func listFolder(_ arg: ListFolderArg) async throws(DropboxError) -> ListFolderResult {
            rename(try await base.listFolder(arg))
        }
        func listFolderContinue(cursor: String) async throws(DropboxError) -> ListFolderResult {
            rename(try await base.listFolderContinue(cursor: cursor))
        }
        func getMetadata(path: String) async throws(DropboxError) -> Metadata {
            rename(try await base.getMetadata(path: path))
        }
    }

    /// Holds chosen list_folder / continue calls until the test releases them, so a test can force
    /// one interleaving of concurrent listings. A call is named by its listing (the list_folder
    /// path and recursive flag) and its page number (0 = list_folder, 1 = first continue ...). A
    /// call is held before it reaches the fake (`hold`: its snapshot is taken when released) or
    /// after (`holdReply`: the snapshot is taken at once and delivered when released).
    final class GatedClient: ForwardingClient, Sendable {
        struct Listing: Hashable, Sendable {
            var path: String
            var recursive: Bool
        }

        struct Call: Hashable, Sendable {
            var listing: Listing
            var page: Int
        }

        private struct State {
            var cursorOwners: [String: Call] = [:]
            var held: Set<Gate> = []
            var released: Set<Gate> = []
            var arrived: Set<Gate> = []
            var waiting: [Gate: CheckedContinuation<Void, Never>] = [:]
            /// The priorities of the tasks that asked each listing's pages (raw values).
            var priorities: [Listing: Set<UInt8>] = [:]
        }

        let base: InMemoryDropbox
        var forwardee: any DropboxClient { base }
        /// Guards the gates and the cursor -> listing map.
        private let state = Mutex(State())

        init(_ base: InMemoryDropbox) { self.base = base }

        /// A call before it reaches the fake, or its reply.
        struct Gate: Hashable, Sendable {
            var call: Call
            var reply: Bool
        }

        func hold(_ call: Call) { state.withLock { _ = $0.held.insert(Gate(call: call, reply: false)) } }
        func holdReply(_ call: Call) { state.withLock { _ = $0.held.insert(Gate(call: call, reply: true)) } }

        func release(_ call: Call) {
            let waiters = state.withLock { s -> [CheckedContinuation<Void, Never>] in
                [false, true].compactMap { reply in
                    let gate = Gate(call: call, reply: reply)
                    guard s.held.contains(gate) else { return nil }
                    s.released.insert(gate)
                    return s.waiting.removeValue(forKey: gate)
                }
            }
            for waiter in waiters { waiter.resume() }
        }

        /// Whether `call` was asked (for a held reply: whether the fake answered it).
        func hasArrived(_ call: Call) -> Bool {
            state.withLock { s in
                s.held.contains(Gate(call: call, reply: true))
                    ? s.arrived.contains(Gate(call: call, reply: true)) : s.arrived.contains(Gate(call: call, reply: false))
            }
        }

        /// The priorities of the tasks that asked for `listing`'s pages, lowest first.
        func priorities(_ listing: Listing) -> [TaskPriority] {
            state.withLock { $0.priorities[listing] ?? [] }.sorted().map { TaskPriority(rawValue: $0) }
        }

        private func pass(_ call: Call, reply: Bool = false) async {
            let gate = Gate(call: call, reply: reply)
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let goNow = state.withLock { s -> Bool in
                    s.arrived.insert(gate)
                    if !reply { s.priorities[call.listing, default: []].insert(Task.currentPriority.rawValue) }
                    guard s.held.contains(gate), !s.released.contains(gate) else { return true }
                    s.waiting[gate] = continuation
                    return false
                }
                if goNow { continuation.resume() }
            }
        }

        private func remember(_ cursor: String, _ call: Call) { state.withLock { $0.cursorOwners[cursor] = call } }

        func listFolder(_ arg: ListFolderArg) async throws(DropboxError) -> ListFolderResult {
            let call = Call(listing: Listing(path: arg.path, recursive: arg.recursive), page: 0)
            await pass(call)
            let result = try await base.listFolder(arg)
            remember(result.cursor, call)
            await pass(call, reply: true)
            return result
        }

        func listFolderContinue(cursor: String) async throws(DropboxError) -> ListFolderResult {
            let previous = state.withLock { $0.cursorOwners[cursor] }
            let call = previous.map { Call(listing: $0.listing, page: $0.page + 1) }
            if let call { await pass(call) }
            let result = try await base.listFolderContinue(cursor: cursor)
            if let call {
                remember(result.cursor, call)
                await pass(call, reply: true)
            }
            return result
        }

        /// The get_latest_cursor call for `path` (recursive), gated as a listing's page is.
        static func latestCursor(_ path: String = "") -> Call {
            Call(listing: Listing(path: "get_latest_cursor:" + path, recursive: true), page: 0)
        }

        func listFolderGetLatestCursor(_ arg: ListFolderArg) async throws(DropboxError) -> String {
            await pass(Self.latestCursor(arg.path))
            return try await base.listFolderGetLatestCursor(arg)
        }

    }
}

// MARK: - Random trees

extension CoreTests {
    /// Builds random trees in an InMemoryDropbox. Names are drawn from pieces that never start with
    /// a combining mark (the fake splits builder paths on Characters) and never collide
    /// case-insensitively in one folder (the fake's own lookup decides, as Dropbox would).
    struct TreeBuilder {
        static let plainPieces = ["a", "b", "c", "doc", "img", "x", "1", "2", "-", "_", ".txt", ".md"]
        static let nastyPieces = [
            "a", "A", "b", "B", "z", "Z", "0", "9", " ", "  ", ".", "..", "-", "_", "~", "#", "%", "\\", "'", "\"", "\n",
            "\t", "*", "?", ":", "é", "É", "e\u{301}", "E\u{301}", "\u{C5}", "A\u{30A}", "ß", "\u{1E9E}", "σ", "Σ", "ς",
            "\u{130}", "i\u{307}", "\u{212A}", "k", "日本", "😀", "👍🏽", "\u{FEFF}", "\u{200B}", "ǅ", "ǆ", "Ǆ", "ﬁ", ".txt",
            ".JPG", "Ω", "\u{2126}", "ﾊﾟ", "ハ\u{309A}", "한", "\u{1100}\u{1161}\u{11A8}", "\u{7F}", "\r",
        ]

        var fake: InMemoryDropbox
        var random: SplitMix
        var nasty: Bool
        /// Display paths of the folders added so far ("" is the root).
        var folders: [String] = [""]

        init(_ fake: InMemoryDropbox, seed: UInt64, nasty: Bool) {
            self.fake = fake
            self.random = SplitMix(seed: seed)
            self.nasty = nasty
        }

        mutating func name() -> String {
            let pieces = nasty ? Self.nastyPieces : Self.plainPieces
            let count = Int.random(in: 1...(nasty ? 4 : 3), using: &random)
            return (0..<count).map { _ in pieces.randomElement(using: &random)! }.joined()
        }

        /// A path under a random folder that does not exist yet (any case or normalization).
        mutating func freshPath(in folder: String? = nil) -> String {
            let parent = folder ?? folders.randomElement(using: &random)!
            while true {
                let path = parent + "/" + name()
                if fake.entry(path) == nil { return path }
            }
        }

        mutating func add(entries count: Int) {
            for _ in 0..<count { addOne() }
        }

        mutating func addOne() {
            let path = freshPath()
            switch Int.random(in: 0..<100, using: &random) {
            case 0..<25:
                fake.addFolder(path)
                folders.append(path)
            case 25..<30:
                fake.addSymlink(path, target: name())
            case 30..<33:
                fake.addNonDownloadable(path, exportAs: "html", size: UInt64.random(in: 0...100, using: &random))
            default:
                fake.addFile(
                    path, size: UInt64.random(in: 0...5000, using: &random), seed: random.next(),
                    clientModified: DropboxTimestamp(secondsSinceEpoch: modifiedTime()))
            }
        }

        /// Times a nasty tree mixes in: before 1970, around the 32-bit limits, far ahead (the
        /// tree keeps times outside 1970 to 2106 apart from the node, Tree/Node.swift).
        static let nastyTimes: [Int64] = [
            -11_644_473_600, -1, 0, Int64(UInt32.max) - 1, Int64(UInt32.max), Int64(UInt32.max) + 1, 253_402_300_799,
        ]

        /// A file's client_modified: 2001 to 2020, and in a nasty tree one time in ten from
        /// `nastyTimes`. Draws exactly one number either way, so a seed still builds the same tree.
        mutating func modifiedTime() -> Int64 {
            let time = Int64.random(in: 1_000_000_000...1_600_000_000, using: &random)
            guard nasty, time % 10 == 0 else { return time }
            return Self.nastyTimes[Int(time / 10 % Int64(Self.nastyTimes.count))]
        }
    }
}
