// `dropboxfs versions PATH`: the earlier versions Dropbox keeps of a file on a mount, newest first,
// read from FOLDER/.dropboxfs-versions/NAME (docs/SEMANTICS.md, "History"). Works for a deleted
// file too (give its old path). `--json` prints one array whose entries each carry `path`, where
// that version reads on the mount: `cp "$(dropboxfs versions f --json | jq -r '.[1].path')" .`
// recovers the version before the current one.

#if canImport(Glibc)
    import Glibc
#endif

enum VersionsCommand {
    static func run(_ arguments: [String]) throws -> ExitCode {
        let parsed = try Options.versions.parse(arguments)
        if parsed.has("help") {
            printOut(Help.command(Options.versions))
            return .success
        }
        guard parsed.positionals.count == 1 else { throw UsageError(description: "versions takes one PATH: the file on a mount") }
        let given = parsed.positionals[0]
        let (folder, name) = try HistoryFiles.absolute(given)
        try HistoryFiles.requireMount(folder, view: HistoryFiles.versionsName)
        let view = folder + "/" + HistoryFiles.versionsName + "/" + name
        var st = stat()
        guard stat(view, &st) == 0 else {
            throw CommandFailure(.failure, "\(given): Dropbox keeps no versions of this file")
        }
        let current = HistoryFiles.attribute(folder + "/" + name, "user.dropbox.rev")
        var files: [HistoryFiles.File] = []
        for entry in try HistoryFiles.names(in: view).sorted(by: >) {
            if let file = try HistoryFiles.file(at: view + "/" + entry) { files.append(file) }
        }
        if parsed.has("json") {
            StatusWatch.printJSON(
                HistoryFiles.json(
                    files.map { file in
                        var object: [String: Any] = [
                            "path": file.path, "time": HistoryFiles.time(file.time), "size": file.size,
                            "current": file.rev != nil && file.rev == current,
                        ]
                        if let rev = file.rev { object["rev"] = rev }
                        if let hash = file.contentHash { object["content_hash"] = hash }
                        if let who = file.modifiedBy { object["modified_by"] = who }
                        return object
                    }))
            return .success
        }
        for file in files {
            let mark = file.rev != nil && file.rev == current ? "  (current)" : ""
            let who = file.modifiedBy.map { "  by \($0)" } ?? ""
            printOut("\(HistoryFiles.time(file.time))  \(file.size) bytes  rev \(file.rev ?? "?")\(who)\(mark)\n    \(file.path)")
        }
        if files.isEmpty { printOut("no versions of \(given)") }
        return .success
    }
}
