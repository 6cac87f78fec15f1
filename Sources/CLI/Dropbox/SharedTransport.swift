// One libcurl transport (one curl thread and connection cache) for the whole process: the API
// client and the OAuth client share it.

import DropboxAPI

enum Shared {
    static let transport = CurlTransport()
}
