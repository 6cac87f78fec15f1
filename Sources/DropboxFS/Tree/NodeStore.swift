// The MetadataTree's nodes, in fixed-size chunks instead of one array: growing a single array
// copies every node into a buffer twice the size while the old one is still alive, which at a
// million entries is the process's peak memory (docs/PERFORMANCE.md). A chunk is allocated once at
// its full capacity and never moves. Guarded by whatever guards the tree (LiveTree.state).

struct NodeStore {
    static let chunkShift = 12
    static let chunkSize = 1 << chunkShift  // 4096 nodes
    private static let mask = chunkSize - 1

    private var chunks: [[Node]] = []
    private(set) var count = 0

    var indices: Range<Int> { 0..<count }

    subscript(index: Int) -> Node {
        get {
            precondition(index >= 0 && index < count, "node index out of range")
            return chunks[index >> Self.chunkShift][index & Self.mask]
        }
        _modify {
            precondition(index >= 0 && index < count, "node index out of range")
            yield &chunks[index >> Self.chunkShift][index & Self.mask]
        }
    }

    mutating func append(_ node: Node) {
        if count & Self.mask == 0 {
            var chunk: [Node] = []
            chunk.reserveCapacity(Self.chunkSize)
            chunks.append(chunk)
        }
        chunks[count >> Self.chunkShift].append(node)
        count += 1
    }
}
