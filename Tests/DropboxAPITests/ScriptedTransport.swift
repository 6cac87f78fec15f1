// An in-process HTTPTransport for unit tests: records every request and answers from a handler,
// so request shapes and reply handling are tested without a network.

import DropboxAPI
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
