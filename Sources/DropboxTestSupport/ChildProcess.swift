// A child process started with posix_spawn and a clean signal state. Foundation's Process passes
// on the spawning thread's signal mask, and test runners block SIGTERM there, so a fake server
// started that way could never be stopped; here the mask is emptied and SIGTERM/SIGINT reset.

import Foundation

#if canImport(Glibc)
    import Glibc
#endif

struct ChildProcess: Sendable {
    let pid: pid_t

    /// Runs `arguments[0]` found on PATH, with stdout discarded and stderr appended to `stderrPath`.
    static func spawn(_ arguments: [String], environment: [String: String], stderrPath: String) throws -> ChildProcess {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 2, stderrPath, O_WRONLY | O_APPEND | O_CREAT, 0o644)

        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var empty = sigset_t()
        sigemptyset(&empty)
        posix_spawnattr_setsigmask(&attributes, &empty)
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for signal in [SIGTERM, SIGINT, SIGHUP] { sigaddset(&defaults, signal) }
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))

        let argv = arguments.map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            for pointer in argv + envp { free(pointer) }
        }
        var pid: pid_t = 0
        let code = posix_spawnp(&pid, arguments[0], &actions, &attributes, argv, envp)
        guard code == 0 else {
            throw FakeDropboxServerError("could not run \(arguments[0]): \(String(cString: strerror(code)))")
        }
        return ChildProcess(pid: pid)
    }

    /// The exit status if the child has ended (reaping it), else nil.
    func exitStatus() -> Int32? {
        var status: Int32 = 0
        guard waitpid(pid, &status, WNOHANG) == pid else { return nil }
        return (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
    }

    /// SIGTERM, then SIGKILL if the child has not ended within `grace`; always reaps it.
    func terminate(grace: Duration = .seconds(3)) {
        kill(pid, SIGTERM)
        let deadline = ContinuousClock.now + grace
        while ContinuousClock.now < deadline {
            if exitStatus() != nil { return }
            usleep(10_000)
        }
        kill(pid, SIGKILL)
        var status: Int32 = 0
        waitpid(pid, &status, 0)
    }
}
