// The man page and the bash, zsh and fish completions, made from the declarations in Options.swift
// (the same ones the parser and --help use). `dropboxfs __generate man|bash|zsh|fish|options`
// prints one; scripts/install and scripts/package-deb install them, and
// Tests/Mount/test_options.py checks that each names exactly the declared options.

import Foundation

enum Generators {
    static let command = "__generate"

    static func run(_ arguments: [String]) throws -> ExitCode {
        guard arguments.count == 1 else { throw UsageError(description: "\(command) takes one of: man, bash, zsh, fish, options") }
        switch arguments[0] {
        case "man": printRaw(manPage())
        case "bash": printRaw(bash())
        case "zsh": printRaw(zsh())
        case "fish": printRaw(fish())
        case "options": printRaw(optionsJSON())
        default: throw UsageError(description: "\(command) takes one of: man, bash, zsh, fish, options")
        }
        return .success
    }

    private static func printRaw(_ text: String) {
        let bytes = Array((text.hasSuffix("\n") ? text : text + "\n").utf8)
        var offset = 0
        while offset < bytes.count {
            let n = bytes[offset...].withUnsafeBytes { write(1, $0.baseAddress!, $0.count) }
            if n <= 0 { break }
            offset += n
        }
    }

    private static func visible(_ spec: CommandSpec) -> [OptionSpec] { spec.options.filter { !$0.hidden } }

    // ---- man page --------------------------------------------------------------------------------

    /// Text for roff: backslashes escaped, hyphens as \-, no line starting with a control character.
    static func roff(_ text: String) -> String {
        var out = text.replacingOccurrences(of: "\\", with: "\\e").replacingOccurrences(of: "-", with: "\\-")
        if out.hasPrefix(".") || out.hasPrefix("'") { out = "\\&" + out }
        return out.replacingOccurrences(of: "\n.", with: "\n\\&.").replacingOccurrences(of: "\n'", with: "\n\\&'")
    }

    /// The app console steps and `dropboxfs auth`, in the order a user takes them.
    static let signInSteps = [
        "Open https://www.dropbox.com/developers/apps and choose Create app.",
        "Choose Scoped access, then Full Dropbox, and give the app a name (e.g. dropboxfs-yourname).",
        "On the app's Permissions tab tick account_info.read, files.metadata.read and files.content.read, "
            + "then Submit (dropboxfs only reads; it needs nothing else).",
        "On the Settings tab copy the App key. No app secret is needed: sign-in uses PKCE.",
        "Run `dropboxfs auth --app-key KEY` (with --profile NAME for another account). It prints an address "
            + "and waits: open the address in a browser (dropboxfs starts none; on a desktop, `xdg-open 'ADDRESS'` "
            + "in another terminal), allow access, and paste the code Dropbox shows, in the same run.",
    ]

    static func manPage() -> String {
        var m: [String] = []
        m.append(".TH DROPBOXFS 1 \"\" \"dropboxfs \(BuildInfo.version)\" \"User Commands\"")
        m += [".SH NAME", "dropboxfs \\- your Dropbox account as a read\\-only folder (FUSE)", ".SH SYNOPSIS"]
        for spec in Options.commands {
            for usage in spec.usage { m += [".nf", roff(usage), ".fi", ".br"] }
        }
        m += [".SH DESCRIPTION"]
        m.append(roff(
            "dropboxfs shows a Dropbox account as a read-only folder: ls, find, du, file managers and cat work on "
                + "the remote tree without syncing it to disk first. The whole account is listed in the background "
                + "after the first mount, changes made elsewhere appear within seconds, and the tree is kept for the "
                + "next mount (which is then instant, and works offline)."))
        for paragraph in Help.mainParagraphs.dropLast() { m += [".PP", roff(paragraph)] }
        m += [".SH \"SIGN IN\"", roff("Once, with a Dropbox app of your own (the same steps as README.md, \"Sign in\"):")]
        for (number, step) in signInSteps.enumerated() { m += [".IP \(number + 1). 4", roff(step)] }
        m.append(".SH COMMANDS")
        for spec in Options.commands {
            m += [".SS \"dropboxfs \(roff(spec.name))\"", ".nf"] + spec.usage.map(roff) + [".fi", ".PP", roff(spec.description)]
            for option in visible(spec) {
                var forms: [String] = []
                if let short = option.short { forms.append("\\fB\\-\(short)\\fR") }
                if option.hasLongForm { forms.append("\\fB\\-\\-\(roff(option.name))\\fR") }
                var head = forms.joined(separator: ", ")
                if let value = option.value { head += " \\fI\(roff(value))\\fR" }
                m += [".TP", head, roff(option.help)]
            }
            if !spec.footer.isEmpty { m += [".PP", roff(spec.footer)] }
        }
        m += [".SH \"FSTAB AND MOUNT HELPER\"", roff(
            "mount(8) and mount.fuse3 run dropboxfs as `dropboxfs SOURCE MOUNTPOINT -o OPTIONS`: SOURCE names the "
                + "profile (`dropboxfs` or `default` for none), and each -o item is a long option of mount. An fstab "
                + "line that mounts a profile's account at the first access, as user me:"),
              ".PP", ".nf",
              roff("work  /home/me/dropbox-work  fuse.dropboxfs  ro,noauto,x-systemd.automount,_netdev,setuid=me  0  0"),
              ".fi", ".PP", roff(
                "The user signs in once with `dropboxfs auth --profile work`. setuid=me makes mount.fuse3 run the "
                    + "daemon as that user; dropboxfs then takes HOME from the user database.")]
        m += [".SH SYSTEMD", roff(
            "The user units dropboxfs.service (mounts ~/dropbox) and dropboxfs@NAME.service (the profile NAME on "
                + "~/dropbox-NAME) start the daemon at login: `systemctl --user enable --now dropboxfs`. In the "
                + "foreground the daemon tells systemd when the mount is ready (READY=1) and when it stops "
                + "(STOPPING=1); its log then goes to the journal (`journalctl --user -u dropboxfs`).")]
        m += [".SH \"EXIT STATUS\""]
        for (code, meaning) in Help.exitCodes { m += [".TP", "\\fB\(code)\\fR", roff(meaning)] }
        m += [".SH ENVIRONMENT"]
        let environment: [(String, String)] = [
            ("DROPBOXFS_ACCESS_TOKEN", "an access token to use instead of the stored sign-in"),
            ("DROPBOXFS_PROFILE", "the profile when --profile is not given"),
            ("DROPBOXFS_APP_KEY", "the app key for `dropboxfs auth`"),
            ("DROPBOXFS_API_URL, DROPBOXFS_CONTENT_URL, DROPBOXFS_NOTIFY_URL, DROPBOXFS_OAUTH_URL", "other servers (tests)"),
            ("XDG_CONFIG_HOME, XDG_CACHE_HOME, XDG_STATE_HOME", "where sign-ins, caches and logs live"),
            ("NOTIFY_SOCKET", "systemd's notification socket (READY=1, STOPPING=1)"),
            ("JOURNAL_STREAM", "when standard error is the journal, log lines carry no time of their own"),
        ]
        for (name, meaning) in environment { m += [".TP", "\\fB\(roff(name))\\fR", roff(meaning)] }
        m += [".SH FILES"]
        let files: [(String, String)] = [
            ("~/.config/dropboxfs/credentials.json", "the stored sign-in (profiles: ~/.config/dropboxfs/profiles/NAME/)"),
            ("~/.cache/dropboxfs/", "content cache (content/) and stored trees (trees/); profiles: ~/.cache/dropboxfs/profiles/NAME/"),
            ("~/.local/state/dropboxfs/dropboxfs.log", "the background daemon's log (dropboxfs-NAME.log for a profile)"),
        ]
        for (name, meaning) in files { m += [".TP", "\\fI\(roff(name))\\fR", roff(meaning)] }
        m += [".SH \"SEE ALSO\"", "fusermount3(1), mount.fuse3(8), fstab(5), systemd.unit(5)"]
        return m.joined(separator: "\n")
    }

    // ---- completions -----------------------------------------------------------------------------

    private static func forms(_ option: OptionSpec) -> [String] {
        var result: [String] = []
        if let short = option.short { result.append("-\(short)") }
        if option.hasLongForm { result.append("--\(option.name)") } else if option.short == nil { result.append("-\(option.name)") }
        return result
    }

    private static var globalWords: [String] { Options.global.flatMap(forms) }

    static func bash() -> String {
        var s = """
            # bash completion for dropboxfs (made by `dropboxfs __generate bash` from its option declarations)
            _dropboxfs() {
                local cur prev command="" i
                cur="${COMP_WORDS[COMP_CWORD]}"
                prev="${COMP_WORDS[COMP_CWORD-1]}"
                for ((i = 1; i < COMP_CWORD; i++)); do
                    case "${COMP_WORDS[i]}" in
                        \(Options.commands.map(\.name).joined(separator: "|"))) command="${COMP_WORDS[i]}"; break ;;
                    esac
                done
                case "$command" in

            """
        for spec in Options.commands {
            s += "        \(spec.name))\n            case \"$prev\" in\n"
            for option in visible(spec) where !option.isSwitch {
                let words = forms(option).joined(separator: "|")
                let action: String
                switch option.completion {
                case .file: action = "COMPREPLY=($(compgen -f -- \"$cur\"))"
                case .directory: action = "COMPREPLY=($(compgen -d -- \"$cur\"))"
                case .profile:
                    action = "COMPREPLY=($(compgen -W \"$(ls \"${XDG_CONFIG_HOME:-$HOME/.config}/dropboxfs/profiles\" 2>/dev/null)\" -- \"$cur\"))"
                case .choices(let choices): action = "COMPREPLY=($(compgen -W \"\(choices.joined(separator: " "))\" -- \"$cur\"))"
                case .none: action = "COMPREPLY=()"
                }
                s += "                \(words)) \(action); return ;;\n"
            }
            s += "            esac\n"
            let words = visible(spec).flatMap(forms).joined(separator: " ")
            let positional: String
            switch spec.name {
            case "mount", "pinned": positional = "COMPREPLY=($(compgen -d -- \"$cur\"))"
            case "pin", "unpin": positional = "COMPREPLY=($(compgen -f -- \"$cur\"))"
            default: positional = "COMPREPLY=()"
            }
            s += "            if [[ \"$cur\" == -* ]]; then COMPREPLY=($(compgen -W \"\(words)\" -- \"$cur\")); else \(positional); fi\n"
            s += "            ;;\n"
        }
        s += """
                    *) COMPREPLY=($(compgen -W "\(Options.commands.map(\.name).joined(separator: " ")) \(globalWords.joined(separator: " "))" -- "$cur")) ;;
                esac
            }
            complete -F _dropboxfs dropboxfs

            """
        return s
    }

    /// Text inside a zsh single-quoted _arguments spec's [description].
    private static func zshText(_ text: String) -> String {
        short(text).replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "'", with: "'\\''")
            .replacingOccurrences(of: "[", with: "\\[").replacingOccurrences(of: "]", with: "\\]")
            .replacingOccurrences(of: ":", with: "\\:")
    }

    /// The first clause of a help text, for completion menus.
    private static func short(_ text: String) -> String {
        var end = text.endIndex
        for separator in ["; ", " (", ": ", ", e.g."] {
            if let range = text.range(of: separator), range.lowerBound < end { end = range.lowerBound }
        }
        return String(text[..<end])
    }

    static func zsh() -> String {
        var s = """
            #compdef dropboxfs
            # zsh completion for dropboxfs (made by `dropboxfs __generate zsh` from its option declarations)

            _dropboxfs_profiles() {
                local -a profiles
                profiles=(${XDG_CONFIG_HOME:-$HOME/.config}/dropboxfs/profiles/*(N:t))
                _describe 'profile' profiles
            }

            _dropboxfs() {
                local -a commands
                commands=(

            """
        for spec in Options.commands {
            s += "        '\(spec.name):\(zshText(spec.summaries[0].1))'\n"
        }
        s += "    )\n"
        s += "    if (( CURRENT == 2 )); then\n"
        s += "        _describe 'command' commands\n"
        s += "        compadd -- \(globalWords.joined(separator: " "))\n"
        s += "        return\n"
        s += "    fi\n"
        s += "    local command=$words[2]\n"
        s += "    shift words; (( CURRENT-- ))\n"
        s += "    case $command in\n"
        for spec in Options.commands {
            s += "        \(spec.name))\n            _arguments -s \\\n"
            for option in visible(spec) {
                let description = "[\(zshText(option.help))]"
                var action = ""
                if let value = option.value {
                    switch option.completion {
                    case .file: action = ":\(value):_files"
                    case .directory: action = ":\(value):_files -/"
                    case .profile: action = ":\(value):_dropboxfs_profiles"
                    case .choices(let choices): action = ":\(value):(\(choices.joined(separator: " ")))"
                    case .none: action = ":\(value): "
                    }
                }
                for form in forms(option) {
                    let equals = option.value != nil && form.hasPrefix("--") ? "=" : ""
                    let plus = option.value != nil && !form.hasPrefix("--") ? "+" : ""
                    s += "                '\(form)\(equals)\(plus)\(description)\(action)' \\\n"
                }
            }
            if spec.name == "mount" { s += "                '1:mount point:_files -/' \\\n" }
            if spec.name == "pinned" { s += "                '*:mount point:_files -/' \\\n" }
            if spec.name == "pin" || spec.name == "unpin" { s += "                '*:path:_files' \\\n" }
            s += "                && return\n            ;;\n"
        }
        s += "    esac\n}\n\n_dropboxfs \"$@\"\n"
        return s
    }

    private static func fishText(_ text: String) -> String {
        short(text).replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "'", with: "\\'")
    }

    static func fish() -> String {
        var s = "# fish completion for dropboxfs (made by `dropboxfs __generate fish` from its option declarations)\n"
        s += "complete -c dropboxfs -f\n"
        let names = Options.commands.map(\.name).joined(separator: " ")
        for spec in Options.commands {
            s += "complete -c dropboxfs -n 'not __fish_seen_subcommand_from \(names)' -a \(spec.name) -d '\(fishText(spec.summaries[0].1))'\n"
        }
        for option in Options.global {
            var line = "complete -c dropboxfs -n 'not __fish_seen_subcommand_from \(names)'"
            if let short = option.short { line += " -s \(short)" }
            line += " -l \(option.name) -d '\(fishText(option.help))'"
            s += line + "\n"
        }
        for spec in Options.commands {
            for option in visible(spec) {
                var line = "complete -c dropboxfs -n '__fish_seen_subcommand_from \(spec.name)'"
                if let short = option.short { line += " -s \(short)" }
                if option.hasLongForm { line += " -l \(option.name)" } else if option.short == nil { line += " -s \(option.name)" }
                if option.value != nil {
                    // -x: takes a value, and no file names unless listed here (-F would offer
                    // files after every option of the command).
                    line += " -x"
                    switch option.completion {
                    case .file: line += " -a '(__fish_complete_path (commandline -ct))'"
                    case .directory: line += " -a '(__fish_complete_directories (commandline -ct))'"
                    case .profile:
                        line += " -a '(command ls (set -q XDG_CONFIG_HOME; and echo $XDG_CONFIG_HOME; or echo ~/.config)/dropboxfs/profiles 2>/dev/null)'"
                    case .choices(let choices): line += " -a '\(choices.joined(separator: " "))'"
                    case .none: break
                    }
                }
                s += line + " -d '\(fishText(option.help))'\n"
            }
            if spec.name == "mount" || spec.name == "pinned" {
                s += "complete -c dropboxfs -n '__fish_seen_subcommand_from \(spec.name)' -a '(__fish_complete_directories (commandline -ct))'\n"
            }
            if spec.name == "pin" || spec.name == "unpin" {
                s += "complete -c dropboxfs -n '__fish_seen_subcommand_from \(spec.name)' -F\n"
            }
        }
        return s
    }

    // ---- the declarations themselves, for tests ----------------------------------------------------

    static func optionsJSON() -> String {
        func quote(_ text: String) -> String {
            "\"" + text.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"") + "\""
        }
        func encode(_ option: OptionSpec) -> String {
            var fields = ["\"name\": \(quote(option.name))"]
            fields.append("\"short\": " + (option.short.map { quote(String($0)) } ?? "null"))
            fields.append("\"long\": \(option.hasLongForm)")
            fields.append("\"value\": " + (option.value.map(quote) ?? "null"))
            fields.append("\"hidden\": \(option.hidden)")
            fields.append("\"mount_option\": \(option.mountOption)")
            return "{" + fields.joined(separator: ", ") + "}"
        }
        var commands: [String] = []
        for spec in Options.commands {
            commands.append("\(quote(spec.name)): [" + spec.options.map(encode).joined(separator: ", ") + "]")
        }
        return "{\"global\": [" + Options.global.map(encode).joined(separator: ", ") + "], \"commands\": {"
            + commands.joined(separator: ", ") + "}}"
    }
}
