// OAuth token endpoint replies (ReplyInput; a word "refresh" on the status line makes it the reply
// to a refresh rather than to a code exchange). A 200 is decoded as a TokenGrant as OAuthClient does,
// and its lifetime bounded as RefreshingTokenProvider does; any other status goes through
// OAuthClient.error. Besides not crashing:
//
// - a grant's lifetime is within ServerLimits.minTokenLifetime...maxTokenLifetime;
// - an OAuth error body of a 4xx (other than 429) gives .oauth, or for invalid_grant on a refresh
//   the "sign in again" failure; everything else maps as any reply does (ReplyChecks).

@testable import DropboxAPI

enum OAuthReplyFuzz {
    static func check(_ input: UnsafeBufferPointer<UInt8>) -> String? {
        let reply = ReplyInput(input)
        let isRefresh = reply.words.contains("refresh")
        if reply.status == 200 {
            guard let grant = try? DropboxHTTPClient.decode(TokenGrant.self, from: reply.body, route: "oauth2/token")
            else { return nil }
            if let seconds = grant.expiresIn {
                let lifetime = ServerLimits.tokenLifetime(seconds)
                guard lifetime >= ServerLimits.minTokenLifetime, lifetime <= ServerLimits.maxTokenLifetime else {
                    return "expires_in \(seconds) became a lifetime of \(lifetime) s"
                }
            }
            return nil
        }
        let error = OAuthClient.error(
            status: reply.status, headers: reply.headers, body: reply.body, isRefresh: isRefresh)
        if (400..<500).contains(reply.status), reply.status != 429, let json = JSONValue.parse(reply.body),
            let code = json["error"]?.string
        {
            switch error {
            case .oauth(let got, _) where got == code && !(code == "invalid_grant" && isRefresh): return nil
            case .authentication(.noCredentials) where code == "invalid_grant" && isRefresh: return nil
            default: return "OAuth error \(Exact.render(code)) gave \(error)"
            }
        }
        return ReplyChecks.check(error, status: reply.status)
    }
}
