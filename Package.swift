// swift-tools-version:6.0
// dropboxfs: a read-only FUSE filesystem for Dropbox.
//
// Layers (see docs/ARCHITECTURE.md):
//   CFuse, CCurl, CCrypto, CSQLite, CZlib  system libraries (module maps only)
//   CShim                  C wrappers for the variadic libcurl calls Swift cannot make
//   Locking                a mutex the thread sanitizer sees, for sanitizer builds
//   SystemCalls            the system calls every layer makes, wrapped once with their retry rules
//   Log                    the one logger every layer writes through (no other dependency)
//   DropboxAPI             the Dropbox client: models, errors, pacer, transport (libcurl), the zip
//                          reader for folder zips (inflate through zlib)
//   DropboxFS              the filesystem core: inode table, metadata tree, stat mapping, errno table,
//                          the tree store (the tree and its cursor in SQLite across mounts) and the
//                          thumbnail writer (MD5 names through libcrypto)
//   FUSEAdapter            the thin libfuse3 lowlevel layer over DropboxFS
//   dropboxfs              the command-line tool (Sources/CLI)
import PackageDescription

let package = Package(
    name: "dropboxfs",
    products: [
        .executable(name: "dropboxfs", targets: ["dropboxfs"])
    ],
    targets: [
        .systemLibrary(
            name: "CFuse",
            pkgConfig: "fuse3",
            providers: [.apt(["libfuse3-dev"])]
        ),
        .systemLibrary(
            name: "CCurl",
            pkgConfig: "libcurl",
            providers: [.apt(["libcurl4-openssl-dev"])]
        ),
        .systemLibrary(
            name: "CCrypto",
            pkgConfig: "libcrypto",
            providers: [.apt(["libssl-dev"])]
        ),
        .systemLibrary(
            name: "CSQLite",
            pkgConfig: "sqlite3",
            providers: [.apt(["libsqlite3-dev"])]
        ),
        .systemLibrary(
            name: "CZlib",
            pkgConfig: "zlib",
            providers: [.apt(["zlib1g-dev"])]
        ),
        .target(
            name: "CShim",
            dependencies: ["CCurl"]
        ),
        // A mutex the thread sanitizer sees, used in sanitizer builds only (scripts/sanitize).
        .target(name: "Locking"),
        // FileDescriptor, Errno, the clocks, the mount table: system calls wrapped once (Glibc only).
        .target(name: "SystemCalls"),
        .target(name: "Log", dependencies: ["Locking", "SystemCalls"]),
        .target(
            name: "DropboxAPI",
            dependencies: ["CCurl", "CShim", "CCrypto", "CZlib", "Log", "Locking"]
        ),
        .target(
            name: "DropboxFS",
            dependencies: ["DropboxAPI", "CSQLite", "Log", "Locking", "SystemCalls"]
        ),
        .target(
            name: "FUSEAdapter",
            dependencies: ["CFuse", "DropboxFS", "Log", "Locking", "SystemCalls"]
        ),
        .executableTarget(
            name: "dropboxfs",
            dependencies: ["CShim", "DropboxAPI", "DropboxFS", "FUSEAdapter", "Log", "Locking", "SystemCalls"],
            // Not Sources/dropboxfs, which differs from Sources/DropboxFS only by case.
            path: "Sources/CLI",
            plugins: ["BuildInfoPlugin"]
        ),
        // Bakes the commit into dropboxfs --version.
        .plugin(name: "BuildInfoPlugin", capability: .buildTool()),
        .target(
            name: "DropboxTestSupport",
            dependencies: ["DropboxAPI", "CZlib", "Locking"]
        ),
        .testTarget(
            name: "DropboxAPITests",
            dependencies: ["DropboxAPI", "DropboxTestSupport", "Log", "Locking"]
        ),
        .testTarget(
            name: "DropboxFSTests",
            dependencies: ["DropboxFS", "DropboxAPI", "DropboxTestSupport", "Log", "Locking", "SystemCalls"]
        ),
        .testTarget(
            name: "FUSEAdapterTests",
            dependencies: ["FUSEAdapter", "DropboxFS", "DropboxAPI", "Log", "Locking", "SystemCalls"]
        ),
        .testTarget(
            name: "SystemCallsTests",
            dependencies: ["SystemCalls"]
        ),
    ]
)
