// Linux passes a program's arguments as bytes, and a path is any bytes but NUL. Swift's
// `CommandLine.arguments` decodes them as UTF-8 with repair: an invalid byte becomes U+FFFD, so a
// mount point like `/home/ann/caf\xe9` (a Latin-1 name) would be checked, reported and suggested to
// `mkdir` as another path, `caf\u{FFFD}`, that does not exist. Until paths are carried as bytes
// through the mount (argv, the checks, the daemon's re-spawn, the mount table, the store's record
// of the mount point), an argument that is not UTF-8 is refused at once with that reason, its
// bytes shown escaped (never raw: they could be terminal control sequences).

#if canImport(Glibc)
    import Glibc
#endif

enum RawArguments {
    /// The first argument after the program's name that is not valid UTF-8, escaped for display.
    static func firstInvalid() -> String? {
        for index in 1..<Int(CommandLine.argc) {
            guard let pointer = CommandLine.unsafeArgv[index] else { continue }
            let bytes = UnsafeBufferPointer(start: UnsafeRawPointer(pointer).assumingMemoryBound(to: UInt8.self),
                                            count: strlen(pointer))
            if String(validating: bytes, as: UTF8.self) == nil { return escaped(bytes) }
        }
        return nil
    }

    /// Printable ASCII as it is, every other byte as \xNN.
    static func escaped(_ bytes: some Sequence<UInt8>) -> String {
        var out = ""
        for byte in bytes {
            if (0x20..<0x7F).contains(byte) && byte != UInt8(ascii: "\\") {
                out.unicodeScalars.append(Unicode.Scalar(byte))
            } else {
                let hex = String(byte, radix: 16)
                out += "\\x" + (hex.count == 1 ? "0" + hex : hex)
            }
        }
        return out
    }
}
