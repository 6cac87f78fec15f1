// Lines about a team space, for the mount log and `dropboxfs status`: which root a mount shows and
// where the member's own folder is in it. Nil for accounts without a team space.

import DropboxAPI

enum TeamSpace {
    /// For the mount log.
    static func mountLine(_ rootInfo: RootInfo, homeOnly: Bool) -> String? {
        guard let space = summary(rootInfo) else { return nil }
        return homeOnly ? "the mount shows only your own folder (--home-only)" : "the mount shows the whole \(space)"
    }

    /// For `dropboxfs status`.
    static func statusLine(_ rootInfo: RootInfo) -> String? {
        summary(rootInfo).map { "\($0) (mounts show all of it; --home-only shows just your folder)" }
    }

    private static func summary(_ rootInfo: RootInfo) -> String? {
        guard rootInfo.rootNamespaceId != rootInfo.homeNamespaceId else { return nil }
        let home = rootInfo.homePath.map { "your folder is \($0)" } ?? "your folder is inside it"
        return "team space (namespace \(rootInfo.rootNamespaceId)); \(home)"
    }
}
