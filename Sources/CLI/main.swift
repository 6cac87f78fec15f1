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
        case MountGuard.command:
            return MountGuard.watch(Array(arguments.dropFirst()))
        case Generators.command:
            return try Generators.run(Array(arguments.dropFirst()))
        case _ where MountHelper.looksLikeHelperCall(arguments):
            return try MountCommand.run(try MountHelper.mountArguments(arguments))
        default:
            throw CommandFailure(.usage, "unknown command '\(command)' (see dropboxfs --help)")
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
