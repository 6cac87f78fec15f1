// The reader's disk cache (Reader/CacheFile.swift) still lists its folder with readdir(3) and
// names the entries through this; the name itself is read by the system layer
// (SystemCalls/DirectoryEntries.swift). This goes once the reader lists through SystemCalls'
// `forEachEntry`.

import SystemCalls

#if canImport(Glibc)
    import Glibc
#endif

func directoryEntryName(_ entry: UnsafeMutablePointer<dirent>) -> String {
    SystemCalls.directoryEntryName(entry)
}
