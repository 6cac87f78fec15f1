// `dropboxfs mount`: parse options, check the mount point, FUSE and the credentials (each failure a
// clear line and its own exit code), then either hand over to a background daemon or mount in the
// foreground and serve until unmounted.

import DropboxAPI
import DropboxFS
import FUSEAdapter
import Foundation
import Log
import SystemCalls

#if canImport(Glibc)
    import Glibc
#endif

enum MountCommand {
    static func run(_ arguments: [String]) throws -> ExitCode {
        let first = try Options.mount.parse(arguments)
        if first.has("help") {
            printOut(Help.command(Options.mount))
            return .success
        }
        do {
            // -o items that are long options count as if given before the command line's own.
            let expansion = try MountOptionList.expand(first.values("o"))
            // -d on the command line means what it means to every libfuse program: debug lines
            // and the foreground (-o debug, as from an fstab line, only raises the log level).
            let debugForeground = first.has("debug") && !first.has("foreground") ? ["--foreground"] : []
            let parsed =
                expansion.arguments.isEmpty && debugForeground.isEmpty
                ? first : try Options.mount.parse(expansion.arguments + arguments + debugForeground)
            Log.level = try LogOptions.level(parsed)
            let isDaemon = parsed.has("foreground") || Daemon.isChild
            // --log-file in the foreground: the log goes there (before its first line, which
            // decides the line format), as it does for the background daemon.
            if parsed.has("foreground"), !Daemon.isChild, let file = parsed.value("log-file"), !file.isEmpty {
                try LogOptions.sendStderr(to: Environment.absolute(file), limit: MountConfiguration.logFileLimit)
            }
            if isDaemon { LogSignals.install() }
            // The daemon's first log line: what runs, for any report made from its log.
            if isDaemon {
                SystemdNotify.take()
                Log.info("\(BuildInfo.summary); pid \(getpid())")
            }
            for item in expansion.ignored { Log.debug("mount option \(item) is not for dropboxfs: ignored") }
            if expansion.asksReadWrite { Log.warning(MountOptionList.readWriteWarning) }
            let configuration = try MountConfiguration(
                parsed, fuseOptions: expansion.fuse, environment: ProcessInfo.processInfo.environment)
            if Daemon.isChild { Log.rotate(path: try configuration.logFilePath(), limit: MountConfiguration.logFileLimit) }
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
        try MountPointChecks.checkFUSEAvailable()
        if configuration.mountOptions.contains("allow_other") || configuration.mountOptions.contains("allow_root") {
            try MountPointChecks.checkAllowOther()
        }
        let mountpoint = try MountPointChecks.validate(
            configuration.mountpoint, isDefault: configuration.mountpointIsDefault,
            allowNonEmpty: configuration.allowNonEmpty)
        try configuration.checkCacheFolder()
        let background = !configuration.foreground && !Daemon.isChild
        if background { try configuration.checkLogFile() }
        let mounted = MountedAccount()
        let credentials = try Credentials.resolve(
            file: configuration.accessTokenFile, profile: configuration.profile,
            endpoints: configuration.endpoints, timeouts: configuration.http.rpcTimeouts,
            tagFolder: configuration.persist ? configuration.cacheFolder : nil, mounted: mounted)
        let pacer = Pacer(policy: configuration.retryPolicy)
        let homeClient = DropboxHTTPClient(
            endpoints: configuration.endpoints, tokens: credentials.tokens, transport: Shared.transport,
            pacer: pacer, configuration: configuration.http)
        var linkMount: SharedLinkMount?
        if let url = configuration.sharedLinkURL {
            linkMount = try SharedLinkMount.resolve(url: url, passwordFile: configuration.linkPasswordFile)
        }
        let target = try MountTarget.resolve(
            configuration, client: homeClient, accountID: credentials.accountID, tokenTag: credentials.tokenTag)
        mounted.set(target.identity.accountID)
        let client = homeClient.with(pathRoot: target.identity.pathRoot)
        // A shared link is not in the account: the link itself is asked for, each refusal named.
        var linkSource: SharedLinkSource?
        if let linkMount {
            linkSource = try linkMount.open(homeClient, endpoints: configuration.endpoints)
        } else if !target.offline && !(configuration.persist && StoredTrees.hasTree(configuration, identity: target.identity)) {
            // A stored tree is caught up from its cursor, a request that needs the same permission as
            // this check; without one, check before mounting.
            try AccountCheck.verifyListing(client, endpoints: configuration.endpoints)
        }
        let what = linkSource.map { SharedLinkMount.describe($0) } ?? "\(Log.escaped(target.email))'s Dropbox"

        if background {
            try Daemon.spawnAndWait(arguments: arguments, logFile: try configuration.logFilePath())
            let offline = target.offline ? " offline, from the stored tree (Dropbox cannot be reached)" : ""
            printOut(
                "dropboxfs: mounted \(what)\(configuration.profile.suffix) on \(mountpoint)\(offline) "
                    + "(unmount: fusermount3 -u \(mountpoint))")
            return .success
        }

        var store: TreeStore?
        var stored: StoredTree?
        if configuration.persist {
            store = StoredTrees.open(
                configuration, identity: target.identity, email: target.email, mountpoint: mountpoint,
                tokenTag: credentials.tokenTag)
            stored = store?.loadTree(folderTime: Int64(time(nil)), now: SystemClock.monotonicSeconds())
        }
        if target.offline && stored == nil {
            store?.close()
            throw CommandFailure(.unreachable, "cannot reach Dropbox, and the stored tree of this account cannot be used")
        }
        var options = FilesystemOptions(
            folderListingTTL: configuration.watch ? .infinity : configuration.dirCacheTime,
            prefetch: configuration.prefetch, watchChanges: configuration.watch,
            fill: FillOptions(parallelism: min(configuration.fillParallel, configuration.retryPolicy.maxConcurrentRequests)),
            reader: configuration.reader, store: store, staleAfter: configuration.staleAfter,
            sleepGap: configuration.clockJumpFile.map { ResumeDetector.gap(withJumpFile: $0) } ?? SystemClock.suspendedSeconds,
            thumbnails: configuration.thumbnailCacheSize.map {
                ThumbnailOptions(
                    mountpoint: mountpoint, folder: configuration.profile.thumbnailFolder, capacity: $0,
                    ledger: configuration.cacheFolder + "/thumbnails.ledger", sizes: configuration.thumbnailSizes)
            })
        options.statusFields = DaemonStatus.fields(
            logFile: Daemon.isChild ? try configuration.logFilePath() : configuration.logFile, pacer: pacer)
        options.leanWalkAfter = configuration.leanWalkAfter
        options.readAhead = configuration.readAhead ? FolderReadAheadOptions() : nil
        // A shared link's folders are not the account's: no zips of them.
        if configuration.folderZips && linkSource == nil { options.folderZips = FolderZipOptions(route: client) }
        options.hideNoAccess = configuration.hideNoAccess
        if configuration.sharedFolders {
            // The account's own client, whatever root the mount shows: each folder gets its namespace.
            options.sharedFolders = SharedFoldersOptions(routes: homeClient, lifetime: configuration.dirCacheTime)
        }
        // A shared link offers no earlier versions nor deleted files: no history views.
        options.historyViews = linkSource == nil
        // A tree served offline is tied to the credentials by what they say of themselves (an
        // account id, a token's tag): once Dropbox answers, it names the account before the tree
        // is caught up.
        let laterStores = OpenedStores()
        if target.offline {
            options.accountConfirmation = StoredTrees.confirmation(
                configuration, served: target.identity, store: store, mountpoint: mountpoint,
                tokenTag: credentials.tokenTag, opened: laterStores, mounted: mounted)
        }
        let core = Filesystem(
            client: linkSource ?? client, options: options, restoring: stored,
            connectivity: Connectivity(offline: target.offline, signIn: SignInHealth(advice: credentials.advice)))
        // The core owns the tree now: holding a second reference would copy every part of it the
        // sync engine changes (copy on write), up to twice the memory.
        let restored = stored.map { (entries: $0.entryCount, syncedAt: $0.syncedAt) }
        stored = nil
        let adapter = FUSEFilesystem(
            core: core,
            timeouts: CacheTimeouts(
                entry: configuration.attrTimeout, attributes: configuration.attrTimeout,
                negative: configuration.attrTimeout),
            refusesKernelInit: configuration.refusesKernelInit)
        if let file = configuration.clockJumpFile {
            Log.warning(
                "\(MountConfiguration.clockJumpVariable)=\(Log.escaped(file)) (a test hook): "
                    + "the seconds in that file count as time asleep")
        }
        if configuration.refusesKernelInit {
            Log.warning("\(MountConfiguration.refuseInitVariable)=1 (a test hook): the kernel's INIT will be refused")
        }
        let session = FUSESession(
            filesystem: adapter, mountpoint: mountpoint, mountOptions: configuration.mountOptions,
            maxThreads: configuration.threads, spinMicroseconds: configuration.spinMicroseconds)
        defer {
            core.stop()
            // Bounded, as the disk cache's writes are: the store's disk may have stopped answering.
            if let store, !store.close(waitingAtMost: 1.5) {
                Log.warning("the stored tree's last writes are still waiting for the disk at unmount; not waiting for them")
            }
            laterStores.closeAll()
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
        // Every path is absolute by now: never keep the folder the daemon was started in busy.
        _ = chdir("/")
        do {
            try session.run {
                Log.info("mounted \(what)\(configuration.profile.suffix) on \(mountpoint)\(target.offline ? " offline" : "")")
                if let line = target.teamLine { Log.info(line) }
                if let expires = linkSource?.root.expires { Log.info("the shared link expires at \(expires)") }
                guardHandle = MountGuard.start(mountpoint: mountpoint)
                if !syncing { core.startSync() }
                Daemon.reportReady()
                SystemdNotify.ready(status: "mounted on \(mountpoint)\(target.offline ? " (offline)" : "")")
            }
        } catch .notStarted(let mountpoint, let outcome) {
            // Not the mount point's fault: INIT was refused, or never came.
            throw CommandFailure(.failure, MountFailure.notStarted(mountpoint, outcome).description)
        } catch {
            throw CommandFailure(.mountPoint, error.description)
        }
        SystemdNotify.stopping()
        MountGuard.disarm(guardHandle)
        // Bounded: a cache disk that stopped answering must not keep the daemon from exiting
        // within its stop bound (docs/SEMANTICS.md, "Unmounting with requests in flight").
        if !core.finishDiskCacheWrites(waitingAtMost: 1.5) {
            Log.warning("disk cache: writes still waiting for the disk at unmount; not waiting for them")
        }
        Log.info("unmounted \(mountpoint)")
        return .success
    }
}

/// Everything `mount` needs, resolved from flags and the environment.
struct MountConfiguration {
    /// The background daemon's log is rotated past this size (one old file, .1).
    static let logFileLimit: UInt64 = 10 << 20

    var profile: Profile
    var mountpoint: String
    var mountpointIsDefault: Bool
    var foreground: Bool
    var allowNonEmpty: Bool
    var accessTokenFile: String?
    var endpoints: DropboxEndpoints
    var attrTimeout: Double
    var dirCacheTime: Double
    var threads: Int
    /// SessionLoop's spin; 0 selects libfuse's multi-threaded loop of `threads`.
    var spinMicroseconds: Int
    /// Folders a thread reads before files go lean in its listings (DropboxFS's Walkers); 0 never.
    var leanWalkAfter: Int
    /// Read-ahead across files (--no-read-ahead turns it off).
    var readAhead: Bool
    /// Folders read ahead as one zip (--no-folder-zips turns it off).
    var folderZips: Bool
    /// Team folders the user may not enter are left out instead of shown with mode 000.
    var hideNoAccess: Bool
    /// Recursive listings in flight during the whole-account fill (1: one chain of pages).
    var fillParallel: Int
    /// Whole-tree background listing, and change following (with kernel invalidation).
    var prefetch: Bool
    var watch: Bool
    /// In a team space, show only the member's own folder.
    var homeOnly: Bool
    /// --shared-link: mount this link instead of the account (SharedLinkMount.swift), with the
    /// password in --link-password-file.
    var sharedLinkURL: String?
    /// --shared-folders: the folders shared with the account but not added, under one folder at
    /// the top (DropboxFS's SharedFolders), listed again after --dir-cache-time.
    var sharedFolders: Bool
    var linkPasswordFile: String?
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
    /// The most bytes of thumbnails for file managers the mount writes (--thumbnail-cache-size);
    /// nil with --no-thumbnails.
    var thumbnailCacheSize: UInt64?
    /// The thumbnail cache folders written (--thumbnail-sizes; default normal and large).
    var thumbnailSizes: [ThumbnailSize]
    /// Request deadlines and the longest 429 pause (--timeouts).
    var http: DropboxHTTPClient.Configuration
    var retryPolicy: RetryPolicy
    /// Seconds catching up may fail before the status calls the tree stale (--timeouts stale=).
    var staleAfter: Double
    /// Test-only: the init callback makes libfuse refuse the kernel's INIT (`refuseInitVariable`
    /// set to 1; docs/TESTING.md "Test-only hooks").
    var refusesKernelInit: Bool
    static let refuseInitVariable = "DROPBOXFS_TEST_REFUSE_INIT"
    /// Test-only: a file whose number of seconds counts as time asleep (ResumeDetector.swift).
    var clockJumpFile: String?
    static let clockJumpVariable = "DROPBOXFS_TEST_CLOCK_JUMP_FILE"

    init(_ parsed: ParsedArguments, fuseOptions: [String] = [], environment: [String: String]) throws(UsageError) {
        guard parsed.positionals.count <= 1 else {
            throw UsageError(description: "mount takes one mount point, got \(parsed.positionals.count) (see mount --help)")
        }
        profile = try Profile.resolve(parsed, environment: environment)
        if let path = parsed.positionals.first {
            guard !path.isEmpty else { throw UsageError(description: "the mount point must not be empty") }
            mountpoint = path
            mountpointIsDefault = false
        } else {
            mountpoint = profile.defaultMountpoint
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
        if let url = parsed.value("shared-link") {
            sharedLinkURL = try SharedLinkMount.checkedURL(url)
            guard parsed.positionals.first != nil else {
                throw UsageError(description: "--shared-link needs a MOUNTPOINT")
            }
            // A link has no recursive listing and no change feed: folders are listed as opened and
            // again once older than --dir-cache-time.
            prefetch = false
            watch = false
        }
        if let file = parsed.value("link-password-file") {
            guard !file.isEmpty else { throw UsageError(description: "--link-password-file needs a file") }
            // Without a link it has nothing to open (an fstab line may keep it): said, not refused.
            if sharedLinkURL == nil { Log.warning("--link-password-file is for --shared-link: ignored") }
            linkPasswordFile = Environment.absolute(file)
        }
        homeOnly = parsed.has("home-only")
        sharedFolders = parsed.has("shared-folders")
        if sharedFolders && sharedLinkURL != nil {
            throw UsageError(description: "--shared-folders shows the account's shared folders; a --shared-link mount has none")
        }
        // With the watcher, changes invalidate the kernel's caches, so they can be kept long.
        attrTimeout = try Self.seconds(parsed.value("attr-timeout"), name: "--attr-timeout", default: watch ? 3600 : 60)
        dirCacheTime = try Self.seconds(parsed.value("dir-cache-time"), name: "--dir-cache-time", default: 60)
        threads = try Self.number(parsed.value("threads"), name: "--threads", in: 1...256, default: 16)
        // Asking for threads asks for the loop that has them.
        spinMicroseconds = try Self.number(
            parsed.value("spin-us"), name: "--spin-us", in: 0...100_000, default: parsed.value("threads") == nil ? 200 : 0)
        readAhead = !parsed.has("no-read-ahead")
        folderZips = !parsed.has("no-folder-zips")
        leanWalkAfter = try Self.number(parsed.value("lean-walk-after"), name: "--lean-walk-after", in: 0...1_000_000_000, default: 200_000)
        hideNoAccess = parsed.has("hide-no-access")
        fillParallel = try Self.number(
            parsed.value("fill-parallel"), name: "--fill-parallel", in: 1...32, default: FillOptions().parallelism)
        if let given = parsed.value("log-file") {
            guard !given.isEmpty else { throw UsageError(description: "--log-file needs a file") }
            logFile = Environment.absolute(given)
        }
        cacheFolder = try Self.cacheFolder(parsed, profile: profile)
        reader = try Self.readerOptions(parsed, folder: cacheFolder)
        persist = prefetch && watch && !parsed.has("no-persist")
        fresh = parsed.has("fresh")
        let thumbnailCap = try Self.byteCount(
            parsed.value("thumbnail-cache-size"), name: "--thumbnail-cache-size", default: 200 << 20)
        thumbnailCacheSize = parsed.has("no-thumbnails") || thumbnailCap == 0 ? nil : thumbnailCap
        thumbnailSizes = try Self.thumbnailSizes(parsed.value("thumbnail-sizes"), folder: profile.thumbnailFolder)
        let deadlines = try TimeoutOption.parse(parsed.value("timeouts"))
        (http, retryPolicy, staleAfter) = (deadlines.http, deadlines.retryPolicy, deadlines.staleAfter)
        var options = [
            "ro", "default_permissions", "nosuid", "nodev", "noatime", "auto_unmount", "fsname=\(profile.fsname)",
            "subtype=dropboxfs",
        ]
        if parsed.has("allow-other") { options.append("allow_other") }
        for option in fuseOptions {
            // The last fsname= wins (mount helper mode sets the fstab line's source).
            if option.hasPrefix("fsname=") { options.removeAll { $0.hasPrefix("fsname=") } }
            if !options.contains(option) { options.append(option) }
        }
        if options.contains("allow_other") && options.contains("allow_root") {
            throw UsageError(description: "allow_other and allow_root exclude each other: give one")
        }
        mountOptions = options
        refusesKernelInit = environment[Self.refuseInitVariable] == "1"
        clockJumpFile = environment[Self.clockJumpVariable].flatMap { $0.isEmpty ? nil : $0 }
    }

    /// The daemon's log file (--log-file, or the profile's in $XDG_STATE_HOME/dropboxfs), creating
    /// the default's folders (the last one 0700) when needed.
    func logFilePath() throws(CommandFailure) -> String {
        if let logFile { return logFile }
        let folder = profile.stateFolder
        var prefix = ""
        for component in folder.split(separator: "/") {
            prefix += "/" + component
            guard mkdir(prefix, 0o700) == 0 || errno == EEXIST else {
                throw CommandFailure(.failure, "cannot create \(prefix): \(String(cString: strerror(errno)))")
            }
        }
        return profile.logFile
    }

    /// Before any request: the log file can be opened for appending (never through a symlink),
    /// so a bad --log-file is not found only when the daemon starts.
    func checkLogFile() throws(CommandFailure) {
        close(try LogOptions.openLogFile(try logFilePath(), failing: logFile == nil ? .failure : .usage))
    }

    /// Before any request: CACHE_DIR, if it exists, is a folder; it and the folders of stored trees
    /// and contents in it are the daemon's user's own (LocalTrust).
    func checkCacheFolder() throws(CommandFailure) {
        var st = stat()
        if stat(cacheFolder, &st) == 0 && st.st_mode & S_IFMT != S_IFDIR {
            throw CommandFailure(.usage, "the cache folder \(cacheFolder) is not a folder (see --cache-dir)")
        }
        if let problem = LocalTrust.problem(withCacheFolder: cacheFolder) {
            throw CommandFailure(.localFolder, "cannot use the cache folder: \(problem)")
        }
    }

    /// CACHE_DIR: --cache-dir, default the profile's ($XDG_CACHE_HOME/dropboxfs without one).
    private static func cacheFolder(_ parsed: ParsedArguments, profile: Profile) throws(UsageError) -> String {
        if let given = parsed.value("cache-dir") {
            guard !given.isEmpty else { throw UsageError(description: "--cache-dir needs a folder") }
            return Environment.absolute(given)
        }
        return profile.cacheFolder
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

    /// --thumbnail-sizes: some of "normal", "large", "x-large", "xx-large", separated by ',' (or ':',
    /// which -o leaves whole). By default normal and large, and each bigger size whose folder the
    /// desktop made in the thumbnail cache (a HiDPI view that uses it created it).
    private static func thumbnailSizes(_ text: String?, folder: String) throws(UsageError) -> [ThumbnailSize] {
        guard let text else {
            return ThumbnailSize.defaults + [ThumbnailSize.xLarge, .xxLarge].filter { size in
                var info = stat()
                return lstat(folder + "/" + size.rawValue, &info) == 0 && info.st_mode & S_IFMT == S_IFDIR
            }
        }
        var sizes: [ThumbnailSize] = []
        for item in text.split(separator: ",", omittingEmptySubsequences: false).flatMap({
            $0.split(separator: ":", omittingEmptySubsequences: false)
        }) {
            guard let size = ThumbnailSize(rawValue: String(item)) else {
                throw UsageError(
                    description: "--thumbnail-sizes takes normal, large, x-large and xx-large, separated by ',', not \(Log.quoted(text))")
            }
            if !sizes.contains(size) { sizes.append(size) }
        }
        return sizes
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

    private static func number(
        _ text: String?, name: String, in range: ClosedRange<Int>, default value: Int
    ) throws(UsageError) -> Int {
        guard let text else { return value }
        guard let number = Int(text), range.contains(number) else {
            throw UsageError(description: "\(name) must be a number from \(range.lowerBound) to \(range.upperBound)")
        }
        return number
    }

    private static func seconds(_ text: String?, name: String, default value: Double) throws(UsageError) -> Double {
        guard let text else { return value }
        guard let seconds = DurationText.seconds(text), seconds <= 365 * 86400 else {
            throw UsageError(description: "\(name) must be a duration such as 30s, 5m or 1h (or a number of seconds)")
        }
        return seconds
    }
}
