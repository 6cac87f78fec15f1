// The answer to an unknown command: the nearest command by edit distance when it is close enough
// to be a typo ("did you mean 'mount'?"), so `dropboxfs mout ~/dropbox` says what went wrong
// instead of being taken for something else.

import Log

enum CommandSuggestion {
    /// Commands a user types ("help" too).
    static var names: [String] { Options.commands.map(\.name) + ["help"] }

    static func unknown(_ command: String) -> String {
        let shown = Log.escaped(command)
        if let near = nearest(to: command) {
            return "unknown command '\(shown)'; did you mean '\(near)'? (see dropboxfs --help)"
        }
        return "unknown command '\(shown)' (see dropboxfs --help)"
    }

    /// The command within two edits of `word` (a third of its length at most), the nearest first.
    static func nearest(to word: String) -> String? {
        let typed = Array(word.lowercased().unicodeScalars)
        guard !typed.isEmpty, typed.count <= 32 else { return nil }
        let scored = names.map { ($0, distance(typed, Array($0.unicodeScalars))) }
        guard let best = scored.min(by: { $0.1 < $1.1 }) else { return nil }
        let allowed = min(2, max(1, typed.count / 3))
        return best.1 <= allowed ? best.0 : nil
    }

    /// Levenshtein distance, with a swap of two neighbours counting one (a common typo).
    static func distance(_ a: [Unicode.Scalar], _ b: [Unicode.Scalar]) -> Int {
        if a.isEmpty { return b.count }
        if b.isEmpty { return a.count }
        var table = [[Int]](repeating: [Int](repeating: 0, count: b.count + 1), count: a.count + 1)
        for i in 0...a.count { table[i][0] = i }
        for j in 0...b.count { table[0][j] = j }
        for i in 1...a.count {
            for j in 1...b.count {
                let cost = a[i - 1] == b[j - 1] ? 0 : 1
                var best = min(table[i - 1][j] + 1, table[i][j - 1] + 1, table[i - 1][j - 1] + cost)
                if i > 1, j > 1, a[i - 1] == b[j - 2], a[i - 2] == b[j - 1] { best = min(best, table[i - 2][j - 2] + 1) }
                table[i][j] = best
            }
        }
        return table[a.count][b.count]
    }
}
