// glibc's malloc gives a thread that finds the arenas busy an arena of its own, up to 8 per CPU,
// and memory freed into an arena stays with it. The daemon decodes listing pages on several
// threads at once, so during a big fill each of them keeps freed page buffers that the others
// cannot reuse, and the peak RSS grows with the number of arenas rather than with the tree. One
// arena per usable CPU (at least 2) took about 12 MiB off the peak of a 1,000,000-entry fill
// (docs/JOURNAL.md, "Memory per entry, second pass") at no measurable CPU cost.
// MALLOC_ARENA_MAX in the environment, read by glibc itself, is left to win.

import CShim
import SystemCalls

#if canImport(Glibc)
    import Glibc
#endif

enum MallocArenas {
    /// Limits malloc's arenas; call before the daemon starts threads.
    static func limit() {
        guard getenv("MALLOC_ARENA_MAX") == nil else { return }
        _ = dbx_set_malloc_arena_max(Int32(max(2, UsableCPUs.count())))
    }
}
