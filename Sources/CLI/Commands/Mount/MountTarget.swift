// What a mount shows: the account and root Dropbox names for the credentials, or, when Dropbox
// cannot be reached, the stored tree tied to those credentials (docs/SEMANTICS.md, "Stored tree and
// offline"). Without such a tree, or with --fresh, an unreachable Dropbox stays a failure with its
// own exit code.

import DropboxAPI
import DropboxFS
import Log

struct MountTarget {
    var identity: TreeStoreIdentity
    var email: String
    /// Dropbox could not be reached: the stored tree is served and the mount starts offline.
    var offline: Bool
    /// The team-space line for the log (online only).
    var teamLine: String?

    static func resolve(
        _ configuration: MountConfiguration, client: DropboxHTTPClient, accountID: String?, tokenTag: String?
    ) throws(CommandFailure) -> MountTarget {
        let account: FullAccount
        do {
            account = try AccountCheck.verify(client, endpoints: configuration.endpoints)
        } catch let failure where failure.code == .unreachable && configuration.persist && !configuration.fresh {
            guard let info = StoredTrees.offlineTree(configuration, accountID: accountID, tokenTag: tokenTag) else {
                // With a bare token, only a tree stored by a mount with this same token is its
                // account's: a tree found by the mount point alone may be another account's.
                let which = accountID == nil ? "; an access token is served only a tree stored with that same token" : ""
                throw CommandFailure(
                    .unreachable,
                    failure.message + "; there is no stored tree of this account to browse offline (mount it once online\(which))")
            }
            Log.warning("\(failure.message); serving the stored tree of \(Log.quoted(info.email)) offline")
            return MountTarget(identity: info.identity, email: info.email, offline: true)
        }
        // A team-space member sees the whole team space (their own folder is one folder of it).
        let pathRoot = PathRoot.forAccount(account.rootInfo, homeOnly: configuration.homeOnly)
        return MountTarget(
            identity: TreeStoreIdentity(accountID: account.accountId, pathRoot: pathRoot, endpoint: configuration.endpoints.api),
            email: account.email, offline: false,
            teamLine: TeamSpace.mountLine(account.rootInfo, homeOnly: configuration.homeOnly))
    }
}
