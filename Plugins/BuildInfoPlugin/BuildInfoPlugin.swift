// Bakes the commit dropboxfs is built from into the binary (`dropboxfs --version`): a prebuild
// command writes BuildCommit.swift with `git rev-parse --short=12 HEAD` for the package's folder
// ("-modified" when tracked files differ from it), or "unknown" outside a git checkout. The file is
// rewritten only when its text changes, so an unchanged commit costs no recompilation.
// SwiftPM runs prebuild commands when it plans a build (first build, a changed manifest or set of
// files), not on every incremental build, so a development build may name an earlier commit;
// scripts/install touches Package.swift first, so release builds always name their own.

import Foundation
import PackagePlugin

@main
struct BuildInfoPlugin: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: Target) throws -> [Command] {
        let output = context.pluginWorkDirectoryURL.appending(path: "generated")
        let script = #"""
            set -e
            mkdir -p "$2"
            commit=$(git -C "$1" rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
            if [ "$commit" != unknown ] && [ -n "$(git -C "$1" status --porcelain --untracked-files=no 2>/dev/null)" ]; then
              commit="$commit-modified"
            fi
            text="let buildCommit = \"$commit\""
            if [ "$(cat "$2/BuildCommit.swift" 2>/dev/null)" != "$text" ]; then
              printf '%s\n' "$text" > "$2/BuildCommit.swift"
            fi
            """#
        return [
            .prebuildCommand(
                displayName: "Recording the commit for dropboxfs --version",
                executable: URL(fileURLWithPath: "/bin/sh"),
                arguments: ["-c", script, "sh", context.package.directoryURL.path, output.path],
                outputFilesDirectory: output)
        ]
    }
}
