// A small command-line parser: long and short flags with or without values, "--flag=value", and
// positional arguments. The toolchain here has no swift-argument-parser, and the CLI is small.

struct ParsedArguments {
    var flags: [String: [String]] = [:]
    var switches: Set<String> = []
    var positionals: [String] = []

    func value(_ name: String) -> String? { flags[name]?.last }
    func values(_ name: String) -> [String] { flags[name] ?? [] }
    func has(_ name: String) -> Bool { switches.contains(name) }
}

struct UsageError: Error, CustomStringConvertible {
    var description: String
}

/// Declares which flags take a value and which are switches, with their aliases.
struct ArgumentSpec {
    /// Flag name (without dashes) -> canonical name, for flags that take a value.
    var valued: [String: String]
    /// Switch name -> canonical name.
    var switches: [String: String]

    func parse(_ arguments: [String]) throws(UsageError) -> ParsedArguments {
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
            var name = String(argument.drop(while: { $0 == "-" }))
            var inlineValue: String?
            if let equals = name.firstIndex(of: "=") {
                inlineValue = String(name[name.index(after: equals)...])
                name = String(name[..<equals])
            }
            if let canonical = valued[name] {
                let value: String
                if let inlineValue {
                    value = inlineValue
                } else if index < arguments.count {
                    value = arguments[index]
                    index += 1
                } else {
                    throw UsageError(description: "option \(argument) needs a value")
                }
                result.flags[canonical, default: []].append(value)
            } else if let canonical = switches[name], inlineValue == nil {
                result.switches.insert(canonical)
            } else {
                throw UsageError(description: "unknown option \(argument) (see --help)")
            }
        }
        return result
    }
}
