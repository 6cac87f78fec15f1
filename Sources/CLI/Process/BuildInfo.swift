// What `dropboxfs --version` (also `-V`, `version`), `dropboxfs status` and the daemon's first log
// line say about this build: the version, the commit baked in at build time (BuildInfoPlugin), and
// the versions of libfuse and libcurl this process runs with (asked of the libraries themselves,
// so a system upgrade shows).

import CCurl
import CFuse

enum BuildInfo {
    static let version = "0.9.0"
    /// `git rev-parse --short=12 HEAD` when built (with "-modified" for uncommitted changes), or
    /// "unknown" when built outside a git checkout.
    static let commit = buildCommit

    static var libfuseVersion: String { fuse_pkgversion().map { String(cString: $0) } ?? "unknown" }

    static var libcurlVersion: String {
        guard let info = curl_version_info(CURLVERSION_FOURTH), let version = info.pointee.version else { return "unknown" }
        var text = String(cString: version)
        if let ssl = info.pointee.ssl_version { text += " (\(String(cString: ssl)))" }
        return text
    }

    /// "dropboxfs 0.9.0 (commit 4b4622a1c2d3)".
    static var versionLine: String { "dropboxfs \(version) (commit \(commit))" }

    /// "libfuse 3.14.0, libcurl 7.88.1 (OpenSSL/3.0.15)".
    static var librariesLine: String { "libfuse \(libfuseVersion), libcurl \(libcurlVersion)" }

    /// One line for logs: both of the above.
    static var summary: String { "\(versionLine); \(librariesLine)" }

    static func printVersion() -> ExitCode {
        printOut(versionLine + "\n" + librariesLine)
        return .success
    }
}
