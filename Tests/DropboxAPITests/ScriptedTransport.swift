// An in-process HTTPTransport for unit tests: records every request and answers from a handler,
// so request shapes and reply handling are tested without a network. Also the other test helpers:
// a manual sleeper, log capture, and a socket listener that misbehaves in ways the fake server
// cannot.

import DropboxAPI
import Foundation
import Glibc
import Log
import Synchronization

final class ScriptedTransport: HTTPTransport {
    typealias Handler = @Sendable (HTTPRequest, Int) async throws(DropboxError) -> HTTPResponse

    /// Requests received, in order (guarded by the mutex).
    private let received = Mutex<[HTTPRequest]>([])
    private let handler: Handler

    /// `handler` gets each request and its 0-based index.
    init(_ handler: @escaping Handler) {
        self.handler = handler
    }

    /// Answers the requests in order from `replies`; the last one repeats.
    convenience init(replies: [HTTPResponse]) {
        self.init { _, index throws(DropboxError) in replies[min(index, replies.count - 1)] }
    }

    var requests: [HTTPRequest] { received.withLock { $0 } }

    func send(_ request: HTTPRequest) async throws(DropboxError) -> HTTPResponse {
        let index = received.withLock { list in
            list.append(request)
            return list.count - 1
        }
        return try await handler(request, index)
    }
}

extension HTTPResponse {
    static func json(_ text: String, status: Int = 200, headers: [(String, String)] = []) -> HTTPResponse {
        var all = HTTPHeaders()
        all.add("Content-Type", "application/json")
        for (name, value) in headers { all.add(name, value) }
        return HTTPResponse(status: status, headers: all, body: Array(text.utf8))
    }

    static func text(_ text: String, status: Int, headers: [(String, String)] = []) -> HTTPResponse {
        var all = HTTPHeaders()
        all.add("Content-Type", "text/plain; charset=utf-8")
        for (name, value) in headers { all.add(name, value) }
        return HTTPResponse(status: status, headers: all, body: Array(text.utf8))
    }
}

/// A Sleeper whose clock only moves when someone sleeps: sleeping returns at once and records
/// the wait, so retry and pause logic runs without real time passing.
final class ManualSleeper: Sleeper {
    private struct State {
        var now = ContinuousClock.now
        var sleeps: [Duration] = []
    }

    /// Guards the fake time and the record of sleeps.
    private let state = Mutex(State())

    var now: ContinuousClock.Instant { state.withLock { $0.now } }
    var sleeps: [Duration] { state.withLock { $0.sleeps } }

    func advance(_ d: Duration) {
        state.withLock { $0.now += d }
    }

    func sleep(until deadline: ContinuousClock.Instant) async throws(DropboxError) {
        state.withLock { s in
            if deadline > s.now {
                s.sleeps.append(deadline - s.now)
                s.now = deadline
            }
        }
        await Task.yield()
    }
}

/// Captures Log lines for the duration of `body` at debug level.
func capturingLog<T>(_ body: () async throws -> T) async rethrows -> (T, [String]) {
    let lines = Mutex<[String]>([])
    let previous = Log.level
    Log.level = .debug
    let sink = Log.addSink { level, text in lines.withLock { $0.append("\(level.label): \(text)") } }
    defer {
        Log.removeSink(sink)
        Log.level = previous
    }
    let result = try await body()
    return (result, lines.withLock { $0 })
}

/// A TCP listener on 127.0.0.1 that reads a connection's first bytes (a TLS ClientHello, for an
/// https:// URL) and then resets it (SO_LINGER 0): a connection reset during the TLS handshake.
final class ResettingListener: Sendable {
    /// With `reply`, each connection gets those bytes and an orderly close (FIN) instead of a reset.
    let reply: [UInt8]?
    let fd: Int32
    let port: UInt16
    private let accepted = Atomic<Int>(0)

    var connections: Int { accepted.load(ordering: .relaxed) }

    init(reply: [UInt8]? = nil) {
        self.reply = reply
        let sock = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        fd = sock
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        addr.sin_port = 0
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(sock, $0, len) } }
        _ = listen(sock, 16)
        _ = withUnsafeMutablePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(sock, $0, &len) }
        }
        port = UInt16(bigEndian: addr.sin_port)
        Thread { [self, fd = sock] in
            while true {
                let c = accept(fd, nil, nil)
                if c < 0 { return }
                accepted.add(1, ordering: .relaxed)
                var buffer = [UInt8](repeating: 0, count: 4096)
                _ = read(c, &buffer, buffer.count)
                if let reply = self.reply {
                    reply.withUnsafeBytes { raw in
                        var sent = 0
                        while sent < raw.count {
                            let n = write(c, raw.baseAddress! + sent, raw.count - sent)
                            if n <= 0 { break }
                            sent += n
                        }
                    }
                    close(c)
                    continue
                }
                var l = linger(l_onoff: 1, l_linger: 0)
                _ = setsockopt(c, SOL_SOCKET, SO_LINGER, &l, socklen_t(MemoryLayout<linger>.size))
                close(c)
            }
        }.start()
    }

    func stop() {
        shutdown(fd, Int32(SHUT_RDWR))
        close(fd)
    }
}
