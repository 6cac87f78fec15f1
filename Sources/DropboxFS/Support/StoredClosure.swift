// A closure kept in a Mutex must be wrapped in a struct. Held bare (`Mutex<@Sendable () -> Void>`,
// or an optional of one), a function value is re-abstracted at every `withLock`: the closure's
// `inout` sees it at its concrete abstraction and the Mutex stores it at the generic one, so the
// value written back is the old one wrapped in two more thunks. Every access then grows a chain of
// thunks: calls through it get slower without bound, and the stack finally overflows (measured, in
// optimised builds too: docs/SWIFT-FUSE-NOTES.md, "A closure in a Mutex"). A struct is never
// re-abstracted, so its field keeps one representation.

/// A replaceable function, for storage in a Mutex (see the file comment).
struct StoredClosure<Function: Sendable>: Sendable {
    var call: Function

    init(_ call: Function) {
        self.call = call
    }
}
