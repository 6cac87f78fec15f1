// Entry point: dispatch to a subcommand and turn failures into a one-line message and exit code.

import DropboxAPI

#if canImport(Glibc)
    import Glibc
#endif

Secrets.seal()  // before anything can start a child process (and before the descriptors are sealed)
Daemon.sealInheritedDescriptors()
Environment.fillHome()
let arguments = Array(CommandLine.arguments.dropFirst())
if arguments.first == "mount" {  // a long-running daemon
    OpenFileLimit.raiseToHardLimit()
    MallocArenas.limit()
}

func run(_ arguments: [String]) -> ExitCode {
    guard let command = arguments.first else {
        printOut(Help.main)
        return .usage
    }
    if let invalid = RawArguments.firstInvalid() {
        printError(
            "argument '\(invalid)' is not valid UTF-8: dropboxfs takes paths and names in UTF-8 "
                + "(rename the folder, e.g. with convmv, or choose another)")
        return .usage
    }
    do {
        switch command {
        case "-h", "--help", "help":
            printOut(Help.main)
            return .success
        case "-V", "--version":
            return BuildInfo.printVersion()
        case "version":
            let parsed = try Options.version.parse(Array(arguments.dropFirst()))
            if parsed.has("help") {
                printOut(Help.command(Options.version))
                return .success
            }
            guard parsed.positionals.isEmpty else { throw UsageError(description: "version takes no arguments") }
            return BuildInfo.printVersion()
        case "mount":
            return try MountCommand.run(Array(arguments.dropFirst()))
        case "auth":
            return try AuthCommand.run(Array(arguments.dropFirst()))
        case "status":
            return try StatusCommand.run(Array(arguments.dropFirst()))
        case "pin", "unpin", "pinned":
            return try PinCommand.run(command, Array(arguments.dropFirst()))
        case MountGuard.command:
            return MountGuard.watch(Array(arguments.dropFirst()))
        case Generators.command:
            return try Generators.run(Array(arguments.dropFirst()))
        case "completion":
            let parsed = try Options.completion.parse(Array(arguments.dropFirst()))
            if parsed.has("help") {
                printOut(Help.command(Options.completion))
                return .success
            }
            guard parsed.positionals.count == 1, ["bash", "zsh", "fish"].contains(parsed.positionals[0]) else {
                throw UsageError(description: "completion takes one of: bash, zsh, fish")
            }
            return try Generators.run(parsed.positionals)
        case _ where MountHelper.looksLikeHelperCall(arguments):
            return try MountCommand.run(try MountHelper.mountArguments(arguments))
        default:
            throw CommandFailure(.usage, CommandSuggestion.unknown(command))
        }
    } catch let failure as CommandFailure {
        printError(failure.message)
        return failure.code
    } catch let usage as UsageError {
        printError(usage.description)
        return .usage
    } catch {
        printError("\(error)")
        return .failure
    }
}

exit(run(arguments).rawValue)
