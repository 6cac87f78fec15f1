// How the core answers a kernel request: now, on the FUSE thread that asked (from the tree: the
// common case), or later, from a task, when it must wait first (a folder listing, the disk, an
// export, a file manager's thumbnails). Each core entry of an operation that may have to wait
// returns an Answer; the adapter replies at once to `.now` and runs `.later` in a task the kernel
// can interrupt (FUSEAdapter's FUSERequest.answer), so a FUSE thread never waits on the network
// or the disk. Deciding between the two is the core's; the adapter only carries it out.
//
// Locking: none, a value. The work of `.later` takes the locks its core entry names.

public enum Answer<Value: Sendable>: Sendable {
    /// Answered on the calling thread: the value or the failure.
    case now(Result<Value, FilesystemError>)
    /// The core must wait first: run this from a task (cancelling the task interrupts the wait).
    case later(@Sendable () async throws(FilesystemError) -> Value)

    /// What `decide` answers, run now; what it throws is a failure answered now.
    static func deciding(_ decide: () throws(FilesystemError) -> Answer) -> Answer {
        do throws(FilesystemError) {
            return try decide()
        } catch {
            return .now(.failure(error))
        }
    }

    /// The value, waiting for it when it comes later.
    public var value: Value {
        get async throws(FilesystemError) {
            switch self {
            case .now(let result): return try result.get()
            case .later(let work): return try await work()
            }
        }
    }

    /// The same answer, now or later as it comes, with its outcome (value or failure) turned into
    /// a value or a failure of another kind by `transform`.
    public func mapResult<Other: Sendable>(
        _ transform: @escaping @Sendable (Result<Value, FilesystemError>) throws(FilesystemError) -> Other
    ) -> Answer<Other> {
        switch self {
        case .now(let result):
            return Answer<Other>.deciding { () throws(FilesystemError) -> Answer<Other> in
                .now(.success(try transform(result)))
            }
        case .later(let work):
            return .later { () async throws(FilesystemError) -> Other in
                let result: Result<Value, FilesystemError>
                do throws(FilesystemError) {
                    result = .success(try await work())
                } catch {
                    result = .failure(error)
                }
                return try transform(result)
            }
        }
    }

    /// The same answer with its value turned into another; failures stay as they are.
    public func map<Other: Sendable>(_ transform: @escaping @Sendable (Value) -> Other) -> Answer<Other> {
        mapResult { result throws(FilesystemError) -> Other in transform(try result.get()) }
    }
}
