// Exit codes of the dropboxfs command, documented in `dropboxfs --help` and README.md so scripts and
// service managers can tell failures apart.

import DropboxAPI
import Log
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

enum ExitCode: Int32 {
    case success = 0
    /// Any other failure (an unexpected error while running).
    case failure = 1
    /// Bad command line.
    case usage = 2
    /// The mount point is missing, not a folder, not empty, or already mounted.
    case mountPoint = 3
    /// No credentials, or Dropbox rejected them.
    case credentials = 4
    /// Dropbox (or the configured server) cannot be reached.
    case unreachable = 5
    /// FUSE is not available (/dev/fuse, fusermount3).
    case fuseUnavailable = 6
    /// A cache or store folder is not the daemon's user's own, or other users may write into it
    /// (LocalTrust.swift).
    case localFolder = 7
    /// The shared link has expired or does not exist (Dropbox answers the same for both).
    case linkNotFound = 8
    /// The shared link refused the password given.
    case linkPassword = 9
    /// The shared link refused access: it needs a password, or is not open to this account.
    case linkAccessDenied = 10
    /// A shared link of a kind that cannot be mounted.
    case linkUnsupported = 11
}

/// A failure that ends the command with a one-line message and an exit code.
struct CommandFailure: Error, CustomStringConvertible {
    var code: ExitCode
    var message: String

    init(_ code: ExitCode, _ message: String) {
        self.code = code
        self.message = message
    }

    var description: String { message }
}

/// One line on stderr, "dropboxfs: message", escaped like a log line (Log.escaped).
func printError(_ message: String) {
    let line = "dropboxfs: \(Log.escaped(message))\n"
    _ = line.withCString { write(ErrorOutput.descriptor.load(ordering: .relaxed), $0, strlen($0)) }
}

/// Where the command's own messages go: stderr, or the terminal stderr was before the log was
/// sent to --log-file in the foreground (LogOptions.sendStderr), so a failure is still seen.
enum ErrorOutput {
    static let descriptor = Atomic<Int32>(2)
}

/// Text on stdout, each of its lines escaped like a log line (help texts have several).
func printOut(_ message: String) {
    let line = message.split(separator: "\n", omittingEmptySubsequences: false).map { Log.escaped(String($0)) }
        .joined(separator: "\n") + "\n"
    _ = line.withCString { write(1, $0, strlen($0)) }
}
