// Runs async work from the synchronous main thread (before the FUSE loop starts), which is not a
// thread of Swift's cooperative pool, so waiting on a semaphore there is safe.

import Dispatch
import Synchronization

func runBlocking<T: Sendable>(_ work: @escaping @Sendable () async throws -> T) throws -> T {
    let semaphore = DispatchSemaphore(value: 0)
    let box = Mutex<Result<T, any Error>?>(nil)
    Task {
        let result: Result<T, any Error>
        do {
            result = .success(try await work())
        } catch {
            result = .failure(error)
        }
        box.withLock { $0 = result }
        semaphore.signal()
    }
    semaphore.wait()
    return try box.withLock { $0! }.get()
}
