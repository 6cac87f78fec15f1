// `dropboxfs mount`: parse options, check the mount point, FUSE and the credentials (each failure a
// clear line and its own exit code), then either hand over to a background daemon or mount in the
// foreground and serve until unmounted.

import DropboxAPI
import DropboxFS
import FUSEAdapter
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

enum MountCommand {
    static let spec = ArgumentSpec(
        valued: [
            "o": "o", "access-token-file": "access-token-file", "api-url": "api-url",
            "content-url": "content-url", "notify-url": "notify-url", "attr-timeout": "attr-timeout",
            "dir-cache-time": "dir-cache-time", "threads": "threads", "log-level": "log-level",
            "log-file": "log-file", "cache-dir": "cache-dir", "cache-size": "cache-size",
            "read-buffer-memory": "read-buffer-memory", "timeouts": "timeouts",
        ],
        switches: [
            "f": "foreground", "foreground": "foreground", "allow-other": "allow-other",
            "allow-non-empty": "allow-non-empty", "no-prefetch": "no-prefetch", "no-watch": "no-watch",
            "no-disk-cache": "no-disk-cache", "home-only": "home-only", "no-persist": "no-persist", "fresh": "fresh", "d": "debug", "debug": "debug", "h": "help", "help": "help",
        ])

    static func run(_ arguments: [String]) throws -> ExitCode {
        let parsed = try spec.parse(arguments)
        if parsed.has("help") {
            printOut(Help.mount)
            return .success
        }
        do {
            let configuration = try MountConfiguration(parsed, environment: ProcessInfo.processInfo.environment)
            return try mount(configuration, arguments: arguments)
        } catch let failure as CommandFailure {
            Daemon.reportFailure(failure)
            throw failure
        } catch let usage as UsageError {
            Daemon.reportFailure(CommandFailure(.usage, usage.description))
            throw usage
        }
    }

    private static func mount(_ configuration: MountConfiguration, arguments: [String]) throws -> ExitCode {
        Log.level = configuration.logLevel
        try MountPointChecks.checkFUSEAvailable()
        let mountpoint = try MountPointChecks.validate(
            configuration.mountpoint, isDefault: configuration.mountpointIsDefault,
            allowNonEmpty: configuration.allowNonEmpty)
        let credentials = try Credentials.resolve(
            file: configuration.accessTokenFile, environment: ProcessInfo.processInfo.environment,
            endpoints: configuration.endpoints, timeouts: configuration.http.rpcTimeouts)
        let homeClient = DropboxHTTPClient(
            endpoints: configuration.endpoints, tokens: credentials.tokens, transport: Shared.transport,
            pacer: Pacer(policy: configuration.retryPolicy), configuration: configuration.http)
        let target = try MountTarget.resolve(
            configuration, client: homeClient, accountID: credentials.accountID, mountpoint: mountpoint)
        let client = homeClient.with(pathRoot: target.identity.pathRoot)
        // A stored tree is caught up from its cursor, a request that needs the same permission as
        // this check; without one, check before mounting.
        if !target.offline && !(configuration.persist && StoredTrees.hasTree(configuration, identity: target.identity)) {
            try AccountCheck.verifyListing(client, endpoints: configuration.endpoints)
        }

        if !configuration.foreground && !Daemon.isChild {
            try Daemon.spawnAndWait(arguments: arguments, logFile: try configuration.logFilePath())
            let offline = target.offline ? " offline, from the stored tree (Dropbox cannot be reached)" : ""
            printOut("dropboxfs: mounted \(Log.escaped(target.email))'s Dropbox on \(mountpoint)\(offline) (unmount: fusermount3 -u \(mountpoint))")
            return .success
        }

        var store: TreeStore?
        var stored: StoredTree?
        if configuration.persist {
            store = StoredTrees.open(configuration, identity: target.identity, email: target.email, mountpoint: mountpoint)
            stored = store?.loadTree(folderTime: Int64(time(nil)), now: Filesystem.monotonicSeconds())
        }
        if target.offline && stored == nil {
            store?.close()
            throw CommandFailure(.unreachable, "cannot reach Dropbox, and the stored tree of this account cannot be used")
        }
        let core = Filesystem(
            client: client,
            options: FilesystemOptions(
                folderListingTTL: configuration.watch ? .infinity : configuration.dirCacheTime,
                prefetch: configuration.prefetch, watchChanges: configuration.watch, reader: configuration.reader,
                store: store),
            restoring: stored, connectivity: Connectivity(offline: target.offline))
        // The core owns the tree now: holding a second reference would copy every part of it the
        // sync engine changes (copy on write), up to twice the memory.
        let restored = stored.map { (entries: $0.entryCount, syncedAt: $0.syncedAt) }
        stored = nil
        let adapter = FUSEFilesystem(
            core: core,
            timeouts: CacheTimeouts(
                entry: configuration.attrTimeout, attributes: configuration.attrTimeout,
                negative: configuration.attrTimeout))
        let session = FUSESession(
            filesystem: adapter, mountpoint: mountpoint, mountOptions: configuration.mountOptions,
            maxThreads: configuration.threads)
        core.setInvalidationHandler { session.invalidate($0) }
        defer {
            core.stop()
            store?.close()
        }
        let syncing = restored != nil
        if let restored {
            Log.info(
                "serving the stored tree: \(restored.entries) entries, as of \(Connectivity.timestamp(restored.syncedAt))")
            // Catch up before the mount appears, briefly: most remounts then show a current tree at
            // once; a long catch-up (or --fresh: any) goes on while the stored tree is served.
            core.startSync()
            if !target.offline {
                let limit = configuration.fresh ? Double.infinity : 2
                let current = (try? runBlocking { await core.waitUntilCaughtUp(seconds: limit) }) ?? false
                if !current { Log.info("still catching up with Dropbox; serving the stored tree meanwhile") }
            }
        }
        var guardHandle: MountGuard.Handle?
        do {
            try session.run {
                Log.info("mounted \(target.email)'s Dropbox on \(mountpoint)\(target.offline ? " offline" : "")")
                if let line = target.teamLine { Log.info(line) }
                guardHandle = MountGuard.start(mountpoint: mountpoint)
                if !syncing { core.startSync() }
                Daemon.reportReady()
            }
        } catch {
            throw CommandFailure(.mountPoint, error.description)
        }
        MountGuard.disarm(guardHandle)
        core.finishDiskCacheWrites()
        Log.info("unmounted \(mountpoint)")
        return .success
    }
}

/// Everything `mount` needs, resolved from flags and the environment.
struct MountConfiguration {
    var mountpoint: String
    var mountpointIsDefault: Bool
    var foreground: Bool
    var allowNonEmpty: Bool
    var accessTokenFile: String?
    var endpoints: DropboxEndpoints
    var attrTimeout: Double
    var dirCacheTime: Double
    var threads: Int
    /// Whole-tree background listing, and change following (with kernel invalidation).
    var prefetch: Bool
    var watch: Bool
    /// In a team space, show only the member's own folder.
    var homeOnly: Bool
    var logLevel: LogLevel
    var logFile: String?
    var mountOptions: [String]
    /// File reads: buffer memory cap and the disk content cache.
    var reader: ReaderOptions
    /// --cache-dir, or $XDG_CACHE_HOME/dropboxfs: the disk cache (content/) and stored trees (trees/).
    var cacheFolder: String
    /// Keep the tree and its cursor across mounts (not with --no-persist, --no-prefetch, --no-watch).
    var persist: Bool
    /// --fresh: never serve a stored tree older than Dropbox (no offline mount; wait for the catch-up).
    var fresh: Bool
    /// Request deadlines and the longest 429 pause (--timeouts).
    var http: DropboxHTTPClient.Configuration
    var retryPolicy: RetryPolicy

    init(_ parsed: ParsedArguments, environment: [String: String]) throws(UsageError) {
        guard parsed.positionals.count <= 1 else {
            throw UsageError(description: "mount takes one mount point, got \(parsed.positionals.count) (see mount --help)")
        }
        let home = environment["HOME"] ?? "/root"
        if let path = parsed.positionals.first {
            mountpoint = path
            mountpointIsDefault = false
        } else {
            mountpoint = home + "/dropbox"
            mountpointIsDefault = true
        }
        foreground = parsed.has("foreground")
        allowNonEmpty = parsed.has("allow-non-empty")
        accessTokenFile = parsed.value("access-token-file")
        var endpoints = DropboxEndpoints.fromEnvironment(environment)
        if let url = parsed.value("api-url") { endpoints.api = url }
        if let url = parsed.value("content-url") { endpoints.content = url }
        if let url = parsed.value("notify-url") { endpoints.notify = url }
        self.endpoints = try DropboxEndpoints(
            api: endpoints.api, content: endpoints.content, notify: endpoints.notify, oauth: endpoints.oauth
        ).approved()
        prefetch = !parsed.has("no-prefetch")
        watch = !parsed.has("no-watch")
        homeOnly = parsed.has("home-only")
        // With the watcher, changes invalidate the kernel's caches, so they can be kept long.
        attrTimeout = try Self.seconds(parsed.value("attr-timeout"), name: "--attr-timeout", default: watch ? 3600 : 60)
        dirCacheTime = try Self.seconds(parsed.value("dir-cache-time"), name: "--dir-cache-time", default: 60)
        if let text = parsed.value("threads") {
            guard let value = Int(text), (1...256).contains(value) else {
                throw UsageError(description: "--threads must be a number from 1 to 256")
            }
            threads = value
        } else {
            threads = 16
        }
        if parsed.has("debug") {
            logLevel = .debug
        } else if let text = parsed.value("log-level") {
            guard let level = LogLevel(name: text) else {
                throw UsageError(description: "--log-level must be debug, info, warning or error")
            }
            logLevel = level
        } else {
            logLevel = .info
        }
        logFile = parsed.value("log-file")
        cacheFolder = try Self.cacheFolder(parsed, environment: environment)
        reader = try Self.readerOptions(parsed, folder: cacheFolder)
        persist = prefetch && watch && !parsed.has("no-persist")
        fresh = parsed.has("fresh")
        (http, retryPolicy) = try TimeoutOption.parse(parsed.value("timeouts"))
        var options = [
            "ro", "default_permissions", "nosuid", "nodev", "noatime", "auto_unmount", "fsname=dropboxfs",
            "subtype=dropboxfs",
        ]
        if parsed.has("allow-other") { options.append("allow_other") }
        for extra in parsed.values("o") {
            for option in extra.split(separator: ",") where !option.isEmpty {
                guard option != "rw" else { throw UsageError(description: "dropboxfs is read-only: -o rw is not supported") }
                if !options.contains(String(option)) { options.append(String(option)) }
            }
        }
        mountOptions = options
    }

    /// The daemon's log file, creating its folder (0700) when needed.
    func logFilePath() throws(CommandFailure) -> String {
        if let logFile { return logFile }
        let environment = ProcessInfo.processInfo.environment
        let cache = environment["XDG_CACHE_HOME"].flatMap { $0.isEmpty ? nil : $0 }
            ?? (environment["HOME"] ?? "/root") + "/.cache"
        let folder = cache + "/dropboxfs"
        for path in [cache, folder] where access(path, F_OK) != 0 {
            guard mkdir(path, 0o700) == 0 || errno == EEXIST else {
                throw CommandFailure(.failure, "cannot create \(path): \(String(cString: strerror(errno)))")
            }
        }
        return folder + "/dropboxfs.log"
    }

    /// CACHE_DIR: --cache-dir, default $XDG_CACHE_HOME/dropboxfs.
    private static func cacheFolder(_ parsed: ParsedArguments, environment: [String: String]) throws(UsageError) -> String {
        if let given = parsed.value("cache-dir") {
            guard !given.isEmpty else { throw UsageError(description: "--cache-dir needs a folder") }
            return given.hasPrefix("/") ? given : FileManager.default.currentDirectoryPath + "/" + given
        }
        let cache = environment["XDG_CACHE_HOME"].flatMap { $0.isEmpty ? nil : $0 }
            ?? (environment["HOME"] ?? "/root") + "/.cache"
        return cache + "/dropboxfs"
    }

    /// --read-buffer-memory, and the disk cache in CACHE_DIR/content capped at --cache-size,
    /// unless --no-disk-cache.
    private static func readerOptions(_ parsed: ParsedArguments, folder: String) throws(UsageError) -> ReaderOptions {
        let memory = try byteCount(parsed.value("read-buffer-memory"), name: "--read-buffer-memory", default: 256 << 20)
        guard memory >= 1 << 20 else { throw UsageError(description: "--read-buffer-memory must be at least 1M") }
        let capacity = try byteCount(parsed.value("cache-size"), name: "--cache-size", default: 1 << 30)
        guard !parsed.has("no-disk-cache"), capacity > 0 else { return ReaderOptions(memoryLimit: memory) }
        return ReaderOptions(
            memoryLimit: memory, diskCache: DiskCacheOptions(directory: folder + "/content", capacity: capacity))
    }

    /// A size such as 1073741824, 512M, 1G or 1GiB (K, M, G, T are powers of 1024).
    private static func byteCount(_ text: String?, name: String, default value: UInt64) throws(UsageError) -> UInt64 {
        guard let text else { return value }
        var digits = Substring(text.uppercased())
        for suffix in ["IB", "B"] where digits.hasSuffix(suffix) {
            digits = digits.dropLast(suffix.count)
            break
        }
        var shift: UInt64 = 0
        if let unit = digits.last, let index = "KMGT".firstIndex(of: unit) {
            shift = UInt64("KMGT".distance(from: "KMGT".startIndex, to: index) + 1) * 10
            digits = digits.dropLast()
        }
        guard let number = UInt64(digits), number <= UInt64.max >> shift else {
            throw UsageError(description: "\(name) must be a size such as 512M or 2G")
        }
        return number << shift
    }

    private static func seconds(_ text: String?, name: String, default value: Double) throws(UsageError) -> Double {
        guard let text else { return value }
        guard let seconds = Double(text), seconds >= 0, seconds.isFinite else {
            throw UsageError(description: "\(name) must be a number of seconds (0 or more)")
        }
        return seconds
    }
}
