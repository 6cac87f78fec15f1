// Table tests of the read-ahead across files (FolderReadAheadPolicy): when one thread's opens
// start, carry on and stop a folder's read-ahead, and which positions of a listing its window
// requests. Pure: no clock but the one passed in, no tree, no network.

@testable import DropboxFS
import Testing

private let K: UInt64 = 1 << 10

/// Small bounds keep the tables readable: 4 files or 40 KiB ahead, files up to 16 KiB.
private let options = FolderReadAheadOptions(smallFileLimit: 16 * K, filesAhead: 4, bytesAhead: 40 * K, trigger: 2, memory: 10)

@Suite struct FolderReadAheadPolicyTests {
    struct Open: CustomTestStringConvertible {
        var folder: UInt32
        var file: UInt32
        var at: Double = 0
        var readAhead: Bool
        var stop: UInt32? = nil
        var testDescription: String { "open \(file) in \(folder) at \(at)" }
    }

    static let scenarios: [(String, [Open])] = [
        ("a single file never reads ahead", [Open(folder: 1, file: 10, readAhead: false)]),
        (
            "the second different file of a folder starts it; the walk goes on",
            [
                Open(folder: 1, file: 10, readAhead: false), Open(folder: 1, file: 11, readAhead: true),
                Open(folder: 1, file: 12, readAhead: true),
            ]
        ),
        (
            "the same file opened again is not a pattern",
            [
                Open(folder: 1, file: 10, readAhead: false), Open(folder: 1, file: 10, readAhead: false),
                Open(folder: 1, file: 10, readAhead: false),
            ]
        ),
        (
            "a walk going on to the next folder reads ahead there at its first open, and stops the last one",
            [
                Open(folder: 1, file: 10, readAhead: false), Open(folder: 1, file: 11, readAhead: true),
                Open(folder: 2, file: 20, readAhead: true, stop: 1), Open(folder: 2, file: 21, readAhead: true),
                Open(folder: 3, file: 30, readAhead: true, stop: 2),
            ]
        ),
        (
            "single files in different folders never read ahead",
            [
                Open(folder: 1, file: 10, readAhead: false), Open(folder: 2, file: 20, readAhead: false),
                Open(folder: 3, file: 30, readAhead: false), Open(folder: 1, file: 11, readAhead: false),
            ]
        ),
        (
            "a walk turning random costs one window, then stops",
            [
                Open(folder: 1, file: 10, readAhead: false), Open(folder: 1, file: 11, readAhead: true),
                Open(folder: 2, file: 20, readAhead: true, stop: 1), Open(folder: 3, file: 30, readAhead: false, stop: 2),
                Open(folder: 4, file: 40, readAhead: false), Open(folder: 5, file: 50, readAhead: false),
            ]
        ),
        (
            "a thread silent for longer than `memory` starts afresh",
            [
                Open(folder: 1, file: 10, at: 0, readAhead: false), Open(folder: 1, file: 11, at: 1, readAhead: true),
                Open(folder: 1, file: 12, at: 20, readAhead: false), Open(folder: 1, file: 13, at: 21, readAhead: true),
            ]
        ),
    ]

    @Test(arguments: scenarios)
    func opensDecide(_ name: String, _ opens: [Open]) {
        var record: FolderReadAheadPolicy.Record?
        for open in opens {
            let step = FolderReadAheadPolicy.opened(record, file: open.file, folder: open.folder, now: open.at, options: options)
            #expect(step.readAhead == open.readAhead, "\(name): \(open.testDescription)")
            #expect(step.stop == open.stop, "\(name): \(open.testDescription)")
            #expect(step.record.folder == open.folder && step.record.file == open.file)
            record = step.record
        }
    }

    @Test func aNewFolderStartsItsWindowAtItsBeginning() {
        var record = FolderReadAheadPolicy.opened(nil, file: 10, folder: 1, now: 0, options: options).record
        record.requestedUpTo = 7
        record.nextFolderRequested = true
        let same = FolderReadAheadPolicy.opened(record, file: 11, folder: 1, now: 0, options: options).record
        #expect(same.requestedUpTo == 7 && same.nextFolderRequested)
        let other = FolderReadAheadPolicy.opened(record, file: 20, folder: 2, now: 0, options: options).record
        #expect(other.requestedUpTo == 0 && !other.nextFolderRequested)
    }

    struct Window: CustomTestStringConvertible {
        var note: String
        /// Sizes of the listing's entries; nil: not a file that may be read ahead (a folder...).
        var sizes: [UInt64?]
        var position: Int
        var requestedUpTo: Int
        var positions: [Int]
        var reached: Int
        var testDescription: String { note }
    }

    static let windows: [Window] = [
        Window(
            note: "the next four files", sizes: Array(repeating: 1 * K, count: 10), position: 1, requestedUpTo: 0,
            positions: [2, 3, 4, 5], reached: 6),
        Window(
            note: "what earlier opens requested is not asked again: the window slides by one",
            sizes: Array(repeating: 1 * K, count: 10), position: 2, requestedUpTo: 6, positions: [6], reached: 7),
        Window(
            note: "the end of the listing", sizes: Array(repeating: 1 * K, count: 5), position: 3, requestedUpTo: 0,
            positions: [4], reached: 5),
        Window(
            note: "the last entry opened: nothing", sizes: Array(repeating: 1 * K, count: 5), position: 4,
            requestedUpTo: 5, positions: [], reached: 5),
        Window(
            note: "folders and big files are passed over but count towards the files ahead",
            sizes: [1 * K, nil, 1 * K, 100 * K, 1 * K, 1 * K, 1 * K], position: 0, requestedUpTo: 0,
            positions: [2, 4], reached: 5),
        Window(
            note: "at most 40 KiB ahead: the file that would go over ends the window there",
            sizes: [1 * K, 16 * K, 16 * K, 16 * K, 1 * K], position: 0, requestedUpTo: 0, positions: [1, 2],
            reached: 3),
        Window(
            note: "bytes count files requested before too, so the window never holds more",
            sizes: [1 * K, 16 * K, 16 * K, 16 * K, 1 * K], position: 0, requestedUpTo: 3, positions: [],
            reached: 3),
        Window(
            note: "once the reader passed them, the next bytes fit",
            sizes: [1 * K, 16 * K, 16 * K, 16 * K, 1 * K], position: 1, requestedUpTo: 3, positions: [3, 4],
            reached: 5),
    ]

    @Test(arguments: windows)
    func windowRequests(_ w: Window) {
        let (positions, reached) = FolderReadAheadPolicy.window(
            after: w.position, requestedUpTo: w.requestedUpTo, count: w.sizes.count, options: options
        ) { w.sizes[$0] }
        #expect(positions == w.positions, "\(w.note)")
        #expect(reached == w.reached, "\(w.note)")
    }
}
