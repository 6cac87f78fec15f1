// Every input the fuzzers keep is replayed here on every run, through the same checks the fuzz
// binary runs (FuzzTargets/): the crashes found so far (Fuzz/regressions/TARGET, each fixed when it
// was kept) and the seed corpus (Fuzz/corpus/TARGET, replies of the fake server). A decoder that
// breaks on one of them again fails here, without libFuzzer. scripts/fuzz is the search for new ones.

import Foundation
import Testing

@testable import DropboxAPI

@Suite struct FuzzRegressionTests {
    static let fuzzFolder = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fuzz")

    static func inputs(_ kind: String, _ target: FuzzTarget) -> [URL] {
        let folder = fuzzFolder.appendingPathComponent(kind).appendingPathComponent(target.rawValue)
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []
        return names.sorted().filter { !$0.hasPrefix(".") }.map { folder.appendingPathComponent($0) }
    }

    @Test(arguments: FuzzTarget.allCases)
    func keptCrashesStayFixed(target: FuzzTarget) throws {
        for url in Self.inputs("regressions", target) {
            let bytes = try [UInt8](Data(contentsOf: url))
            let failure = target.check(bytes)
            #expect(failure == nil, "\(target.rawValue)/\(url.lastPathComponent): \(failure ?? "")")
        }
    }

    @Test(arguments: FuzzTarget.allCases)
    func theSeedCorpusPassesItsChecks(target: FuzzTarget) throws {
        let seeds = Self.inputs("corpus", target)
        #expect(seeds.count >= 5, "Fuzz/corpus/\(target.rawValue) holds \(seeds.count) inputs: run Fuzz/make-corpus")
        for url in seeds {
            let bytes = try [UInt8](Data(contentsOf: url))
            let failure = target.check(bytes)
            #expect(failure == nil, "\(target.rawValue)/\(url.lastPathComponent): \(failure ?? "")")
        }
    }

    /// The list_folder seeds hold what the checks are about: pages both decoders read, entries of
    /// each kind, and pages with escapes and names outside ASCII.
    @Test func theListingSeedsCoverEntryKinds() throws {
        var kinds = Set<String>()
        var pages = 0
        for url in Self.inputs("corpus", .listFolder) {
            let bytes = try [UInt8](Data(contentsOf: url))
            guard let page = try? ListFolderResult.decode(json: bytes) else { continue }
            pages += 1
            for entry in page.entries {
                switch entry {
                case .file(let f): kinds.insert(f.symlinkTarget != nil ? "symlink" : f.isDownloadable ? "file" : "export")
                case .folder(let f): kinds.insert(f.sharedFolderId != nil ? "shared folder" : "folder")
                case .deleted: kinds.insert("deleted")
                }
                if entry.name.utf8.contains(where: { $0 >= 0x80 }) { kinds.insert("non-ASCII name") }
            }
        }
        #expect(pages >= 20)
        #expect(kinds == ["file", "symlink", "export", "folder", "shared folder", "deleted", "non-ASCII name"])
    }

    /// What "agree" means in the differential checks: Strings compare by their bytes, so a decoder
    /// that normalized a name would be caught, where Swift's `==` would call the two equal.
    @Test func exactRenderingTellsCanonicallyEquivalentNamesApart() {
        let composed = "caf\u{E9}"
        let decomposed = "cafe\u{301}"
        #expect(composed == decomposed)
        #expect(Exact.render(composed) != Exact.render(decomposed))
        let a = Metadata.deleted(DeletedMetadata(name: composed, pathLower: nil, pathDisplay: nil))
        let b = Metadata.deleted(DeletedMetadata(name: decomposed, pathLower: nil, pathDisplay: nil))
        #expect(a == b)
        #expect(Exact.render(a) != Exact.render(b))
        #expect(Exact.render(Optional<String>.none) != Exact.render(Optional("")))
    }

    /// The independent grammar check the scanner is compared with.
    @Test(arguments: [
        (#"{"a":[1,-0.5e+3,true,false,null,"x\u00e9\n"]}"#, true, StrictJSON.Verdict.valid),
        (#" [] "#, true, .valid), (#""\q""#, true, .valid), (#""\q""#, false, .invalid),
        (#"[1,]"#, true, .invalid), (#"01"#, true, .invalid), (#"1."#, true, .invalid), (#"{"a" 1}"#, true, .invalid),
        (#""unterminated"#, true, .invalid), ("", true, .invalid), (#"[[[]]]"#, true, .valid),
        (String(repeating: "[", count: 513) + String(repeating: "]", count: 513), true, .tooDeep),
        (String(repeating: "[", count: 512) + String(repeating: "]", count: 512), true, .valid),
    ])
    func strictJSONVerdicts(text: String, lazy: Bool, verdict: StrictJSON.Verdict) {
        let bytes = Array(text.utf8)
        #expect(bytes.withUnsafeBufferPointer { StrictJSON.check($0, lazyStrings: lazy) } == verdict)
    }

    @Test func strictStringsRefuseControlCharactersAndInvalidUTF8() {
        for bytes: [UInt8] in [[0x22, 0x01, 0x22], [0x22, 0xFF, 0x22], [0x22, 0xC3, 0x22]] {
            #expect(bytes.withUnsafeBufferPointer { StrictJSON.check($0, lazyStrings: false) } == .invalid)
            #expect(bytes.withUnsafeBufferPointer { StrictJSON.check($0, lazyStrings: true) } == .valid)
        }
    }
}
