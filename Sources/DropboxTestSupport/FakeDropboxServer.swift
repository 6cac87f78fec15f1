// Runs the project's fake Dropbox (tools/fakedropbox, Python) as a child process for Swift tests:
// starts it on a free port, waits for its port file, points all four endpoints at it, wraps its
// /_control/ API, and ends the process in stop() or deinit.

import DropboxAPI
import Foundation
import Synchronization

public struct FakeDropboxServerError: Error, CustomStringConvertible {
    public var description: String

    public init(_ description: String) {
        self.description = description
    }
}

public final class FakeDropboxServer: Sendable {
    public static let defaultToken = "test-token"
    public static let defaultAppKey = "fakeappkey"

    /// `http://127.0.0.1:PORT`, or `https://` when started with `--make-certs DIR`.
    public let baseURL: String
    public let port: Int
    public let endpoints: DropboxEndpoints
    /// The access token the fake accepts (its `--token`).
    public let token: String
    public let appKey: String
    /// Talks to the control API; also usable by tests for their own clients (it trusts the
    /// fake's CA when there is one).
    public let transport: CurlTransport
    /// `DIR/ca.pem` when started with `--make-certs DIR`.
    public let caBundlePath: String?
    /// The child process until stop() takes it (guarded by the mutex, so it is stopped once).
    private let child: Mutex<ChildProcess?>
    private let workDirectory: URL

    /// Starts the fake with extra command-line `arguments` (`--synthetic 100`, `--latency-ms 5`, ...).
    /// With `--make-certs DIR` it serves HTTPS and `transport` trusts `DIR/ca.pem`.
    public static func start(
        arguments: [String] = [], token: String = defaultToken, appKey: String = defaultAppKey,
        timeout: Duration = .seconds(30)
    ) async throws -> FakeDropboxServer {
        let root = repositoryRoot()
        let package = root.appendingPathComponent("tools/fakedropbox")
        guard FileManager.default.fileExists(atPath: package.appendingPathComponent("fakedropbox/__main__.py").path)
        else {
            throw FakeDropboxServerError("the fake server is missing: no \(package.path)/fakedropbox/__main__.py")
        }
        let work = FileManager.default.temporaryDirectory.appendingPathComponent("fakedropbox-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        let portFile = work.appendingPathComponent("port")
        let logFile = work.appendingPathComponent("stderr.log")
        var environment = ProcessInfo.processInfo.environment
        environment["PYTHONPATH"] = package.path
        environment["PYTHONDONTWRITEBYTECODE"] = "1"
        let commandLine =
            [
                "python3", "-c", launcher, "--port", "0", "--port-file", portFile.path, "--quiet",
                "--token", token, "--app-key", appKey,
            ] + arguments
        let child: ChildProcess
        do {
            child = try ChildProcess.spawn(commandLine, environment: environment, stderrPath: logFile.path)
        } catch {
            try? FileManager.default.removeItem(at: work)
            throw FakeDropboxServerError("could not start python3 for the fake server: \(error)")
        }

        let deadline = ContinuousClock.now + timeout
        while true {
            if let text = try? String(contentsOf: portFile, encoding: .utf8),
                let port = Int(text.trimmingCharacters(in: .whitespacesAndNewlines))
            {
                let certs = arguments.firstIndex(of: "--make-certs").flatMap {
                    arguments.indices.contains($0 + 1) ? arguments[$0 + 1] : nil
                }
                return FakeDropboxServer(
                    child: child, port: port, token: token, appKey: appKey, work: work,
                    caBundlePath: certs.map { URL(fileURLWithPath: $0).appendingPathComponent("ca.pem").path })
            }
            if let status = child.exitStatus() {
                let log = (try? String(contentsOf: logFile, encoding: .utf8)) ?? ""
                try? FileManager.default.removeItem(at: work)
                let why = status == 127 ? "python3 was not found" : "it exited with status \(status)"
                throw FakeDropboxServerError("the fake server did not start (\(why)): \(log)")
            }
            if ContinuousClock.now > deadline {
                child.terminate()
                try? FileManager.default.removeItem(at: work)
                throw FakeDropboxServerError("the fake server wrote no port file within \(timeout)")
            }
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    private init(child: ChildProcess, port: Int, token: String, appKey: String, work: URL, caBundlePath: String?) {
        self.child = Mutex(child)
        self.port = port
        self.baseURL = "\(caBundlePath == nil ? "http" : "https")://127.0.0.1:\(port)"
        self.endpoints = DropboxEndpoints(all: baseURL)
        self.token = token
        self.appKey = appKey
        self.workDirectory = work
        self.caBundlePath = caBundlePath
        self.transport = CurlTransport(configuration: .init(caBundlePath: caBundlePath))
    }

    deinit {
        stop()
    }

    /// Ends the fake process and removes its files; later calls do nothing.
    public func stop() {
        guard
            let child = self.child.withLock({ c in
                defer { c = nil }
                return c
            })
        else { return }
        child.terminate()
        try? FileManager.default.removeItem(at: workDirectory)
    }

    /// `python3 -m fakedropbox`, plus a thread that ends the fake once its parent is gone, so a
    /// test process that crashes or exits without stop() leaves no server behind.
    private static let launcher = """
        import os, runpy, sys, threading, time
        parent = os.getppid()
        def watch():
            while os.getppid() == parent:
                time.sleep(0.5)
            os._exit(0)
        threading.Thread(target=watch, daemon=True).start()
        sys.argv[0] = "fakedropbox"
        runpy.run_module("fakedropbox", run_name="__main__", alter_sys=True)
        """

    /// The repository holding this file: three levels above Sources/DropboxTestSupport/<file>.
    static func repositoryRoot() -> URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
    }
}
