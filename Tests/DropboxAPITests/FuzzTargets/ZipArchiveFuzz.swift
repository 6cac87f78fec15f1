// A files/download_zip reply body through ZipArchive, as FolderZips reads it (DropboxFS). Besides
// not crashing or reading outside the input (the address sanitizer watches the buffer):
//
// - every member's contents, when they come, are exactly its size, which is within the limit;
// - reading the same bytes again gives the same members and the same contents (no state kept);
// - a limit one byte below a member's size refuses that member, before anything is inflated.

import Foundation

@testable import DropboxAPI

enum ZipArchiveFuzz {
    /// The daemon's limit per member is the listed file's size; here, more than any input holds.
    static let limit: UInt64 = 1 << 20

    static func check(_ input: UnsafeBufferPointer<UInt8>) -> String? {
        let bytes = Array(input)
        guard let archive = try? ZipArchive(bytes) else { return nil }
        guard let again = try? ZipArchive(bytes), again.members == archive.members else {
            return "a second reading of the same bytes gave other members"
        }
        for member in archive.members.prefix(64) where !member.isDirectory {
            let contents = try? archive.contents(of: member, limit: limit)
            if let contents {
                if UInt64(contents.count) != member.size {
                    return "\(member.name): \(contents.count) bytes for a size of \(member.size)"
                }
                if (try? again.contents(of: member, limit: limit)) != contents {
                    return "\(member.name): a second reading gave other contents"
                }
            }
            if member.size > 0, (try? archive.contents(of: member, limit: member.size - 1)) != nil {
                return "\(member.name): contents of \(member.size) bytes within a limit of \(member.size - 1)"
            }
        }
        return nil
    }
}
