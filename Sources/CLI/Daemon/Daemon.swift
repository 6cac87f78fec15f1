// Background mode without fork(): once the checks pass, the command starts itself again with
// --foreground in a new session (posix_spawn + setsid), stdout and stderr going to the log file,
// and waits on a pipe until the child says the mount is ready (the kernel's INIT was answered:
// FUSEAdapter/KernelInit.swift) or why it failed. Forking a process
// that already runs Swift concurrency and libcurl threads is unsafe; spawning a fresh one is not.
// When the child fails, what it wrote to the log that explains it (warnings, errors, and lines of
// libfuse or fusermount3) is shown on the terminal above the one-line reason, so no failure
// points at a message the user cannot see.

import DropboxAPI
import Log
import SystemCalls

#if canImport(Glibc)
    import Glibc
#endif

enum Daemon {
    static let readyVariable = "DROPBOXFS_READY_FD"
    static let readyFD: Int32 = 3

    /// True when this process is the background child started by `spawnAndWait`.
    static var isChild: Bool { getenv(readyVariable) != nil }

    /// In the child, first thing: keep the ready pipe and inherited descriptors (the parent's
    /// sockets) away from processes the daemon starts, such as libfuse's fusermount3 helper.
    static func sealInheritedDescriptors() {
        guard isChild else { return }
        _ = fcntl(readyFD, F_SETFD, FD_CLOEXEC)
        for fd in Int32(4)..<Int32(1024) { close(fd) }
    }

    /// Starts the daemon and returns once it reports the mount ready; throws its failure otherwise.
    static func spawnAndWait(arguments: [String], logFile: String) throws(CommandFailure) {
        let logStart = fileSize(logFile)
        guard let (readEnd, writeEnd) = SelfSpawn.pipe() else {
            throw CommandFailure(.failure, "cannot create a pipe: \(String(cString: strerror(errno)))")
        }
        // The token (if it came from the environment) travels over a pipe of its own, never in the
        // daemon's environment (Secrets.swift). It is small, so one write fits the pipe's buffer.
        let token = Secrets.environmentToken
        let tokenPipe = token == nil ? nil : SelfSpawn.pipe()
        if token != nil && tokenPipe == nil {
            throw CommandFailure(.failure, "cannot create a pipe: \(String(cString: strerror(errno)))")
        }
        var environment = SelfSpawn.currentEnvironment() + ["\(readyVariable)=\(readyFD)"]
        if tokenPipe != nil { environment.append("\(Secrets.tokenFDVariable)=\(Secrets.tokenFD)") }
        let started = SelfSpawn.start(["dropboxfs", "mount"] + arguments + ["--foreground"], environment: environment) {
            actions in
            posix_spawn_file_actions_adddup2(&actions, writeEnd, readyFD)
            if let tokenPipe { posix_spawn_file_actions_adddup2(&actions, tokenPipe.read, Secrets.tokenFD) }
            posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
            // Never through a symlink someone planted at the log's path; readable by the user only.
            posix_spawn_file_actions_addopen(&actions, 1, logFile, O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW, 0o600)
            posix_spawn_file_actions_adddup2(&actions, 1, 2)
        }
        close(writeEnd)
        if let tokenPipe, let token {
            close(tokenPipe.read)
            _ = token.withCString { write(tokenPipe.write, $0, strlen($0)) }
            close(tokenPipe.write)
        }
        defer { close(readEnd) }
        let pid: pid_t
        switch started {
        case .success(let child): pid = child
        case .failure(let error):
            throw CommandFailure(.failure, "cannot start the background daemon: \(error.message)")
        }
        // One line answers; the pipe may stay open after it (helpers the daemon starts inherit it).
        let message = SelfSpawn.read(readEnd) { $0.contains(UInt8(ascii: "\n")) }
        let text = String(decoding: message, as: UTF8.self)
        if text.hasPrefix("ready") { return }
        // "fail <code> <message>"
        let parts = text.split(separator: " ", maxSplits: 2).map(String.init)
        if parts.count == 3, parts[0] == "fail", let raw = Int32(parts[1]), let code = ExitCode(rawValue: raw) {
            let message = parts[2].trimmingWhitespace()
            showExplanation(logFile, from: logStart, except: message)
            throw CommandFailure(code, message)
        }
        // A failed wait leaves the status at 0, as it always did.
        let status = (try? waitForExit(pid)) ?? 0
        showExplanation(logFile, from: logStart, except: nil)
        let how = status & 0x7f == 0 ? "with status \((status >> 8) & 0xff)" : "killed by signal \(status & 0x7f)"
        throw CommandFailure(.failure, "the background daemon exited \(how) before mounting (its log: \(logFile))")
    }

    private static func fileSize(_ path: String) -> Int {
        var st = stat()
        return stat(path, &st) == 0 ? Int(st.st_size) : 0
    }

    /// Prints the lines the daemon logged since `offset` that explain a failure: its warnings and
    /// errors, and anything not from dropboxfs's logger (libfuse, fusermount3, a crash report);
    /// the last 20 of them, escaped. `except`: the failure's own message, printed after.
    private static func showExplanation(_ logFile: String, from offset: Int, except message: String?) {
        guard let handle = fopen(logFile, "r") else { return }
        defer { fclose(handle) }
        if offset > 0 && offset <= fileSize(logFile) { fseek(handle, offset, SEEK_SET) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while bytes.count < 4 << 20 {
            let n = fread(&buffer, 1, buffer.count, handle)
            if n <= 0 { break }
            bytes.append(contentsOf: buffer[0..<n])
        }
        let lines = String(decoding: bytes, as: UTF8.self).split(separator: "\n").map(String.init)
        let telling = lines.filter { line in
            if let message, line == "dropboxfs: \(Log.escaped(message))" { return false }
            if line.contains(" dropboxfs[info]: ") || line.contains(" dropboxfs[debug]: ") { return false }
            return !line.trimmingWhitespace().isEmpty
        }
        for line in telling.suffix(20) {
            let text = Log.escaped(line) + "\n"
            _ = text.withCString { write(2, $0, strlen($0)) }
        }
    }

    /// In the child: tells the waiting parent that the mount is ready.
    static func reportReady() {
        report("ready\n")
    }

    /// In the child: tells the waiting parent why mounting failed.
    static func reportFailure(_ failure: CommandFailure) {
        report("fail \(failure.code.rawValue) \(failure.message)\n")
    }

    private static func report(_ text: String) {
        guard isChild else { return }
        _ = text.withCString { write(readyFD, $0, strlen($0)) }
        close(readyFD)
        unsetenv(readyVariable)
    }
}
