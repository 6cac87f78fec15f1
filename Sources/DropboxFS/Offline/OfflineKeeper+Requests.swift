// What `dropboxfs pin`, `unpin` and `pinned` ask of the keeper, and what it tells the status line
// and the `user.dropboxfs.offline` attribute. Requests arrive as reads of extended attributes on
// the mount (Filesystem+Pins.swift); each answer is one text the command prints: "pinned ...",
// "unpinned ..." or "refused: ..." with the reason and, for space, the numbers.

import DropboxAPI

extension OfflineKeeper {
    /// Pins the entry `index`. Refused without a disk cache, for a path inside a pin already,
    /// and when the pinned contents would not fit (PinSpace).
    func pin(_ index: UInt32) -> String {
        pinRequests.withLock { _ in pinAlone(index) }
    }

    private func pinAlone(_ index: UInt32) -> String {
        guard let diskCache else {
            return "refused: available offline keeps files in the disk cache, and this mount has none "
                + "(it was mounted with --no-disk-cache, or its cache folder cannot be used): mount without --no-disk-cache"
        }
        // The pins are read before the tree's lock is taken: `state` is never taken inside it.
        let current = self.pins
        let (path, id, coverage, others) = tree.read { t -> (String, String, PinCoverage, [PinCoverage]) in
            let path = t.tree.path(of: index)
            let shown = path.isEmpty ? "/" : path
            let pins = current.filter { !PinPlan.covers(shown, $0) }
            return (
                shown, t.tree.node(index)?.id ?? "", PinPlan.coverage(of: shown, in: t.tree),
                pins.map { PinPlan.coverage(of: $0, in: t.tree) }
            )
        }
        if let outer = current.first(where: { PinPlan.covers($0, path) && !PinPlan.samePath($0, path) }) {
            return "refused: \(path) is available offline already, inside the pin \(outer)"
        }
        let otherFiles = others.flatMap(\.files)
        let otherBytes = PinPlan.distinctBytes(otherFiles)
        let allBytes = PinPlan.distinctBytes(otherFiles + coverage.files)
        let present = diskCache.present(Set(coverage.files.map(\.key)))
        let newBytes = PinPlan.distinctBytes(coverage.files.filter { !present.contains($0.key) })
        if let refusal = PinSpace.refusal(
            path: path, pinnedBytes: allBytes, otherPinnedBytes: otherBytes, newBytes: newBytes,
            capacity: diskCache.capacity, free: diskCache.freeBytes())
        {
            return "refused: " + refusal
        }
        let stored = state.withLock { s -> (pins: [String], ids: [String: String]) in
            s.addPin(path, id: id)
            s.dirty = true
            return (s.pins, s.ids)
        }
        store?.storePins(stored.pins, ids: stored.ids)
        var answer = "pinned \(path): \(coverage.files.count) files, \(PinSpace.format(coverage.bytes))"
        answer += newBytes > 0 ? ", \(PinSpace.format(newBytes)) to download" : ", all present"
        if coverage.unavailable > 0 { answer += "; \(coverage.unavailable) cannot be kept (export-only documents)" }
        if !coverage.listed { answer += "; its folders are still being listed: more may come" }
        return answer
    }

    /// Unpins the entry `index`: its contents become ordinary cache entries (evicted when room is
    /// needed). Refused when it is not a pin.
    func unpin(_ index: UInt32) -> String {
        let path = tree.read { t in t.tree.path(of: index) }
        let shown = path.isEmpty ? "/" : path
        let result = state.withLock { s -> (removed: String?, outer: String?, pins: [String], ids: [String: String]) in
            if let at = s.pins.firstIndex(where: { PinPlan.samePath($0, shown) }) {
                let removed = s.pins.remove(at: at)
                s.ids[removed] = nil
                s.dirty = true
                return (removed, nil, s.pins, s.ids)
            }
            return (nil, s.pins.first { PinPlan.covers($0, shown) }, s.pins, s.ids)
        }
        guard let removed = result.removed else {
            if let outer = result.outer { return "refused: \(shown) is not pinned itself: it is inside the pin \(outer)" }
            return "refused: \(shown) is not pinned"
        }
        store?.storePins(result.pins, ids: result.ids)
        // The keys it alone kept may be evicted from now on.
        let keep = tree.read { t in Self.pinnedKeys(result.pins, in: t.tree) }
        diskCache?.setPinned(keep)
        return "unpinned \(removed)"
    }

    /// One pin's state for `dropboxfs pinned`.
    struct PinReport: Sendable, Equatable {
        var path: String
        var state: String
        var files: Int
        var presentFiles: Int
        var bytes: UInt64
        var presentBytes: UInt64
        var unavailable: Int

        /// Tab-separated, the path percent-encoded (a name may hold a tab or a newline).
        var line: String {
            [Self.encode(path), state, "\(files)", "\(presentFiles)", "\(bytes)", "\(presentBytes)", "\(unavailable)"]
                .joined(separator: "\t")
        }

        static func encode(_ text: String) -> String {
            var out = ""
            for byte in text.utf8 {
                if byte > 0x20, byte < 0x7f, byte != UInt8(ascii: "%") {
                    out.append(Character(Unicode.Scalar(byte)))
                } else {
                    out += "%" + String(byte, radix: 16, uppercase: true).leftPadded(to: 2)
                }
            }
            return out
        }
    }

    /// Every pin's state as the tree and the disk cache stand now.
    func reports() -> [PinReport] {
        let coverage = currentCoverage()
        let keys = Set(coverage.flatMap { $0.files.map(\.key) })
        let present = diskCache?.present(keys) ?? []
        let (downloading, failed) = state.withLock { ($0.downloading, Set($0.failures.keys)) }
        return coverage.map { pin in
            var seen: Set<String> = []
            var presentFiles = 0
            var presentBytes: UInt64 = 0
            var pending = false
            var failing = false
            for file in pin.files {
                if present.contains(file.key) {
                    presentFiles += 1
                    if seen.insert(file.key).inserted { presentBytes += file.size }
                } else {
                    pending = true
                    if failed.contains(file.key) && !downloading.contains(file.key) { failing = true }
                }
            }
            let state: String
            if !pin.found {
                state = "missing"
            } else if !pending && pin.listed {
                state = "present"
            } else if connectivity.isOffline {
                state = "offline"
            } else if failing {
                state = "failing"
            } else if !pin.listed {
                state = "listing"
            } else {
                state = "downloading"
            }
            return PinReport(
                path: pin.path, state: state, files: pin.files.count, presentFiles: presentFiles, bytes: pin.bytes,
                presentBytes: presentBytes, unavailable: pin.unavailable)
        }
    }

    /// The value of `user.dropboxfs.offline` for the entry `index`: nil when no pin covers it.
    /// A file: "present", "pending" or "unavailable" (an export-only document). A folder:
    /// "present N/N files" or "pending K/N files".
    func attribute(of index: UInt32) -> String? {
        let pins = self.pins
        guard !pins.isEmpty else { return nil }
        let found = tree.read { t -> (path: String, coverage: PinCoverage, isFile: Bool)? in
            let path = t.tree.path(of: index)
            let shown = path.isEmpty ? "/" : path
            guard pins.contains(where: { PinPlan.covers($0, shown) }), let node = t.tree.node(index) else { return nil }
            return (shown, PinPlan.coverage(of: shown, in: t.tree), node.kind == .file)
        }
        guard let found else { return nil }
        let present = diskCache?.present(Set(found.coverage.files.map(\.key))) ?? []
        if found.isFile {
            guard let file = found.coverage.files.first else { return "unavailable" }
            return present.contains(file.key) ? "present" : "pending"
        }
        let count = found.coverage.files.filter { present.contains($0.key) }.count
        let all = found.coverage.files.count
        return (count == all && found.coverage.listed ? "present" : "pending") + " \(count)/\(all) files"
    }

    /// The status line's fields: how many pins, and their files and bytes, present and in all.
    func statusFields() -> [String] {
        let pins = self.pins
        guard !pins.isEmpty else { return [] }
        let reports = reports()
        let files = reports.reduce(0) { $0 + $1.files }
        let presentFiles = reports.reduce(0) { $0 + $1.presentFiles }
        let bytes = reports.reduce(UInt64(0)) { $0 + $1.bytes }
        let presentBytes = reports.reduce(UInt64(0)) { $0 + $1.presentBytes }
        return [
            "pins=\(pins.count)", "pinned_files=\(files)", "pinned_present_files=\(presentFiles)",
            "pinned_bytes=\(bytes)", "pinned_present_bytes=\(presentBytes)",
        ]
    }
}

extension String {
    fileprivate func leftPadded(to width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}
