// In sanitizer builds, `Mutex` in this module is a lock the thread sanitizer sees
// (Sources/Locking/PthreadMutex.swift); otherwise it is the standard library's.

#if DROPBOXFS_SANITIZER_LOCKS
    import Locking
    typealias Mutex<Value> = PthreadMutex<Value>
#endif
