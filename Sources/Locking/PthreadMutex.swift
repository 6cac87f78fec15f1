// A mutex the thread sanitizer can see. The code guards its state with `Synchronization.Mutex`,
// which on Linux is a futex inside a standard library not built for the sanitizer: TSan sees no
// lock, and reports every access to guarded state from two threads as a race (docs/TESTING.md,
// "Sanitizers"), so a real race would not stand out. `PthreadMutex` has the same shape (an initial
// value, `withLock`) over a `pthread_mutex_t`, whose lock and unlock TSan intercepts.
//
// It is used only in sanitizer builds: `scripts/sanitize` passes `-DDROPBOXFS_SANITIZER_LOCKS`,
// and each module that uses `Mutex` has a `SanitizerLocks.swift` that then declares
// `typealias Mutex<Value> = PthreadMutex<Value>`, which shadows the standard library's within the
// module. Ordinary builds never use this type.
//
// Locking: `mutex` guards `value`; nothing else is kept.

#if canImport(Glibc)
    import Glibc
#endif

public final class PthreadMutex<Value>: @unchecked Sendable {
    private var value: Value
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>

    public init(_ initialValue: Value) {
        value = initialValue
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    /// Runs `body` with the lock held, as `Synchronization.Mutex.withLock` does.
    public func withLock<Result, E: Error>(_ body: (inout Value) throws(E) -> Result) throws(E) -> Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value)
    }
}
