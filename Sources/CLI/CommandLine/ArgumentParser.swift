// A small command-line parser: long and short flags with or without values, "--flag=value", and
// positional arguments. The toolchain here has no swift-argument-parser, and the CLI is small.
//
// Every option is declared once, as an `OptionSpec` in a command's `CommandSpec` (Options.swift):
// the parser, `--help`, the man page and the shell completions are all made from that declaration
// (Generators.swift), so they cannot disagree.

struct ParsedArguments {
    var flags: [String: [String]] = [:]
    var switches: Set<String> = []
    /// How often each switch was given (-v -v).
    var counts: [String: Int] = [:]
    var positionals: [String] = []

    func value(_ name: String) -> String? { flags[name]?.last }
    func values(_ name: String) -> [String] { flags[name] ?? [] }
    func has(_ name: String) -> Bool { switches.contains(name) }
}

struct UsageError: Error, CustomStringConvertible {
    var description: String
}

/// One option of one command.
struct OptionSpec: Sendable {
    /// The long name without dashes ("cache-dir"); for an option with only a short form (-o), its
    /// letter. This is the name the parsed arguments use.
    var name: String
    var short: Character?
    /// The placeholder of its value ("DIR"), nil for a switch.
    var value: String?
    /// One paragraph for --help and the man page (wrapped there).
    var help: String
    /// Parsed, but shown nowhere (kept only to answer it with a clear error).
    var hidden = false
    /// May be given as `-o NAME` / `-o NAME=VALUE` (underscores for dashes), as fstab lines do.
    var mountOption = false
    /// What the shell should complete for the value.
    var completion: Completion = .none

    enum Completion: Sendable { case none, file, directory, profile, choices([String]) }

    var hasLongForm: Bool { name.count > 1 }
    var isSwitch: Bool { value == nil }

    /// "-f, --foreground", "--cache-dir DIR", "-o OPTIONS".
    var synopsis: String {
        var forms: [String] = []
        if let short { forms.append("-\(short)") }
        if hasLongForm { forms.append("--\(name)") }
        return forms.joined(separator: ", ") + (value.map { " " + $0 } ?? "")
    }
}

/// A command: its usage lines, what it does, its options and any closing text.
struct CommandSpec: Sendable {
    var name: String
    /// For the command list of `dropboxfs --help`: (arguments, one-line summary) per usage form.
    var summaries: [(String, String)]
    var usage: [String]
    var description: String
    var options: [OptionSpec]
    var footer: String = ""

    func parse(_ arguments: [String]) throws(UsageError) -> ParsedArguments {
        var byLong: [String: OptionSpec] = [:]
        var byShort: [Character: OptionSpec] = [:]
        for option in options {
            if option.hasLongForm { byLong[option.name] = option }
            if let short = option.short { byShort[short] = option }
            if !option.hasLongForm, option.short == nil { byLong[option.name] = option }
        }
        var result = ParsedArguments()
        var index = 0
        var onlyPositionals = false
        while index < arguments.count {
            let argument = arguments[index]
            index += 1
            if onlyPositionals || !argument.hasPrefix("-") || argument == "-" {
                result.positionals.append(argument)
                continue
            }
            if argument == "--" {
                onlyPositionals = true
                continue
            }
            let isLong = argument.hasPrefix("--")
            var name = String(argument.dropFirst(isLong ? 2 : 1))
            var inlineValue: String?
            if let equals = name.firstIndex(of: "=") {
                inlineValue = String(name[name.index(after: equals)...])
                name = String(name[..<equals])
            }
            let option: OptionSpec?
            if isLong {
                option = byLong[name].flatMap { $0.hasLongForm ? $0 : nil }
            } else if name.count == 1 {
                option = byShort[name.first!]
            } else {
                // Short switches run together (-vf), or a short option with its value attached (-oro).
                if let first = byShort[name.first!], !first.isSwitch, inlineValue == nil {
                    result.flags[first.name, default: []].append(String(name.dropFirst()))
                    continue
                }
                let letters = name.compactMap { byShort[$0] }
                guard letters.count == name.count, letters.allSatisfy(\.isSwitch), inlineValue == nil else {
                    throw UsageError(description: "unknown option \(argument) (see --help)")
                }
                for letter in letters { result.record(letter.name) }
                continue
            }
            guard let option else { throw UsageError(description: "unknown option \(argument) (see --help)") }
            if option.isSwitch {
                guard inlineValue == nil else { throw UsageError(description: "option \(isLong ? "--" : "-")\(name) takes no value") }
                result.record(option.name)
                continue
            }
            let value: String
            if let inlineValue {
                value = inlineValue
            } else if index < arguments.count {
                value = arguments[index]
                index += 1
            } else {
                throw UsageError(description: "option \(argument) needs a value")
            }
            result.flags[option.name, default: []].append(value)
        }
        return result
    }
}

extension ParsedArguments {
    mutating func record(_ name: String) {
        switches.insert(name)
        counts[name, default: 0] += 1
    }
}
