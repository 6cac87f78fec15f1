// The thread behind CurlTransport: a queue of submitted transfers (guarded by `state`), and one
// thread that moves them into a curl_multi handle, drives it with curl_multi_poll, ends transfers
// that stall, and resumes each caller's continuation when its transfer ends. Other threads only
// touch the queue and call curl_multi_wakeup, which libcurl documents as safe from any thread.

import CCurl
import CShim
import Foundation
import Synchronization

final class CurlMultiLoop: Sendable {
    typealias Completion = CheckedContinuation<Result<HTTPResponse, DropboxError>, Never>

    struct Submitted: Sendable {
        var id: UInt64
        var request: HTTPRequest
        var completion: Completion
    }

    private struct State {
        /// Transfers submitted but not yet handed to libcurl.
        var queue: [Submitted] = []
        /// Ids whose tasks were cancelled after their transfer left the queue.
        var cancelled: Set<UInt64> = []
        var stopping = false
        /// False once the loop thread has freed the multi handle: no more wakeups then.
        var multiAlive = true
    }

    /// The multi handle pointer, shared only so that other threads can call curl_multi_wakeup.
    private struct MultiHandle: @unchecked Sendable {
        let raw: UnsafeMutableRawPointer
    }

    /// The queue, cancellations and shutdown flag: every access holds this mutex.
    private let state = Mutex(State())
    private let nextId = Atomic<UInt64>(1)
    private let multi: MultiHandle
    private let configuration: CurlTransport.Configuration

    init(configuration: CurlTransport.Configuration) {
        guard let raw = curl_multi_init() else { fatalError("curl_multi_init failed") }
        _ = dbx_multi_setopt_long(raw, CURLMOPT_MAXCONNECTS, configuration.maxCachedConnections)
        multi = MultiHandle(raw: raw)
        self.configuration = configuration
        let thread = Thread { [self] in run() }
        thread.name = "dropboxfs-curl"
        thread.start()
    }

    /// Runs one transfer; cancelling the calling task removes it and yields `.transport(.cancelled)`.
    func perform(_ request: HTTPRequest) async -> Result<HTTPResponse, DropboxError> {
        let id = nextId.wrappingAdd(1, ordering: .relaxed).oldValue
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (completion: Completion) in
                let accepted = state.withLock { s -> Bool in
                    guard !s.stopping, !Task.isCancelled else { return false }
                    s.queue.append(Submitted(id: id, request: request, completion: completion))
                    curl_multi_wakeup(multi.raw)
                    return true
                }
                if !accepted { completion.resume(returning: .failure(DropboxError.cancelled)) }
            }
        } onCancel: {
            cancel(id)
        }
    }

    /// Asks the thread to fail every transfer and exit.
    func stop() {
        state.withLock { s in
            s.stopping = true
            if s.multiAlive { curl_multi_wakeup(multi.raw) }
        }
    }

    private func cancel(_ id: UInt64) {
        let queued = state.withLock { s -> Submitted? in
            if let index = s.queue.firstIndex(where: { $0.id == id }) {
                return s.queue.remove(at: index)
            }
            s.cancelled.insert(id)
            if s.multiAlive { curl_multi_wakeup(multi.raw) }
            return nil
        }
        queued?.completion.resume(returning: .failure(DropboxError.cancelled))
    }

    // MARK: the loop thread

    private func run() {
        // Transfers inside libcurl, by easy handle; only this thread touches it.
        var active: [UnsafeMutableRawPointer: CurlEasyTransfer] = [:]
        while true {
            let (submitted, cancelled, stopping) = state.withLock { s in
                defer {
                    s.queue.removeAll()
                    s.cancelled.removeAll()
                }
                return (s.queue, s.cancelled, s.stopping)
            }
            for item in submitted {
                start(item, into: &active)
            }
            for (handle, transfer) in active where cancelled.contains(transfer.id) {
                active[handle] = nil
                curl_multi_remove_handle(multi.raw, handle)
                transfer.abandon(.cancelled, "request cancelled")
            }
            if stopping {
                for (handle, transfer) in active {
                    curl_multi_remove_handle(multi.raw, handle)
                    transfer.abandon(.cancelled, "transport shut down")
                }
                active.removeAll()  // frees the easy handles before their multi handle
                state.withLock { s in
                    s.multiAlive = false
                    curl_multi_cleanup(multi.raw)
                }
                return
            }
            var running: Int32 = 0
            curl_multi_perform(multi.raw, &running)
            collectFinished(from: &active)
            let nextStall = endStalled(in: &active)
            var ready: Int32 = 0
            curl_multi_poll(multi.raw, nil, 0, Self.pollMilliseconds(until: nextStall), &ready)
        }
    }

    /// Fails transfers that received nothing within their stall limit; returns the earliest
    /// stall deadline of those still running.
    private func endStalled(in active: inout [UnsafeMutableRawPointer: CurlEasyTransfer]) -> ContinuousClock.Instant? {
        let now = ContinuousClock.now
        var next: ContinuousClock.Instant?
        for (handle, transfer) in active {
            guard let deadline = transfer.stallDeadline else { continue }
            if deadline <= now {
                active[handle] = nil
                curl_multi_remove_handle(multi.raw, handle)
                transfer.abandon(.timeout, "no data received for \(transfer.stallDescription)")
            } else if next.map({ deadline < $0 }) ?? true {
                next = deadline
            }
        }
        return next
    }

    /// How long curl_multi_poll may wait: at most a second, and no later than the next stall
    /// deadline (libcurl shortens it further for its own timers).
    private static func pollMilliseconds(until deadline: ContinuousClock.Instant?) -> Int32 {
        guard let deadline else { return 1000 }
        let (seconds, attoseconds) = (deadline - .now).components
        let ms = seconds * 1000 + attoseconds / 1_000_000_000_000_000 + 1
        return Int32(min(max(ms, 1), 1000))
    }

    private func start(_ item: Submitted, into active: inout [UnsafeMutableRawPointer: CurlEasyTransfer]) {
        switch CurlEasyTransfer.make(item, configuration: configuration) {
        case .success(let transfer):
            let code = curl_multi_add_handle(multi.raw, transfer.handle)
            if code == CURLM_OK {
                active[transfer.handle] = transfer
            } else {
                let message = String(cString: curl_multi_strerror(code))
                transfer.finish(.failure(.transport(TransportError(kind: .other, message: message))))
            }
        case .failure(let error):
            item.completion.resume(returning: .failure(error))
        }
    }

    private func collectFinished(from active: inout [UnsafeMutableRawPointer: CurlEasyTransfer]) {
        var left: Int32 = 0
        while let message = curl_multi_info_read(multi.raw, &left) {
            guard message.pointee.msg == CURLMSG_DONE, let handle = message.pointee.easy_handle else { continue }
            let code = message.pointee.data.result
            guard let transfer = active.removeValue(forKey: handle) else { continue }
            curl_multi_remove_handle(multi.raw, handle)
            transfer.complete(code: code)
        }
    }
}
