// The four base URLs the client talks to. They default to Dropbox and are replaced (environment or
// flags) to point at the fake server. Every request carries a bearer token (and sign-in a refresh
// token), so `checked()` refuses plain http:// to anything but a loopback address (127.0.0.0/8,
// ::1): a typo must never send a token in clear text across a network. Any endpoint that is not
// Dropbox's own is worth a warning at start.

import Foundation
import Log

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

    /// A base URL that must not be used.
    public struct Refusal: Error, CustomStringConvertible {
        public let description: String
    }

    /// Checks every base URL: https:// to any host, or http:// to a loopback address only; returns
    /// one warning naming those that are not Dropbox's own (nothing for the defaults).
    public func checked() throws(Refusal) -> [String] {
        var foreign: [String] = []
        let named = [("API", api, Self.dropbox.api), ("content", content, Self.dropbox.content),
                     ("notify", notify, Self.dropbox.notify), ("sign-in", oauth, Self.dropbox.oauth)]
        for (name, url, own) in named {
            guard let parsed = URL(string: url), let scheme = parsed.scheme?.lowercased(),
                let host = parsed.host, !host.isEmpty
            else {
                throw Refusal(description: "the \(name) endpoint \(Log.quoted(url)) is not a URL like https://host")
            }
            switch scheme {
            case "https":
                break
            case "http" where Self.isLoopback(host):
                break
            case "http":
                throw Refusal(
                    description: "the \(name) endpoint \(Log.quoted(url)) uses plain http to a host that is not this "
                        + "machine, which would send your Dropbox token unencrypted; use https:// (plain http is "
                        + "allowed only to 127.0.0.1 or ::1)")
            default:
                throw Refusal(description: "the \(name) endpoint \(Log.quoted(url)) must start with https://")
            }
            if url != own { foreign.append("\(name) \(Log.quoted(url))") }
        }
        if foreign.isEmpty { return [] }
        return ["talking to endpoints that are not Dropbox's own: " + foreign.joined(separator: ", ")]
    }

    /// Whether `host` is a literal loopback address: 127.0.0.0/8 or ::1 (names are not trusted:
    /// what "localhost" resolves to is the machine's configuration).
    static func isLoopback(_ host: String) -> Bool {
        var host = Substring(host)
        if host.hasPrefix("[") && host.hasSuffix("]") { host = host.dropFirst().dropLast() }
        if host == "::1" || host == "0:0:0:0:0:0:0:1" { return true }
        let octets = host.split(separator: ".", omittingEmptySubsequences: false)
        guard octets.count == 4, octets.allSatisfy({ !$0.isEmpty && $0.count <= 3 && $0.allSatisfy(\.isNumber) }),
            let values = Optional(octets.compactMap { UInt8($0) }), values.count == 4
        else { return false }
        return values[0] == 127
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
