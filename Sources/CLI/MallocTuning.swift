// Two malloc settings, made before the daemon starts threads, that keep the peak RSS of a big fill
// tied to the tree rather than to the allocator's history (docs/PERFORMANCE.md, "Memory per entry,
// second pass" and "Peak RSS at 1,000,000 entries: what varies, and two levers").
//
// Arenas: glibc's malloc gives a thread that finds the arenas busy an arena of its own, up to 8 per
// CPU, and memory freed into an arena stays with it. The daemon decodes listing pages on several
// threads at once, so during a big fill each of them keeps freed page buffers that the others
// cannot reuse. One arena per usable CPU (at least 2) took about 12 MiB off the peak of a
// 1,000,000-entry fill at no measurable CPU cost.
//
// mmap threshold: glibc starts by mapping blocks of 128 KiB and more on their own, and raises that
// threshold to the size of any mapped block that is freed (up to 32 MiB). After the first large
// page buffers and child tables come and go, later ones of that size come from the heap, where a
// freed block stays in the process until the top of the heap is free. Which sizes cross over
// depends on timing, so the same binary peaked anywhere from 225 to 239 B per entry. A fixed
// threshold of 256 KiB keeps large, short-lived blocks mapped, returned on free, and held the peak
// at 225 B per entry in three rounds out of three, with the same CPU.
//
// What the environment sets, read by glibc itself, is left to win: MALLOC_ARENA_MAX,
// MALLOC_MMAP_THRESHOLD_, and GLIBC_TUNABLES naming either.

import CShim
import FUSEAdapter

#if canImport(Glibc)
    import Glibc
#endif

enum MallocTuning {
    /// Blocks of this size and more are mapped on their own and unmapped when freed.
    static let mmapThreshold: Int32 = 256 * 1024

    /// Limits malloc's arenas and fixes its mmap threshold; call before the daemon starts threads.
    static func apply() {
        let tunables = getenv("GLIBC_TUNABLES").map { String(cString: $0) } ?? ""
        if getenv("MALLOC_ARENA_MAX") == nil, !tunables.contains("arena_max") {
            _ = dbx_set_malloc_arena_max(Int32(max(2, SessionLoop.usableCPUs())))
        }
        if getenv("MALLOC_MMAP_THRESHOLD_") == nil, !tunables.contains("mmap_threshold") {
            _ = dbx_set_malloc_mmap_threshold(mmapThreshold)
        }
    }
}
