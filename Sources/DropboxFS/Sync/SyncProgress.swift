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

    /// A whole-account fill starts at `time` (monotonic seconds): the status shows it running, not
    /// the finished time of a fill before it.
    mutating func fillStarting(at time: Double) {
        phase = .filling
        fillStarted = time
        fillSeconds = nil
    }

    /// One line for the log and the status attribute; `offlineSince` (seconds since the epoch)
    /// while Dropbox cannot be reached.
    public func summary(entriesInTree: Int, now: Double, offlineSince: Int64? = nil) -> String {
        var parts = ["phase=\(phase.rawValue)", "entries=\(entriesInTree)", "pages=\(pages)"]
        if let offlineSince { parts.append("offline_since=\(Connectivity.timestamp(offlineSince))") }
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
        let progress = state.withLock { $0.progress }
        return progress.summary(entriesInTree: tree.counts.live, now: now, offlineSince: offline)
    }
}
