// What the sync engine has done so far, for the log and for `dropboxfs status` (which reads it
// through the root folder's `user.dropboxfs.status` extended attribute).

import DropboxAPI
import Foundation
import Log

public struct SyncProgress: Sendable, Equatable {
    public enum Phase: String, Sendable {
        /// Folders are listed when first needed.
        case lazy
        /// The whole-tree listing is running.
        case filling
        /// The tree is complete and followed by longpoll.
        case watching
        /// The tree is complete; changes are not followed (--no-watch).
        case complete
    }

    public var phase: Phase = .lazy
    /// Entries applied by recursive listings.
    public var entriesListed: Int = 0
    /// list_folder / continue pages applied by recursive listings.
    public var pages: Int = 0
    public var fillStarted: Double = 0
    public var fillSeconds: Double?
    /// Change batches applied from the cursor, and cursor resets survived.
    public var deltaBatches: Int = 0
    public var resets: Int = 0
    /// Whole-account listings that failed (each is started again after a pause), and the last error.
    public var fillFailures: Int = 0
    public var lastFailure: String?
    /// Folders made from their entries' paths whose own entry never came (TreeUpdates.swift).
    public var madeFolders: Int = 0
    /// Entries read back from the tree store at mount (0: the tree was listed afresh), and when
    /// that tree last matched Dropbox (seconds since the epoch).
    public var restoredEntries: Int = 0
    public var storedSyncedAt: Int64 = 0
    /// When the tree last agreed with Dropbox (seconds since the epoch; 0: not yet): a fill or a
    /// catch-up that completed, or a longpoll that found nothing new.
    public var asOf: Int64 = 0
    /// Since when catching up with Dropbox fails (nil: it does not), and the last reason.
    public var behindSince: Int64?
    public var behindReason: String?

    /// The tree agrees with Dropbox as of `wall` (seconds since the epoch).
    mutating func current(at wall: Int64) {
        asOf = wall
        behindSince = nil
        behindReason = nil
    }

    /// Catching up failed at `wall` with `reason`.
    mutating func behind(at wall: Int64, reason: String) {
        if behindSince == nil { behindSince = wall }
        behindReason = reason
    }

    /// Whether the tree is stale at `wall`: catching up fails, and it last agreed with Dropbox
    /// more than `staleAfter` seconds ago (or never, for `behindSince` that long).
    public func isStale(at wall: Int64, staleAfter: Double) -> Bool {
        guard let behindSince else { return false }
        let reference = asOf > 0 ? asOf : behindSince
        return Double(wall - reference) > staleAfter
    }

    /// A whole-account fill starts at `time` (monotonic seconds): the status shows it running, not
    /// the finished time of a fill before it.
    mutating func fillStarting(at time: Double) {
        phase = .filling
        fillStarted = time
        fillSeconds = nil
    }

    /// One line for the log and the status attribute; `offlineSince` (seconds since the epoch)
    /// while Dropbox cannot be reached; `extra` (per-host reachability, the sign-in) after it;
    /// `wall` (seconds since the epoch) and `staleAfter` decide `stale=1`.
    public func summary(
        entriesInTree: Int, now: Double, offlineSince: Int64? = nil, extra: [String] = [], wall: Int64 = 0,
        staleAfter: Double = .infinity
    ) -> String {
        var parts = ["phase=\(phase.rawValue)", "entries=\(entriesInTree)", "pages=\(pages)"]
        if let offlineSince { parts.append("offline_since=\(Connectivity.timestamp(offlineSince))") }
        parts += extra
        if asOf > 0 { parts.append("as_of=\(Connectivity.timestamp(asOf))") }
        if let behindSince {
            parts.append("behind_since=\(Connectivity.timestamp(behindSince))")
            if let behindReason {
                parts.append("behind_error=" + Log.escaped(behindReason).replacingOccurrences(of: " ", with: "_"))
            }
            if isStale(at: wall, staleAfter: staleAfter) { parts.append("stale=1") }
        }
        if restoredEntries > 0 {
            parts.append("restored=\(restoredEntries)")
            if storedSyncedAt > 0 { parts.append("stored_as_of=\(Connectivity.timestamp(storedSyncedAt))") }
        }
        let elapsed = fillSeconds ?? (phase == .filling ? now - fillStarted : 0)
        if elapsed > 0 {
            parts.append("fill_seconds=\(Double(Int(elapsed * 10)) / 10)")
            parts.append("rate=\(Int(Double(entriesListed) / elapsed))/s")
        }
        parts.append("delta_batches=\(deltaBatches)")
        parts.append("resets=\(resets)")
        if fillFailures > 0 {
            parts.append("fill_failures=\(fillFailures)")
            // One word, like every value of the line (parsers split it on spaces).
            if let lastFailure {
                parts.append("last_failure=" + Log.escaped(lastFailure).replacingOccurrences(of: " ", with: "_"))
            }
        }
        if madeFolders > 0 { parts.append("made_folders=\(madeFolders)") }
        return parts.joined(separator: " ")
    }
}

extension SyncEngine {
    /// The engine's progress, as one line of `key=value` pairs (the facade's `syncStatus` adds
    /// what the reader keeps).
    func statusLine() -> String {
        let now = options.monotonicNow()
        let offline = connectivity.since
        let extra = connectivity.statusFields() + connectivity.signIn.statusFields()
        let progress = state.withLock { $0.progress }
        return progress.summary(
            entriesInTree: tree.counts.live, now: now, offlineSince: offline, extra: extra, wall: Int64(time(nil)),
            staleAfter: options.staleAfter)
    }

    /// The tree agrees with Dropbox now.
    func markCurrent() {
        let wall = Int64(time(nil))
        state.withLock { $0.progress.current(at: wall) }
    }

    /// Catching up with Dropbox failed with `error`.
    func markBehind(_ error: DropboxError) {
        let wall = Int64(time(nil))
        state.withLock { $0.progress.behind(at: wall, reason: error.description) }
    }
}
