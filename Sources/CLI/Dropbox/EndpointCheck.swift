// The endpoints every command uses, checked before anything is sent (DropboxEndpoints.checked):
// plain http to another machine is refused as a usage error, any endpoint that is not Dropbox's own
// gets one warning line.

import DropboxAPI
import Log

extension DropboxEndpoints {
    /// The endpoints, once checked; throws a usage error for one that must not be used.
    func approved() throws(UsageError) -> DropboxEndpoints {
        let warnings: [String]
        do {
            warnings = try checked()
        } catch {
            throw UsageError(description: error.description)
        }
        for warning in warnings { Log.warning(warning) }
        return self
    }
}
