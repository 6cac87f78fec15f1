// Takes secrets out of the text `status --report` prints (BugReport.swift): every secret the
// command can know (the token in the environment, in --access-token-file, the stored sign-in's
// refresh token) is replaced wherever it occurs, and so are values that look like one (a bearer
// token, a Dropbox `sl.` access token, the value of any option or `key=` named for a token, secret
// or password), since a daemon's log or command line may hold credentials the command cannot know.
// Anything that looks like an e-mail address (the account's, in the daemon's sign-in lines) becomes
// `[e-mail]`: a report is meant to be posted, and no bug needs the address (a file name such as
// `icon@2x.png` is hidden too; the report errs on the side of hiding).
// Values only: nothing here changes after it is made.

import Foundation

/// Takes secrets out of text: the known ones wherever they occur, and values that look like one.
struct Redactor {
    static let mark = "[redacted]"
    static let emailMark = "[e-mail]"
    /// Known secrets, longest first (one may contain another); very short ones would blank out
    /// ordinary text and are left to the patterns.
    let secrets: [String]

    init(secrets: [String]) {
        self.secrets = Set(secrets.filter { $0.count >= 6 }).sorted { $0.count > $1.count }
    }

    /// `Bearer X`, Dropbox access tokens (`sl.` and a long tail), and `NAME=VALUE` where NAME
    /// speaks of a token, secret or password but not of a file holding one (and
    /// `"NAME": "VALUE"` in JSON).
    private static let patterns: [(NSRegularExpression, String)] = [
        (try! NSRegularExpression(pattern: "(?i)(bearer\\s+)[^\\s\"',;]+"), "$1" + mark),
        (try! NSRegularExpression(pattern: "\\bsl\\.[A-Za-z0-9_\\-.]{16,}"), mark),
        (
            try! NSRegularExpression(
                pattern: "(?i)\\b([A-Za-z0-9_.-]*(?:token|secret|password)(?![A-Za-z0-9_.-]*file)[A-Za-z0-9_.-]*)(=|\"\\s*:\\s*\")[^\\s\"',;&]+"),
            "$1$2" + mark
        ),
        (try! NSRegularExpression(pattern: "[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\\.[A-Za-z0-9-]+)*\\.[A-Za-z]{2,}"), emailMark),
    ]

    func clean(_ text: String) -> String {
        var out = text
        for secret in secrets { out = out.replacingOccurrences(of: secret, with: Self.mark) }
        for (pattern, template) in Self.patterns {
            out = pattern.stringByReplacingMatches(
                in: out, range: NSRange(out.startIndex..., in: out), withTemplate: template)
        }
        return out
    }

    /// A command line with the value of any option named for a token, secret or password (not a
    /// file holding one) replaced: `--app-secret X` and `--app-secret=X` alike.
    static func command(_ arguments: [String]) -> [String] {
        var out: [String] = []
        var hideNext = false
        for argument in arguments {
            if hideNext {
                out.append(mark)
                hideNext = false
                continue
            }
            let name = argument.split(separator: "=", maxSplits: 1).first.map(String.init) ?? argument
            let secretive = argument.hasPrefix("-") && isSecretName(name)
            if secretive && argument.contains("=") {
                out.append(name + "=" + mark)
            } else {
                hideNext = secretive
                out.append(argument)
            }
        }
        return out
    }

    static func isSecretName(_ name: String) -> Bool {
        let lower = name.lowercased()
        return ["token", "secret", "password"].contains { lower.contains($0) } && !lower.hasSuffix("file")
    }
}
