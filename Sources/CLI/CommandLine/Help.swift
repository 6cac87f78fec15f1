// The text of `dropboxfs --help` and `dropboxfs COMMAND --help`, made from the declarations in
// Options.swift: every command, every option and every exit code.

import Foundation

enum Help {
    static let width = 100
    static let optionColumn = 30

    static var main: String {
        var lines = ["dropboxfs: your Dropbox account as a read-only folder (FUSE).", "", "Usage:"]
        var rows: [(String, String)] = []
        for command in Options.commands where command.name != "version" {
            rows += command.summaries.map { ("dropboxfs " + $0.0, $0.1) }
        }
        rows += [
            ("dropboxfs SOURCE MOUNTPOINT -o OPTS", "mount as mount.fuse3 and fstab do (SOURCE: a profile)"),
            ("dropboxfs -V, --version", "version, commit, libfuse and libcurl versions"),
            ("dropboxfs -h, --help", "this text"),
            ("dropboxfs COMMAND --help", "the options of a command"),
        ]
        for (left, right) in rows {
            lines.append("  " + left.padding(to: 39) + " " + right)
        }
        lines.append("")
        lines += wrap(mainText, width: width)
        return lines.joined(separator: "\n")
    }

    /// The paragraphs after the command list (also the man page's DESCRIPTION tail).
    static let mainParagraphs = [
        "Unmount with `fusermount3 -u MOUNTPOINT` (or Ctrl-C when mounted with --foreground).",
        "Credentials, first found wins: --access-token-file FILE, DROPBOXFS_ACCESS_TOKEN (a token from "
            + "the app console's \"Generate\" button), then the sign-in stored by `dropboxfs auth` in "
            + "$XDG_CONFIG_HOME/dropboxfs/credentials.json (default ~/.config/dropboxfs).",
        "Several accounts: `--profile NAME` (or DROPBOXFS_PROFILE=NAME) on auth, mount and status gives "
            + "each account its own sign-in, cache and default mount point ~/dropbox-NAME.",
        "Exit codes: " + exitCodes.map { "\($0.0) \($0.1)" }.joined(separator: ", ") + ".",
    ]

    static let exitCodes: [(Int32, String)] = [
        (0, "ok"), (1, "other failure"), (2, "bad command line"), (3, "mount point problem"),
        (4, "missing or rejected credentials"), (5, "Dropbox unreachable"),
        (6, "FUSE unavailable or not allowed (e.g. --allow-other)"),
        (7, "a cache or store folder not the user's own, or writable by other users"),
        (8, "the shared link expired or does not exist"), (9, "wrong password for the shared link"),
        (10, "access to the shared link denied (a password is needed, or it is not open to you)"),
        (11, "a kind of shared link that cannot be mounted"),
    ]

    private static var mainText: String { mainParagraphs.joined(separator: "\n\n") }

    static func command(_ spec: CommandSpec) -> String {
        var lines: [String] = []
        for (index, usage) in spec.usage.enumerated() {
            lines.append((index == 0 ? "Usage: " : "       ") + usage)
        }
        lines.append("")
        lines += wrap(spec.description, width: width)
        let visible = spec.options.filter { !$0.hidden }
        if !visible.isEmpty {
            lines += ["", "Options:"]
            for option in visible {
                let left = "  " + option.synopsis
                let body = wrap(option.help, width: width - optionColumn)
                if left.count + 2 <= optionColumn {
                    lines.append(left.padding(to: optionColumn) + body[0])
                } else {
                    lines.append(left)
                    lines.append(String(repeating: " ", count: optionColumn) + body[0])
                }
                for line in body.dropFirst() { lines.append(String(repeating: " ", count: optionColumn) + line) }
            }
        }
        if !spec.footer.isEmpty {
            lines.append("")
            lines += wrap(spec.footer, width: width)
        }
        return lines.joined(separator: "\n")
    }

    /// Greedy word wrap; paragraphs separated by an empty line stay apart.
    static func wrap(_ text: String, width: Int) -> [String] {
        var out: [String] = []
        for (index, paragraph) in text.components(separatedBy: "\n\n").enumerated() {
            if index > 0 { out.append("") }
            var line = ""
            for word in paragraph.split(whereSeparator: { $0 == " " || $0 == "\n" }) {
                if line.isEmpty {
                    line = String(word)
                } else if line.count + 1 + word.count <= width {
                    line += " " + word
                } else {
                    out.append(line)
                    line = String(word)
                }
            }
            out.append(line)
        }
        return out
    }
}

extension String {
    func padding(to length: Int) -> String {
        count >= length ? self + " " : self + String(repeating: " ", count: length - count)
    }
}
