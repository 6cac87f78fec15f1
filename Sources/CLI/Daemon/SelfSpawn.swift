// Starting this executable again as a separate process, in a session of its own: the background
// daemon (Daemon.swift) and the mount guard (MountGuard.swift). posix_spawn rather than fork(),
// because forking a process that already runs Swift concurrency and libcurl threads is unsafe.

import SystemCalls

#if canImport(Glibc)
    import Glibc
#endif

enum SelfSpawn {
    /// glibc's POSIX_SPAWN_SETSID (hidden behind _GNU_SOURCE from Swift).
    private static let posixSpawnSetsid: Int16 = 0x80

    /// A pipe whose ends are both close-on-exec (a spawn's file actions dup the one it passes).
    static func pipe() -> (read: Int32, write: Int32)? {
        var fds: [Int32] = [0, 0]
        guard Glibc.pipe(&fds) == 0 else { return nil }
        guard fcntl(fds[0], F_SETFD, FD_CLOEXEC) == 0, fcntl(fds[1], F_SETFD, FD_CLOEXEC) == 0 else {
            close(fds[0])
            close(fds[1])
            return nil
        }
        return (fds[0], fds[1])
    }

    /// Reads `fd` (a pipe end) until end of file, an error, or `enough` says the bytes so far will
    /// do; EINTR is retried.
    static func read(_ fd: Int32, until enough: ([UInt8]) -> Bool) -> [UInt8] {
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while !enough(bytes) {
            let read = buffer.withUnsafeMutableBytes { try? FileDescriptor(rawValue: fd).read(into: $0) }
            guard let n = read, n > 0 else { break }
            bytes.append(contentsOf: buffer[0..<n])
        }
        return bytes
    }

    /// Runs /proc/self/exe with `arguments` (argv[0] included) and `environment` ("NAME=value")
    /// in a new session; `files` sets up its descriptors. The pid, or the errno of the failure.
    static func start(
        _ arguments: [String], environment: [String], files: (inout posix_spawn_file_actions_t) -> Void
    ) -> Result<pid_t, SpawnError> {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        files(&actions)
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        posix_spawnattr_setflags(&attributes, posixSpawnSetsid)
        let argv = arguments.map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        let envp = environment.map { strdup($0) } + [nil]
        defer { envp.forEach { free($0) } }
        var pid: pid_t = 0
        let rc = posix_spawn(&pid, "/proc/self/exe", &actions, &attributes, argv, envp)
        return rc == 0 ? .success(pid) : .failure(SpawnError(code: rc))
    }

    /// This process's environment as "NAME=value" strings.
    static func currentEnvironment() -> [String] {
        var result: [String] = []
        var index = 0
        while let entry = environ[index] {
            result.append(String(cString: entry))
            index += 1
        }
        return result
    }

    struct SpawnError: Error {
        var code: Int32
        var message: String { String(cString: strerror(code)) }
    }
}
