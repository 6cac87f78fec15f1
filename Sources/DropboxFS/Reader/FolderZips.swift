// Folders fetched as one zip for the read-ahead across files (FolderReadAhead.swift): a walk that
// reads a folder's small files one by one would cost one request per file; `files/download_zip`
// answers the whole folder in one. A folder is asked for as a zip when the read-ahead reaches it
// and it is worth it (`wanted`): no subfolders (a zip holds them all, and a walk may never go
// there), its files within `maxFolderBytes`, at least `minFiles` small files the reader does not
// hold yet, making up at least half its bytes. Each member is matched to the listing by name and
// kept only when its size and content_hash are the listing's; it is then served, once, to the
// reader's download of that revision (FileReader.fetchBytes), which checks it against its
// content_hash again like any download. A member the zip lacks, or whose bytes differ (the file
// changed since it was listed), and every member of a zip that failed, is downloaded by itself as
// before: the zip only saves requests, it never decides what is served.
//
// Memory: the members held, and the folders' bytes while their zips are on their way, come to at
// most `memory` bytes, beside the reader's buffers; members not read within `keep` seconds go.
// A download waits for the zip that holds its revision (SharedWork: an interrupted read stops
// waiting at once, and a zip every waiter left is cancelled).
//
// Locking: `state` (a Mutex) guards the members, the folders asked, the bytes held and the
// counts; it is never held across an await, a download or the parsing of a zip.

import DropboxAPI
import Log
import Synchronization

/// How folders are fetched as one zip (nil in FilesystemOptions: never).
public struct FolderZipOptions: Sendable {
    public var route: any FolderZipRoute
    /// A folder whose files come to more bytes is not fetched as a zip.
    public var maxFolderBytes: UInt64
    /// Small files of the folder the reader does not hold yet, at least.
    public var minFiles: Int
    /// Bytes of members held and of zips on their way, at most.
    public var memory: UInt64
    /// Seconds a member not read is kept.
    public var keep: Double
    /// Zips on their way at once.
    public var parallel: Int
    /// Downloads the read-ahead runs at once without zips (FolderReadAheadOptions.parallel): a zip
    /// must beat them (FolderZips.slower).
    public var filesAtOnce: Int = 48

    public init(
        route: any FolderZipRoute, maxFolderBytes: UInt64 = 16 << 20, minFiles: Int = 4, memory: UInt64 = 48 << 20,
        keep: Double = 30, parallel: Int = 4
    ) {
        self.route = route
        self.maxFolderBytes = maxFolderBytes
        self.minFiles = max(1, minFiles)
        self.memory = memory
        self.keep = keep
        self.parallel = max(1, parallel)
    }
}

/// A folder as the tree knows it, for a zip of it (LiveTree.zipPlan).
struct FolderZipPlan: Sendable {
    var folder: UInt32
    /// Its path, for the request.
    var path: String
    /// The folder and its children, as the zip counts them.
    var entries: Int
    /// The sizes of all its files.
    var totalBytes: UInt64
    /// Its files that can be served from a zip: downloadable, with a revision and a content_hash.
    var files: [(name: String, file: PinnedFile)]
}

final class FolderZips: Sendable {
    private enum Member {
        /// In the zip on its way (the work), `size` bytes; waited for until `deadline` (monotonic
        /// seconds), when single downloads would have had the zip's files (`slower`).
        case pending(SharedWork<Void>, size: UInt64, deadline: Double)
        /// Checked, kept until `until` (monotonic seconds).
        case ready([UInt8], until: Double)
    }

    private struct State {
        /// By revision.
        var members: [String: Member] = [:]
        /// Bytes of ready members and of zips on their way.
        var held: UInt64 = 0
        /// Folder -> when its zip was asked for: not asked again within `keep`.
        var asked: [UInt32: Double] = [:]
        /// Folder -> when the read-ahead last weighed a zip of it (`consider`): not weighed again
        /// within `keep`, since weighing walks the folder's entries under the tree's lock.
        var considered: [UInt32: Double] = [:]
        var inFlight = 0
        /// Set when Dropbox refused the route itself: no more zips in this mount.
        var disabled = false
        var zips: UInt64 = 0
        var served: UInt64 = 0
        var failures: UInt64 = 0
        var warned = false
        /// Seconds a single small file's download takes, as a moving average (nil before the first).
        var downloadSeconds: Double?
        /// While zips are slower than single downloads (`slower`): none is asked for until then.
        var pausedUntil: Double?
        var pauses: UInt64 = 0
    }

    let options: FolderZipOptions
    /// Files up to this size are served from zips (the read-ahead's small files), and time its downloads.
    let smallFileLimit: UInt64
    /// Monotonic seconds (injected by tests).
    let now: @Sendable () -> Double
    private let state = Mutex(State())

    init(options: FolderZipOptions, smallFileLimit: UInt64, now: @escaping @Sendable () -> Double) {
        self.options = options
        self.smallFileLimit = smallFileLimit
        self.now = now
    }

    /// Whether `folder` may be asked for now (it was not, lately, and zips are on).
    func mayAsk(_ folder: UInt32) -> Bool {
        let at = now()
        return state.withLock { s in Self.mayAsk(folder, at: at, s, options) }
    }

    private static func mayAsk(_ folder: UInt32, at: Double, _ s: State, _ options: FolderZipOptions) -> Bool {
        !s.disabled && s.inFlight < options.parallel && s.pausedUntil.map { at >= $0 } ?? true
            && s.asked[folder].map { at - $0 >= options.keep } ?? true
    }

    /// Whether the read-ahead should weigh a zip of `folder` now (`mayAsk`, and not weighed within
    /// `keep`); noted, so the opens of a walk through a folder not worth a zip weigh it once.
    func consider(_ folder: UInt32) -> Bool {
        let at = now()
        return state.withLock { s in
            guard Self.mayAsk(folder, at: at, s, options), s.considered[folder].map({ at - $0 >= options.keep }) ?? true
            else { return false }
            s.considered[folder] = at
            if s.considered.count > 4096 { s.considered = s.considered.filter { at - $0.value < options.keep } }
            return true
        }
    }

    /// Notes how long one download of a small file took, the yardstick of zips (`slower`).
    func noteDownload(seconds: Double) {
        state.withLock { s in s.downloadSeconds = s.downloadSeconds.map { $0 * 0.9 + seconds * 0.1 } ?? seconds }
    }

    /// Whether a zip of `files` files answered later than the read-ahead's downloads would have
    /// fetched them (`parallel` at once, each taking `download` seconds), with one download's time
    /// to spare: a walk waits for a zip where it would have had its files from those downloads, so
    /// zips then cost time instead of saving it. Dropbox makes a zip before it answers, and how
    /// long that takes here is not known in advance, so it is measured.
    static func slower(zip: Double, files: Int, download: Double, parallel: Int = 48) -> Bool {
        zip > patience(files: files, download: download, parallel: parallel)
    }

    /// The seconds a zip of `files` files may take (`slower`); 2 s before any download was timed.
    static func patience(files: Int, download: Double?, parallel: Int) -> Double {
        guard let download else { return 2 }
        let rounds = (max(1, files) + max(1, parallel) - 1) / max(1, parallel)
        return Double(rounds + 1) * download + 0.05
    }

    /// How long zips pause once they are found slower than single downloads; then one is tried again.
    static let pause = 300.0

    /// The files of `plan` a zip would serve, when a zip of it is worth asking for: `held` tells
    /// the files the reader has already.
    func wanted(_ plan: FolderZipPlan, held: (PinnedFile) -> Bool) -> [(name: String, file: PinnedFile)]? {
        guard plan.entries < FolderZipLimits.maxEntries, plan.totalBytes <= options.maxFolderBytes else { return nil }
        let wanted = plan.files.filter { $0.file.size > 0 && $0.file.size <= smallFileLimit && !held($0.file) }
        let bytes = wanted.reduce(UInt64(0)) { $0 + $1.file.size }
        guard wanted.count >= options.minFiles, bytes * 2 >= plan.totalBytes else { return nil }
        return wanted
    }

    /// Asks for `plan`'s folder as one zip, to serve `wanted`; false when it is not asked (zips
    /// are off, one is on its way for it, or memory is short).
    @discardableResult
    func fetch(_ plan: FolderZipPlan, wanted: [(name: String, file: PinnedFile)]) -> Bool {
        let at = now()
        sweep(at: at)
        return state.withLock { s -> Bool in
            guard Self.mayAsk(plan.folder, at: at, s, options), s.held + plan.totalBytes <= options.memory,
                !wanted.contains(where: { s.members[$0.file.rev] != nil })
            else { return false }
            s.asked[plan.folder] = at
            if s.asked.count > 4096 { s.asked = s.asked.filter { at - $0.value < options.keep } }
            s.inFlight += 1
            s.held += plan.totalBytes
            s.zips += 1
            // Registered before the work can finish: its end takes this lock.
            let work = SharedWork<Void> { [self] work in
                // Tried once: a failure costs the downloads of single files, not the pacer's retries.
                let members = await Pacer.$lane.withValue(.readAhead) {
                    await Pacer.$retriesFailures.withValue(false) { await self.download(plan, wanted: wanted) }
                }
                finish(plan, wanted: wanted, members: members, work: work, seconds: now() - at)
                return .success(())
            }
            let deadline = at + Self.patience(files: wanted.count, download: s.downloadSeconds, parallel: options.filesAtOnce)
            for entry in wanted {
                s.members[entry.file.rev] = .pending(work, size: entry.file.size, deadline: deadline)
            }
            return true
        }
    }

    /// The bytes of `range` of `file` from a zip, nil when no zip holds its revision (download it).
    /// Waits for the zip on its way that holds it, until its deadline: a zip answering later than
    /// the single downloads would have is overdue, and pauses zips (`slower`). `.interrupted` when
    /// the calling task is cancelled. A member served whole is forgotten.
    func bytes(of file: PinnedFile, range: Range<UInt64>) async throws(FilesystemError) -> [UInt8]? {
        enum Look {
            case absent
            case bytes([UInt8])
            case wait(SharedWork<Void>, deadline: Double)
        }
        while true {
            let look = state.withLock { s -> Look in
                guard let member = s.members[file.rev] else { return .absent }
                switch member {
                case .ready(let bytes, _):
                    guard UInt64(bytes.count) == file.size, range.upperBound <= file.size else { return .absent }
                    if range.lowerBound == 0, range.upperBound == file.size {
                        s.members[file.rev] = nil
                        s.held -= file.size
                        s.served += 1
                        return .bytes(bytes)
                    }
                    return .bytes(Array(bytes[Int(range.lowerBound)..<Int(range.upperBound)]))
                case .pending(let work, _, let deadline):
                    // Its end replaced every member it held; one still here was not replaced.
                    if work.isFinished || work.isAbandoned { return .absent }
                    return .wait(work, deadline: deadline)
                }
            }
            switch look {
            case .absent: return nil
            case .bytes(let bytes): return bytes
            case .wait(let work, let deadline):
                guard try await Self.wait(for: work, seconds: deadline - now()) else {
                    overdue(deadline: deadline)
                    return nil
                }
            }
        }
    }

    /// Waits for `work` at most `seconds`: false when they passed first (the wait for it is left,
    /// and a zip every waiter left is cancelled); `.interrupted` when the calling task is cancelled.
    private static func wait(for work: SharedWork<Void>, seconds: Double) async throws(FilesystemError) -> Bool {
        guard seconds > 0 else { return false }
        let ended = await withTaskGroup(of: Bool.self) { group -> Bool in
            // Ended, abandoned or failed: the caller looks at the members again.
            group.addTask {
                _ = try? await work.value()
                return true
            }
            group.addTask {
                try? await Task.sleep(for: .milliseconds(Int64(seconds * 1000) + 1))
                return false
            }
            let first = await group.next() ?? false
            group.cancelAll()
            return first
        }
        if Task.isCancelled { throw .interrupted }
        return ended
    }

    /// A zip was not there by its deadline: zips pause (once), and its files are downloaded alone.
    private func overdue(deadline: Double) {
        let download = state.withLock { s -> Double? in
            guard s.pausedUntil.map({ now() >= $0 }) ?? true else { return nil }
            s.pausedUntil = now() + Self.pause
            s.pauses += 1
            return s.downloadSeconds ?? 0
        }
        guard let download else { return }
        Log.info(
            "folder zips: Dropbox had not answered a folder's zip when single downloads would have had its files "
                + "(a file takes \(Self.format(download)) s): reading ahead file by file for \(Int(Self.pause / 60)) minutes")
    }

    /// The zip's members that match `wanted` by name, size and content_hash, by revision.
    private func download(_ plan: FolderZipPlan, wanted: [(name: String, file: PinnedFile)]) async -> [String: [UInt8]] {
        // Room for the zip's records: two names of at most 511 bytes and headers, per entry.
        let limit = plan.totalBytes + UInt64(plan.entries) * 1200 + 65536
        let body: [UInt8]
        do {
            body = try await options.route.downloadZip(path: plan.path, maxBytes: Int(min(limit, UInt64(Int.max))))
        } catch {
            failed(plan, error)
            return [:]
        }
        let archive: ZipArchive
        do {
            archive = try ZipArchive(body)
        } catch {
            failed(plan, error)
            return [:]
        }
        return Self.members(of: archive, wanted: wanted, folder: plan.path)
    }

    /// Matches members to `wanted`: a member's name below the zip's top folder is the file's name
    /// (exactly, or else the same once case-folded, as Dropbox's names are); its bytes must be the
    /// listing's size and content_hash.
    static func members(of archive: ZipArchive, wanted: [(name: String, file: PinnedFile)], folder: String) -> [String: [UInt8]] {
        var exact: [String: PinnedFile] = [:]
        var folded: [String: PinnedFile] = [:]
        for entry in wanted {
            exact[entry.name] = entry.file
            folded[entry.name.lowercased()] = entry.file
        }
        var found: [String: [UInt8]] = [:]
        for member in archive.members where !member.isDirectory {
            guard let slash = member.name.firstIndex(of: "/") else { continue }
            let name = String(member.name[member.name.index(after: slash)...])
            guard let file = exact[name] ?? folded[name.lowercased()], found[file.rev] == nil, member.size == file.size
            else { continue }
            guard let bytes = try? archive.contents(of: member, limit: file.size) else {
                Log.debug("folder zip of \(folder): \(member.name) could not be read; downloading it by itself")
                continue
            }
            guard let expected = file.contentHash, ContentHasher.hash(bytes) == expected else {
                Log.debug("folder zip of \(folder): \(file.label) differs from the listing; downloading it by itself")
                continue
            }
            found[file.rev] = bytes
        }
        return found
    }

    private func failed(_ plan: FolderZipPlan, _ error: DropboxError) {
        // The route itself refused (an app without it, a server that lacks it): no more zips.
        let refused: Bool
        switch error {
        case .badRequest, .authentication(.missingScope), .unexpectedStatus(404), .accessDenied: refused = true
        default: refused = false
        }
        let firstWarning = state.withLock { s -> Bool in
            if case .transport(let failure) = error, failure.kind == .cancelled { return false }
            s.failures += 1
            if refused { s.disabled = true }
            defer { s.warned = true }
            return refused || !s.warned
        }
        if refused {
            Log.warning("folder zips: Dropbox refused files/download_zip (\(error)); reading files one by one from now on")
        } else if firstWarning {
            Log.info("folder zips: the zip of \(plan.path) failed (\(error)); its files are read one by one")
        } else {
            Log.debug("folder zips: the zip of \(plan.path) failed (\(error)); its files are read one by one")
        }
    }

    /// Replaces the work's members with what arrived; the others are downloaded by themselves.
    private func finish(
        _ plan: FolderZipPlan, wanted: [(name: String, file: PinnedFile)], members: [String: [UInt8]],
        work: SharedWork<Void>, seconds: Double
    ) {
        let at = now()
        let until = at + options.keep
        let slow = state.withLock { s -> (zip: Double, download: Double)? in
            s.inFlight -= 1
            s.held -= plan.totalBytes
            for entry in wanted {
                guard case .pending(let holder, _, _) = s.members[entry.file.rev], holder === work else { continue }
                if let bytes = members[entry.file.rev] {
                    s.members[entry.file.rev] = .ready(bytes, until: until)
                    s.held += entry.file.size
                } else {
                    s.members[entry.file.rev] = nil
                }
            }
            guard !members.isEmpty, let download = s.downloadSeconds, s.pausedUntil.map({ at >= $0 }) ?? true,
                Self.slower(zip: seconds, files: wanted.count, download: download, parallel: options.filesAtOnce)
            else { return nil }
            s.pausedUntil = at + Self.pause
            s.pauses += 1
            return (seconds, download)
        }
        if let slow {
            Log.info(
                "folder zips: Dropbox answered a folder's zip in \(Self.format(slow.zip)) s, a file in "
                    + "\(Self.format(slow.download)) s: reading ahead file by file for \(Int(Self.pause / 60)) minutes")
        }
        if !members.isEmpty {
            let keep = options.keep
            Task { [weak self] in
                try? await Task.sleep(for: .seconds(keep + 1))
                self?.sweep(at: self?.now() ?? 0)
            }
        }
    }

    /// Seconds to the hundredth, as the status line's figures are given.
    private static func format(_ seconds: Double) -> Double { (seconds * 100).rounded() / 100 }

    /// Drops members kept past their time.
    private func sweep(at time: Double) {
        state.withLock { s in
            for (rev, member) in s.members {
                guard case .ready(let bytes, let until) = member, until < time else { continue }
                s.members[rev] = nil
                s.held -= UInt64(bytes.count)
            }
        }
    }

    /// For the root's status attribute: zips asked for, files served from them, failed zips.
    var statusFields: String {
        state.withLock { "zip_folders=\($0.zips) zip_files=\($0.served) zip_failures=\($0.failures) zip_pauses=\($0.pauses)" }
    }
}
