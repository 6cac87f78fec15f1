// Telling a file manager from `find`. When a file manager shows a folder of photos it reads every
// image whole to make thumbnails; the core can write Dropbox's thumbnails first (docs/SEMANTICS.md,
// "Thumbnails"). But `find`, `du`, `ls`, backup tools and indexers list folders too, and must never
// cost a thumbnail request. The kernel names the process behind each request (fuse_req_ctx: the
// pid of the calling thread, and its uid); this decides from the process's name, the `comm` of its
// main thread, because GLib lists folders on worker threads with names of their own ("pool-...").
// Only the mounting user's processes count: the thumbnail cache written is that user's.
//
// The same names tell which reads are a look into a file rather than a use of it: file managers
// sniff a file's type from its first bytes (GIO, libmagic), thumbnailers read what one picture
// needs (a PDF's first page, a video's key frame), and indexers their metadata. Their reads are
// ranged (`readsRanges`): the reader fetches what they ask for and little more, never the whole
// file (Reader/ReadPolicy.swift). Any user's process counts there: it costs nobody a thumbnail.
//
// Names are remembered per pid for a couple of seconds, so a `find` over thousands of folders
// reads /proc once every two seconds rather than once per folder, and a pid reused by another
// program is not mistaken for long. `answers` (a Mutex) guards them.

import Synchronization
import SystemCalls

#if canImport(Glibc)
    import Glibc
#endif

final class FileManagers: Sendable {
    /// The process names (comm) taken for file managers and their thumbnailers. The one list: add
    /// a file manager here and to docs/SEMANTICS.md ("Thumbnails").
    static let names: Set<String> = [
        "pcmanfm", "pcmanfm-qt", "thunar", "Thunar", "nautilus", "nemo", "caja", "dolphin", "spacefm",
        "tumblerd", "xfdesktop",
    ]

    /// The process names (comm: the first 15 bytes of the program's name) whose reads are ranged:
    /// the file managers above, thumbnailers and content sniffers. Add one here and to
    /// docs/SEMANTICS.md ("Thumbnails") and docs/READS.md ("Thumbnailers and content sniffers
    /// read ranges").
    static let sniffers: Set<String> = names.union([
        // Thumbnailers, started by tumblerd, nautilus or a desktop for one file each.
        "gdk-pixbuf-thum", "ffmpegthumbnail", "totem-video-thu", "evince-thumbnai", "atril-thumbnail",
        "xreader-thumbna", "papers-thumbnai", "gnome-thumbnail", "gsf-office-thum", "ffmpegthumbs", "kioworker",
        "kio_thumbnail", "exo-thumbnailer", "raw-thumbnailer", "webp-thumbnaile",
        "heif-thumbnaile", "gnome-epub-thum", "nemo-thumbnaile",
        // Content sniffing and indexing: libmagic's `file`, xdg-mime's helpers, GIO's tool, indexers.
        "file", "mimetype", "xdg-mime", "gio", "gio-launch-desk", "tracker-extract", "tracker-miner-f",
        "localsearch-3", "localsearch-ext", "baloo_file", "baloo_file_extr", "exiftool", "mediainfo",
    ])

    /// How long an answer about a pid is trusted (seconds).
    static let memory: Double = 2
    /// Remembered answers beyond this many are pruned of the expired ones.
    static let pruneAbove = 1024

    private struct Answer {
        /// The process's name; nil when it could not be read (it is gone).
        var name: String?
        var at: Double
    }

    private let answers = Mutex<[Int32: Answer]>([:])
    private let owner: UInt32
    private let now: @Sendable () -> Double
    private let processName: @Sendable (Int32) -> String?

    init(
        owner: UInt32 = getuid(), now: @escaping @Sendable () -> Double = SystemClock.monotonicSeconds,
        processName: @escaping @Sendable (Int32) -> String? = FileManagers.processName(of:)
    ) {
        self.owner = owner
        self.now = now
        self.processName = processName
    }

    /// Whether the request of thread `pid`, made as `uid`, comes from one of the mounting user's
    /// file managers.
    func isFileManager(pid: Int32, uid: UInt32) -> Bool {
        guard uid == owner, let name = name(of: pid) else { return false }
        return Self.names.contains(name)
    }

    /// Whether the reads of thread `pid` are a file manager's, a thumbnailer's or a content
    /// sniffer's (any user's): they get the bytes they ask for, not the whole file.
    func readsRanges(pid: Int32) -> Bool {
        name(of: pid).map { Self.sniffers.contains($0) } ?? false
    }

    /// The process name of thread `pid`, remembered for `memory` seconds.
    private func name(of pid: Int32) -> String? {
        guard pid > 0 else { return nil }
        let time = now()
        if let known = answers.withLock({ $0[pid] }), time - known.at < Self.memory { return known.name }
        let name = processName(pid)
        answers.withLock { remembered in
            if remembered.count >= Self.pruneAbove {
                remembered = remembered.filter { time - $0.value.at < Self.memory }
            }
            remembered[pid] = Answer(name: name, at: time)
        }
        return name
    }

    /// The name of the process thread `pid` belongs to: its main thread's comm (from the `Tgid:`
    /// line of /proc/PID/status), nil when it is gone.
    static func processName(of pid: Int32) -> String? {
        guard let status = read("/proc/\(pid)/status") else { return nil }
        var leader = pid
        for line in status.split(separator: "\n") where line.hasPrefix("Tgid:") {
            leader = Int32(line.dropFirst("Tgid:".count).filter { $0 != " " && $0 != "\t" }) ?? pid
        }
        guard let comm = read("/proc/\(leader)/comm") else { return nil }
        return comm.hasSuffix("\n") ? String(comm.dropLast()) : comm
    }

    /// A small /proc file (at most 4 KiB), nil when it cannot be read.
    private static func read(_ path: String) -> String? {
        // Not retried on EINTR: this runs on the FUSE thread, which a stopping signal interrupts.
        guard let file = try? FileDescriptor.open(path, O_RDONLY | O_CLOEXEC, retryOnInterrupt: false) else { return nil }
        defer { try? file.close() }
        var buffer = [UInt8](repeating: 0, count: 4096)
        let read = buffer.withUnsafeMutableBytes { bytes in
            try? file.read(filling: bytes, retryOnInterrupt: false)
        }
        guard let count = read else { return nil }
        return String(decoding: buffer[..<count], as: UTF8.self)
    }
}
