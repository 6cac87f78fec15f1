// Table tests of the reader's pure policy: sequential detection and window growth (ReadPolicy),
// how ranges are cut into parts, which buffers and which disk entries are evicted first
// (EvictionOrder), and the unit bitmap. No clocks, no network.

@testable import DropboxFS
import Testing

private let K: UInt64 = 1 << 10
private let M: UInt64 = 1 << 20

/// Small numbers keep the tables readable: 256 KiB units, window 1 MiB doubling to 8 MiB, parts
/// of 2 MiB, files up to 4 MiB fetched whole.
private let options = ReaderOptions(
    unitSize: 256 * K, initialWindow: 1 * M, maxWindow: 8 * M, partSize: 2 * M, sequentialSlack: 1 * M,
    wholeFileLimit: 4 * M, wholeFileParts: 4, memoryLimit: 64 * M)

@Suite struct ReaderPolicyTests {
    struct Step: CustomTestStringConvertible {
        var offset: UInt64
        var length: UInt64
        var sequential: Bool
        var demand: Range<UInt64>
        var prefetch: Range<UInt64>?
        var window: UInt64
        var requestedUpTo: UInt64
        var testDescription: String { "read \(offset)+\(length)" }
    }

    /// One reader's reads of a 100 MiB file, in order, with what each one decides.
    static let steps: [Step] = [
        // The first read starts the stream: its unit, and a 1 MiB window ahead.
        Step(
            offset: 0, length: 128 * K, sequential: true, demand: 0..<256 * K, prefetch: 256 * K..<1280 * K,
            window: 1 * M, requestedUpTo: 1280 * K),
        // Plenty requested ahead: nothing new.
        Step(
            offset: 128 * K, length: 128 * K, sequential: true, demand: 0..<256 * K, prefetch: nil, window: 1 * M,
            requestedUpTo: 1280 * K),
        // Room for half a window: top up, and the window doubles. A window of whole parts ends on a
        // part boundary (2 MiB here).
        Step(
            offset: 768 * K, length: 128 * K, sequential: true, demand: 768 * K..<1 * M, prefetch: 1280 * K..<2 * M,
            window: 2 * M, requestedUpTo: 2 * M),
        // Reading at the end of what was requested: top up again.
        Step(
            offset: 2 * M, length: 128 * K, sequential: true, demand: 2 * M..<2 * M + 256 * K,
            prefetch: 2 * M + 256 * K..<6 * M, window: 4 * M, requestedUpTo: 6 * M),
        // Skipping ahead inside what was requested is still sequential; one whole part fits again.
        Step(
            offset: 5 * M, length: 128 * K, sequential: true, demand: 5 * M..<5 * M + 256 * K,
            prefetch: 6 * M..<12 * M, window: 8 * M, requestedUpTo: 12 * M),
        // Less than a part of room: nothing.
        Step(
            offset: 5 * M + 128 * K, length: 128 * K, sequential: true, demand: 5 * M..<5 * M + 256 * K,
            prefetch: nil, window: 8 * M, requestedUpTo: 12 * M),
        // A jump far away is random: just its unit, and the window starts over.
        Step(
            offset: 50 * M, length: 4 * K, sequential: false, demand: 50 * M..<50 * M + 256 * K, prefetch: nil,
            window: 1 * M, requestedUpTo: 50 * M + 256 * K),
        // Reading on from there starts a new stream at the initial window.
        Step(
            offset: 50 * M + 4 * K, length: 4 * K, sequential: true, demand: 50 * M..<50 * M + 256 * K,
            prefetch: 50 * M + 256 * K..<51 * M + 256 * K, window: 1 * M, requestedUpTo: 51 * M + 256 * K),
        // A little behind (reads reordered by the kernel) is still sequential.
        Step(
            offset: 49 * M + 512 * K, length: 4 * K, sequential: true, demand: 49 * M + 512 * K..<49 * M + 768 * K,
            prefetch: nil, window: 1 * M, requestedUpTo: 51 * M + 256 * K),
        // Further behind than the slack is random.
        Step(
            offset: 40 * M, length: 128 * K, sequential: false, demand: 40 * M..<40 * M + 256 * K, prefetch: nil,
            window: 1 * M, requestedUpTo: 40 * M + 256 * K),
    ]

    @Test func aReaderStreamFollowsTheTable() {
        var stream = ReadStream(window: options.initialWindow)
        for step in Self.steps {
            let decision = ReadPolicy.decide(
                stream, offset: step.offset, length: step.length, fileSize: 100 * M, options: options)
            #expect(decision.sequential == step.sequential, "\(step.testDescription)")
            #expect(decision.demand == step.demand, "\(step.testDescription)")
            #expect(decision.prefetch == step.prefetch, "\(step.testDescription)")
            #expect(decision.stream.window == step.window, "\(step.testDescription)")
            #expect(decision.stream.requestedUpTo == step.requestedUpTo, "\(step.testDescription)")
            stream = decision.stream
        }
    }

    @Test func theWindowDoublesUpToTheMaximum() {
        var stream = ReadStream(window: options.initialWindow)
        var windows: [UInt64] = []
        var offset: UInt64 = 0
        while offset < 60 * M {
            let decision = ReadPolicy.decide(stream, offset: offset, length: 128 * K, fileSize: 100 * M, options: options)
            if decision.prefetch != nil { windows.append(decision.stream.window) }
            stream = decision.stream
            offset += 128 * K
        }
        #expect(Array(windows.prefix(6)) == [1 * M, 2 * M, 4 * M, 8 * M, 8 * M, 8 * M])
        #expect(windows.allSatisfy { $0 <= options.maxWindow })
    }

    @Test func prefetchStopsAtTheEndOfTheFile() {
        let size = 10 * M + 100
        let stream = ReadStream(expected: 9 * M, window: 4 * M, requestedUpTo: 9 * M + 512 * K, growing: true)
        let decision = ReadPolicy.decide(stream, offset: 9 * M, length: 128 * K, fileSize: size, options: options)
        #expect(decision.prefetch == 9 * M + 512 * K..<size)
        #expect(decision.stream.requestedUpTo == size)
        let atEnd = ReadPolicy.decide(decision.stream, offset: size - 10, length: 128 * K, fileSize: size, options: options)
        #expect(atEnd.prefetch == nil)
        #expect(atEnd.demand == 10 * M..<size)
    }

    /// A thumbnailer or content sniffer reading a small file's first 4 KiB gets one unit, not the
    /// whole file, and no read-ahead; reading on, it gets a window that starts at one unit and
    /// grows; a jump keeps it ranged.
    @Test func rangedStreamsFetchWhatTheyAskFor() {
        let stream = ReadPolicy.ranged(ReadStream(window: options.initialWindow), options: options)
        #expect(stream.ranged && stream.window == 256 * K)
        #expect(ReadPolicy.wholeFileLimit(stream, options: options) == 0)
        #expect(ReadPolicy.wholeFileLimit(ReadStream(window: 1 * M), options: options) == 4 * M)
        let first = ReadPolicy.decide(stream, offset: 0, length: 4 * K, fileSize: 3 * M, options: options)
        #expect(first.demand == 0..<256 * K && first.prefetch == nil && first.sequential)
        let second = ReadPolicy.decide(first.stream, offset: 4 * K, length: 128 * K, fileSize: 3 * M, options: options)
        #expect(second.demand == 0..<256 * K && second.prefetch == 256 * K..<512 * K)
        let third = ReadPolicy.decide(
            second.stream, offset: 256 * K, length: 128 * K, fileSize: 3 * M, options: options)
        #expect(third.prefetch == 512 * K..<1 * M && third.stream.window == 512 * K, "the window grows")
        // A PDF reader's jump to the cross-reference table at the end: that unit only.
        let jump = ReadPolicy.decide(third.stream, offset: 3 * M - 1 * K, length: 1 * K, fileSize: 3 * M, options: options)
        #expect(jump.demand == 3 * M - 256 * K..<3 * M && jump.prefetch == nil && !jump.sequential)
        #expect(jump.stream.ranged && jump.stream.window == 256 * K)
        // Made ranged twice: the stream is kept as it is.
        #expect(ReadPolicy.ranged(third.stream, options: options) == third.stream)
    }

    @Test func smallFilesAreFetchedWhole() {
        let stream = ReadStream(window: options.initialWindow)
        for (offset, size) in [(UInt64(0), UInt64(1)), (100, 3 * M), (4 * M - 1, 4 * M)] {
            let decision = ReadPolicy.decide(stream, offset: offset, length: 4 * K, fileSize: size, options: options)
            #expect(decision.demand == 0..<size)
            #expect(decision.prefetch == nil)
        }
    }

    @Test(arguments: [
        (0..<5 * M, 2 * M, [0..<2 * M, 2 * M..<4 * M, 4 * M..<5 * M]),
        (M..<M, 2 * M, []),
        (256 * K..<512 * K, 2 * M, [256 * K..<512 * K]),
        (0..<4 * M, 2 * M, [0..<2 * M, 2 * M..<4 * M]),
        (1 * M..<5 * M, 2 * M, [1 * M..<2 * M, 2 * M..<4 * M, 4 * M..<5 * M]),  // cut at multiples
    ])
    func rangesAreCutIntoParts(range: Range<UInt64>, maxPart: UInt64, parts: [Range<UInt64>]) {
        #expect(ReadPolicy.parts(of: range, maxPart: maxPart) == parts)
    }

    @Test(arguments: [
        (UInt64(1), 256 * K),  // at least one unit
        (3 * M, 768 * K),  // a quarter, in whole units
        (4 * M, 1 * M),
        (3 * M + 1, 1 * M),  // a quarter rounded up to units
        (100 * M, 2 * M),  // big files use partSize
    ])
    func partSizes(fileSize: UInt64, part: UInt64) {
        #expect(ReadPolicy.partSize(fileSize: fileSize, options: options) == part)
    }

    // MARK: eviction

    typealias Buffer = EvictionOrder.Buffer

    @Test func buffersGoConsumedFirstUnhashedLastOldestFirst() {
        let buffers = [
            Buffer(id: 1, bytes: 10, consumed: false, unhashed: false, lastUsed: 5),
            Buffer(id: 2, bytes: 10, consumed: true, unhashed: false, lastUsed: 9),
            Buffer(id: 3, bytes: 10, consumed: false, unhashed: true, lastUsed: 1),
            Buffer(id: 4, bytes: 10, consumed: true, unhashed: false, lastUsed: 2),
            Buffer(id: 5, bytes: 10, consumed: false, unhashed: false, lastUsed: 3),
            Buffer(id: 6, bytes: 10, consumed: true, unhashed: true, lastUsed: 0),
        ]
        let table: [(needed: UInt64, victims: [UInt64])] = [
            (0, []),
            (1, [4]),
            (10, [4]),
            (11, [4, 2]),
            (25, [4, 2, 5]),
            (40, [4, 2, 5, 1]),
            (50, [4, 2, 5, 1, 6]),
            (1000, [4, 2, 5, 1, 6, 3]),
        ]
        for row in table {
            #expect(EvictionOrder.buffersToEvict(buffers, needed: row.needed) == row.victims, "needed \(row.needed)")
        }
    }

    typealias Entry = EvictionOrder.CacheEntry

    @Test func diskEntriesGoLeastRecentlyUsedFirst() {
        let entries = [Entry(key: "a", size: 3, lastUsed: 100), Entry(key: "b", size: 3, lastUsed: 300), Entry(key: "c", size: 3, lastUsed: 200)]
        let table: [(reserved: UInt64, incoming: UInt64, capacity: UInt64, victims: [String]?)] = [
            (0, 1, 10, []),
            (0, 2, 10, ["a"]),
            (0, 4, 10, ["a"]),
            (0, 5, 10, ["a", "c"]),
            (0, 10, 10, ["a", "c", "b"]),
            (0, 11, 10, nil),
            (5, 4, 10, ["a", "c", "b"]),
            (5, 6, 10, nil),
            (0, 0, 5, ["a", "c"]),
            (12, 0, 10, nil),
        ]
        for row in table {
            let victims = EvictionOrder.cacheEntriesToEvict(
                entries, reserved: row.reserved, incoming: row.incoming, capacity: row.capacity)
            #expect(victims == row.victims, "reserved \(row.reserved) incoming \(row.incoming) capacity \(row.capacity)")
        }
    }

    @Test func equalTimesEvictInKeyOrder() {
        let entries = [Entry(key: "z", size: 1, lastUsed: 7), Entry(key: "m", size: 1, lastUsed: 7)]
        #expect(EvictionOrder.cacheEntriesToEvict(entries, reserved: 0, incoming: 1, capacity: 2) == ["m"])
    }

    // MARK: unit bitmap

    @Test func unitSetTracksPresenceAndGaps() {
        var set = UnitSet(capacity: 130)
        #expect(set.firstMissing(from: 0) == 0)
        set.insert(0..<3)
        set.insert(64..<66)
        set.insert(2..<5)
        #expect(set.count == 7)
        #expect(set.contains(4) && set.contains(65) && !set.contains(5) && !set.contains(129))
        #expect(set.firstMissing(from: 0) == 5)
        #expect(set.firstMissing(from: 64) == 66)
        set.insert(120..<200)
        #expect(set.count == 17)
        #expect(set.firstMissing(from: 120) == 130)
        set.insert(0..<130)
        #expect(set.isFull)
    }
}
