// Where the access token comes from: --access-token-file, else DROPBOXFS_ACCESS_TOKEN. The token is
// never printed, logged, or put on a command line (child processes get it through the environment
// or the file).

import DropboxAPI

#if canImport(Glibc)
    import Glibc
#endif

enum Credentials {
    static func accessToken(file: String?, environment: [String: String]) throws(CommandFailure) -> String {
        if let file {
            guard let handle = fopen(file, "r") else {
                throw CommandFailure(.credentials, "cannot read access token file \(file): \(String(cString: strerror(errno)))")
            }
            defer { fclose(handle) }
            var bytes: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 4096)
            while true {
                let n = fread(&buffer, 1, buffer.count, handle)
                if n <= 0 { break }
                bytes.append(contentsOf: buffer[0..<n])
                if bytes.count > 64 * 1024 { break }
            }
            let token = String(decoding: bytes, as: UTF8.self).trimmingWhitespace()
            guard !token.isEmpty else { throw CommandFailure(.credentials, "access token file \(file) is empty") }
            return token
        }
        if let token = environment["DROPBOXFS_ACCESS_TOKEN"]?.trimmingWhitespace(), !token.isEmpty {
            return token
        }
        throw CommandFailure(
            .credentials,
            "no Dropbox credentials: set DROPBOXFS_ACCESS_TOKEN or pass --access-token-file FILE")
    }
}

extension String {
    func trimmingWhitespace() -> String {
        let scalars = unicodeScalars
        guard let first = scalars.firstIndex(where: { !$0.properties.isWhitespace }) else { return "" }
        let last = scalars.lastIndex(where: { !$0.properties.isWhitespace })!
        return String(scalars[first...last])
    }
}
