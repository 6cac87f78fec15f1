// `dropboxfs deleted DIR [--since DATE]`: the files deleted under a folder of a mount that Dropbox
// still keeps, most recently deleted first, read from DIR/.dropboxfs-deleted (docs/SEMANTICS.md,
// "History"), deleted folders walked into. Each file costs the mount one request the first time
// (its last revision and deletion time). `--json` prints one array whose entries each carry
// `path`, where the deleted file reads on the mount, and `original`, where it was.

enum DeletedCommand {
    static func run(_ arguments: [String]) throws -> ExitCode {
        let parsed = try Options.deleted.parse(arguments)
        if parsed.has("help") {
            printOut(Help.command(Options.deleted))
            return .success
        }
        guard parsed.positionals.count == 1 else { throw UsageError(description: "deleted takes one DIR: a folder on a mount") }
        let since = try parsed.value("since").map(HistoryFiles.parseDate)
        let folder = try HistoryFiles.realFolder(parsed.positionals[0])
        try HistoryFiles.requireMount(folder, view: HistoryFiles.deletedName)
        let view = folder + "/" + HistoryFiles.deletedName
        var found: [(file: HistoryFiles.File, original: String)] = []
        var pending = [""]
        while let relative = pending.popLast() {
            for name in try HistoryFiles.names(in: view + relative) {
                let inside = relative + "/" + name
                if let file = try HistoryFiles.file(at: view + inside) {
                    if let since, file.time < since { continue }
                    found.append((file, folder + inside))
                } else {
                    pending.append(inside)
                }
            }
        }
        found.sort { ($0.file.time, $1.original) > ($1.file.time, $0.original) }
        if parsed.has("json") {
            StatusWatch.printJSON(
                HistoryFiles.json(
                    found.map { entry in
                        var object: [String: Any] = [
                            "path": entry.file.path, "original": entry.original, "deleted": HistoryFiles.time(entry.file.time),
                            "size": entry.file.size,
                        ]
                        if let rev = entry.file.rev { object["rev"] = rev }
                        if let hash = entry.file.contentHash { object["content_hash"] = hash }
                        return object
                    }))
            return .success
        }
        for entry in found {
            printOut("\(HistoryFiles.time(entry.file.time))  \(entry.file.size) bytes  \(entry.original)\n    \(entry.file.path)")
        }
        if found.isEmpty { printOut("nothing deleted under \(folder)" + (since == nil ? "" : " since \(parsed.value("since") ?? "")")) }
        return .success
    }
}
