// libFuzzer's entry points for the targets in Tests/DropboxAPITests/FuzzTargets. scripts/fuzz
// compiles this file with that folder into one binary, linked with DropboxAPI, everything built with
// -sanitize=fuzzer,address; DROPBOXFS_FUZZ_TARGET names the target a run exercises.

#if canImport(Glibc)
    import Glibc
#endif

import Log

@testable import DropboxAPI

nonisolated(unsafe) private var target: FuzzTarget?

@_cdecl("LLVMFuzzerInitialize")
public func fuzzerInitialize(
    _ argc: UnsafeMutablePointer<CInt>, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>
) -> CInt {
    let name = getenv("DROPBOXFS_FUZZ_TARGET").map { String(cString: $0) } ?? ""
    guard let chosen = FuzzTarget(rawValue: name) else {
        let names = FuzzTarget.allCases.map(\.rawValue).joined(separator: ", ")
        let message = Array("dropboxfs-fuzz: set DROPBOXFS_FUZZ_TARGET to one of: \(names)\n".utf8)
        _ = message.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
        exit(2)
    }
    target = chosen
    // Limits that bite (a 429's absurd pause, a token lifetime) log a warning per input otherwise.
    Log.level = .error
    return 0
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzerTestOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    guard let target else { return 0 }
    let input = UnsafeBufferPointer(start: size == 0 ? nil : data, count: size)
    if let failure = target.check(input) {
        fatalError("\(target.rawValue): \(failure)")
    }
    return 0
}
