// The change watcher's wakeup (WatcherWakeup, ChangeWatcher.swift): a wake ends the wait in progress, a wake
// between waits ends the next one at once, and a wait nobody wakes returns its result.

import DropboxAPI
import Testing

@testable import DropboxFS

extension CoreTests {
    @Suite struct WatcherWakeupTests {
        @Test func aWaitNobodyWakesReturnsItsResult() async throws {
            let wakeup = WatcherWakeup()
            let result = await wakeup.wait { () async throws(DropboxError) in 7 }
            #expect(try result?.get() == 7)
        }

        @Test func aWakeEndsTheWaitInProgress() async throws {
            let wakeup = WatcherWakeup()
            let started = CompletionSignal()
            let waiter = Task {
                await wakeup.wait { () async throws(DropboxError) -> Int in
                    started.fire()
                    do {
                        try await Task.sleep(for: .seconds(3600))
                    } catch {
                        throw .transport(TransportError(kind: .cancelled, message: "cancelled"))
                    }
                    return 1
                }
            }
            _ = await started.wait(seconds: 60)
            wakeup.wake()
            let result = await waiter.value
            #expect(result == nil, "woken, not the hour's sleep")
            #expect(wakeup.wakes == 1)
            // The wake was used: the next wait runs.
            #expect(try await wakeup.wait { () async throws(DropboxError) in 2 }?.get() == 2)
        }

        @Test func aWakeBetweenWaitsEndsTheNextAtOnce() async {
            let wakeup = WatcherWakeup()
            wakeup.wake()
            let ran = Locked(false)
            let result = await wakeup.wait { () async throws(DropboxError) -> Int in
                ran.value = true
                return 3
            }
            #expect(result == nil)
        }
    }
}
