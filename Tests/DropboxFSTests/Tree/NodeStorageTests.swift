// Node's compact storage (Node.swift, NodeStore.swift): packed ids and revs read back exactly,
// anything that does not pack is kept as is, and the chunked store addresses nodes across chunks.

import DropboxAPI
import Testing

@testable import DropboxFS

extension CoreTests {
    @Suite struct NodeStorageTests {
        static let ids = [
            "", "id:a4ayc_80_OEAAAAAAAAAXw", "id:AAAAAAAAAAAAAAAAAAAAAA", "id:______________________",
            "id:-_09azAZ-_09azAZ-_09az", "id:short", "id:a4ayc_80_OEAAAAAAAAAXwX", "id:a4ayc_80_OEAAAAAAAAA+w",
            "ns:12345", "idXa4ayc_80_OEAAAAAAAAAXw", "id:é4ayc_80_OEAAAAAAAAAX",
        ]
        static let revs = [
            "", "0", "a1c10ce0dd78", "015f3b0ac8a1e2f0", "0000000000000000", "ffffffffffffffff",
            "015e8b1c2a9f3e70000000118d7d750", "A1C10CE0DD78", "5a00000f424g", "0123456789",
        ]

        @Test func idsAndRevsRoundTrip() {
            let (ids, revs) = (Self.ids, Self.revs)
            for id in ids {
                for rev in revs {
                    var node = Node(parent: 1, name: "n", kind: .file)
                    node.id = id
                    node.rev = rev
                    #expect(node.id == id)
                    #expect(node.rev == rev)
                    var other = node
                    #expect(other.sameIDAndRev(as: node))
                    other.rev = rev + "0"
                    #expect(!other.sameIDAndRev(as: node))
                    other.rev = rev
                    other.id = ""
                    #expect(other.sameIDAndRev(as: node) == id.isEmpty)
                    #expect(node.id == id, "a copy's change leaves the original alone")
                }
            }
        }

        /// The load sets `id` and `rev` from SQLite's bytes: the same node as from the strings,
        /// also over a spilled value and back.
        @Test func idsAndRevsFromBytesMatchTheStrings() {
            for id in Self.ids {
                for rev in Self.revs {
                    var fromStrings = Node(parent: 1, name: "n", kind: .file)
                    fromStrings.id = id
                    fromStrings.rev = rev
                    for start in ["id:x", "id:AAAAAAAAAAAAAAAAAAAAAA"] {
                        var fromBytes = Node(parent: 1, name: "n", kind: .file)
                        fromBytes.id = start
                        fromBytes.rev = start
                        Array(id.utf8).withUnsafeBufferPointer { fromBytes.setID(utf8: $0) }
                        Array(rev.utf8).withUnsafeBufferPointer { fromBytes.setRev(utf8: $0) }
                        #expect(fromBytes.id == id && fromBytes.rev == rev)
                        #expect(fromBytes.sameIDAndRev(as: fromStrings))
                    }
                }
            }
            var node = Node(parent: 1, name: "n", kind: .file)
            [0xFF, 0x69].withUnsafeBufferPointer { node.setID(utf8: $0) }
            #expect(
                node.id == String(decoding: [0xFF, 0x69], as: UTF8.self), "invalid UTF-8 is repaired, as text(_:) does")
        }

        /// Times pack into 32 bits from 1970 to early 2106; any other (a file dated 1601, or 9999,
        /// as some clients send) is kept whole in the spill, next to a spilled id or rev.
        @Test func timesRoundTripPackedOrSpilled() {
            let times: [Int64] = [
                0, 1, 1_764_547_200, Int64(UInt32.max) - 1, Int64(UInt32.max), Int64(UInt32.max) + 1, -1,
                -11_644_473_600, 253_402_300_799, .max, .min,
            ]
            for id in ["id:a4ayc_80_OEAAAAAAAAAXw", "id:short"] {
                for mtime in times {
                    for ctime in times {
                        var node = Node(parent: 1, name: "n", kind: .file)
                        node.id = id
                        node.rev = "015f3b0ac8a1e2f0"
                        node.mtime = mtime
                        node.ctime = ctime
                        #expect(node.mtime == mtime && node.ctime == ctime && node.id == id)
                        var other = node
                        other.mtime = 7
                        #expect(other.mtime == 7 && other.ctime == ctime && other.id == id)
                        #expect(node.mtime == mtime, "a copy's change leaves the original alone")
                        other.ctime = 8
                        other.rev = "015f3b0ac8a1e2f0"
                        #expect(other.mtime == 7 && other.ctime == 8 && other.id == id)
                        #expect(other.sameIDAndRev(as: node))
                    }
                }
            }
        }

        /// Each field leaves the spill on its own, in whatever order the fields are set (the store
        /// sets the times before the id and rev), and the spill goes once every field packs.
        @Test(arguments: [false, true]) func spilledFieldsComeAndGoInAnyOrder(timesFirst: Bool) {
            let (longID, longRev) = ("id:" + String(repeating: "x", count: 40), "0123456789abcdef0123")
            let (early, late): (Int64, Int64) = (-11_644_473_600, 253_402_300_799)
            var node = Node(parent: 1, name: "n", kind: .file)
            if timesFirst {
                (node.mtime, node.ctime) = (early, late)
                (node.id, node.rev) = (longID, longRev)
            } else {
                (node.id, node.rev) = (longID, longRev)
                (node.mtime, node.ctime) = (early, late)
            }
            #expect(node.id == longID && node.rev == longRev && node.mtime == early && node.ctime == late)
            node.id = "id:a4ayc_80_OEAAAAAAAAAXw"
            #expect(node.id == "id:a4ayc_80_OEAAAAAAAAAXw" && node.rev == longRev)
            #expect(node.mtime == early && node.ctime == late)
            node.rev = "015f3b0ac8a1e2f0"
            #expect(node.rev == "015f3b0ac8a1e2f0" && node.mtime == early && node.ctime == late && node.hasSpill)
            node.mtime = 1_764_547_200
            #expect(node.mtime == 1_764_547_200 && node.ctime == late && node.hasSpill)
            node.ctime = 1_764_547_201
            #expect(node.ctime == 1_764_547_201 && node.id == "id:a4ayc_80_OEAAAAAAAAAXw" && !node.hasSpill)
            node.rev = longRev
            #expect(node.rev == longRev && node.hasSpill && node.mtime == 1_764_547_200)
        }

        @Test func flagsAndHash() {
            var node = Node(parent: 1, name: "n", kind: .file)
            #expect(node.attached && node.isDownloadable && !node.provisional && node.contentHash == nil)
            let hash = ContentHash(bytes: (0..<32).map { UInt8($0) })
            node.contentHash = hash
            node.provisional = true
            node.isDownloadable = false
            #expect(node.contentHash == hash && node.provisional && !node.isDownloadable && node.attached)
            node.contentHash = nil
            node.attached = false
            #expect(node.contentHash == nil && !node.attached && node.provisional)
        }

        @Test func storeSpansChunks() {
            var store = NodeStore()
            let count = NodeStore.chunkSize * 2 + 3
            for i in 0..<count { store.append(Node(parent: UInt32(i), name: "", kind: .file)) }
            #expect(store.count == count && store.indices == 0..<count)
            store[NodeStore.chunkSize].size = 7
            #expect(store[NodeStore.chunkSize].size == 7 && store[NodeStore.chunkSize - 1].size == 0)
            #expect(store.indices.allSatisfy { store[$0].parent == UInt32($0) })
        }
    }
}
