// The two task priorities the mount runs at. On Linux, Swift's executor keeps separate threads for
// each priority (docs/JOURNAL.md, "Background work at utility priority"), so work at the
// requests' priority never waits in a queue behind the background sync's pages.

/// Where the mount's tasks run.
public enum TaskPriorities {
    /// Kernel requests (the FUSE adapter's RequestOwner), and a fill branch a request waits for.
    public static let requests = TaskPriority.userInitiated
    /// The background sync: the fill, its branches and the change watcher.
    public static let background = TaskPriority.utility
}
