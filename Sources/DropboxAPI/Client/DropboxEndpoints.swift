// The four base URLs the client talks to. They default to Dropbox and are replaced (environment or
// flags) to point at the fake server; plain http://127.0.0.1:PORT works for all of them.

import Foundation

public struct DropboxEndpoints: Sendable, Equatable {
    /// RPC routes and the OAuth token endpoint.
    public var api: String
    /// Download-style routes.
    public var content: String
    /// files/list_folder/longpoll.
    public var notify: String
    /// The web host showing the authorize page.
    public var oauth: String

    /// Trailing slashes of each base URL are dropped.
    public init(api: String, content: String, notify: String, oauth: String) {
        self.api = Self.trimmed(api)
        self.content = Self.trimmed(content)
        self.notify = Self.trimmed(notify)
        self.oauth = Self.trimmed(oauth)
    }

    /// Every endpoint at one base URL (the fake server serves all four).
    public init(all base: String) {
        self.init(api: base, content: base, notify: base, oauth: base)
    }

    public static let dropbox = DropboxEndpoints(
        api: "https://api.dropboxapi.com", content: "https://content.dropboxapi.com",
        notify: "https://notify.dropboxapi.com", oauth: "https://www.dropbox.com")

    /// The Dropbox defaults, each replaced by DROPBOXFS_API_URL, DROPBOXFS_CONTENT_URL,
    /// DROPBOXFS_NOTIFY_URL or DROPBOXFS_OAUTH_URL when set and non-empty.
    public static func fromEnvironment(
        _ environment: [String: String] = ProcessInfo.processInfo.environment
    ) -> DropboxEndpoints {
        func pick(_ name: String, _ fallback: String) -> String {
            guard let value = environment[name], !value.isEmpty else { return fallback }
            return value
        }
        let d = dropbox
        return DropboxEndpoints(
            api: pick("DROPBOXFS_API_URL", d.api), content: pick("DROPBOXFS_CONTENT_URL", d.content),
            notify: pick("DROPBOXFS_NOTIFY_URL", d.notify), oauth: pick("DROPBOXFS_OAUTH_URL", d.oauth))
    }

    /// `POST` target of the OAuth code exchange and refresh.
    public var tokenURL: String { api + "/oauth2/token" }

    public var authorizeURL: String { oauth + "/oauth2/authorize" }

    func rpc(_ route: String) -> String { api + "/2/" + route }
    func contentRoute(_ route: String) -> String { content + "/2/" + route }
    func notifyRoute(_ route: String) -> String { notify + "/2/" + route }

    private static func trimmed(_ url: String) -> String {
        var url = Substring(url)
        while url.hasSuffix("/") { url = url.dropLast() }
        return String(url)
    }
}
