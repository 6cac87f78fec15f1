// Background mode without fork(): once the checks pass, the command starts itself again with
// --foreground in a new session (posix_spawn + setsid), stdout and stderr going to the log file,
// and waits on a pipe until the child says the mount is ready or why it failed. Forking a process
// that already runs Swift concurrency and libcurl threads is unsafe; spawning a fresh one is not.

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
            throw CommandFailure(code, parts[2].trimmingWhitespace())
        }
        var status: Int32 = 0
        waitpid(pid, &status, 0)
        throw CommandFailure(.failure, "the background daemon exited before mounting (see \(logFile))")
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
