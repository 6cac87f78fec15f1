// Tests that read log lines. The log sink is process-wide, so every such test lives in this one
// serialized suite. No token, Authorization value or refresh token may appear in an error
// description or a log line, whatever the outcome of the request.

import DropboxTestSupport
import Log
import Testing

@testable import DropboxAPI

@Suite(.serialized) struct LogCaptureTests {
    static let secret = "sl.SECRET-ACCESS-TOKEN-0123456789"
    static let refreshSecret = "REFRESH-SECRET-9876543210"

    @Test func errorsAndLogsNeverCarryTokens() async throws {
        let replies: [HTTPResponse] = [
            .json(#"{"error_summary":"expired_access_token/..","error":{".tag":"expired_access_token"}}"#, status: 401),
            .json(#"{"error":"invalid_grant","error_description":"refresh token is invalid or revoked"}"#, status: 400),
            .text(#"Error in call to API function "files/list_folder": bad"#, status: 400),
            .json(
                #"{"error_summary":"path/not_found/..","error":{".tag":"path","path":{".tag":"not_found"}}}"#,
                status: 409),
            .text("down", status: 503),
        ]
        let transport = ScriptedTransport(replies: replies)
        let oauth = OAuthClient(
            appKey: "key", endpoints: DropboxEndpoints(all: "http://x.test"), transport: transport,
            pacer: Pacer(sleeper: ManualSleeper()))
        let tokens = RefreshingTokenProvider(
            refreshToken: Self.refreshSecret, oauth: oauth, initialAccessToken: Self.secret, expiresIn: .seconds(9999))
        let client = makeClient(transport, tokens: tokens)
        let (errors, lines) = await capturingLog { () -> [String] in
            var errors: [String] = []
            for _ in 0..<4 {
                do throws(DropboxError) {
                    _ = try await client.listFolder(ListFolderArg(path: "/a"))
                } catch {
                    errors.append(String(describing: error))
                    errors.append(error.description)
                }
            }
            return errors
        }
        #expect(!errors.isEmpty)
        for text in errors + lines {
            #expect(!text.contains(Self.secret) && !text.contains(Self.refreshSecret) && !text.contains("Bearer"))
        }
    }

    @Test func failedEarlyRefreshFallsBackToTheStillValidToken() async throws {
        let clock = ManualSleeper()
        let endpoint = ScriptedTransport(replies: [.text("down", status: 503)])
        // One attempt per refresh, so the background renewal fails as soon as its reply is in.
        let oauth = OAuthClient(
            appKey: "key", endpoints: DropboxEndpoints(all: "http://x.test"), transport: endpoint,
            pacer: Pacer(policy: RetryPolicy(maxAttempts: 1), sleeper: ManualSleeper()))
        let tokens = RefreshingTokenProvider(
            refreshToken: "rt", oauth: oauth, initialAccessToken: "first", expiresIn: .seconds(200), clock: clock)
        // A 200 s token is renewed in its last 100 s (half its lifetime, under the 300 s margin).
        clock.advance(.seconds(150))
        let (token, lines) = try await capturingLog { () async throws -> String in
            let token = try await tokens.accessToken()  // at once: the renewal runs in the background
            for _ in 0..<500 where endpoint.requests.isEmpty { try await Task.sleep(for: .milliseconds(10)) }
            try await Task.sleep(for: .milliseconds(300))
            return token
        }
        #expect(token == "first")
        #expect(lines.contains { $0.hasPrefix("warning:") && $0.contains("could not renew") })
        clock.advance(.seconds(51))
        await #expect(throws: DropboxError.serverError(status: 503)) { try await tokens.accessToken() }
    }

    @Test func transportLogsRequestsWithoutSecrets() async throws {
        let fake = try await FakeDropboxServer.start()
        let (grant, oauth, _) = try await LiveAuthTests.signIn(fake)
        let refreshToken = try #require(grant.refreshToken)
        let (_, lines) = try await capturingLog {
            let tokens = RefreshingTokenProvider(refreshToken: refreshToken, oauth: oauth)
            let client = liveClient(fake, tokens: tokens)
            _ = try await client.getSpaceUsage()
            _ = try? await client.getMetadata(path: "/missing")
        }
        let mine = lines.filter {
            $0.contains("users/get_space_usage") || $0.contains("/oauth2/token") || $0.contains("get_metadata")
        }
        #expect(mine.contains { $0.hasPrefix("debug: POST /oauth2/token -> 200 request-id ") })
        #expect(
            mine.contains {
                $0.hasPrefix("debug: POST /2/users/get_space_usage -> 200 request-id ")
                    && $0.contains(" ms, sent 4 B, received ")
            })
        #expect(mine.contains { $0.hasPrefix("debug: POST /2/files/get_metadata -> 409 request-id ") })
        for line in lines {
            #expect(!line.contains(refreshToken) && !line.contains(grant.accessToken) && !line.contains("Bearer"))
            #expect(!line.contains("sl."), "a line shows an access token: \(line)")
        }
    }

    @Test func connectionsAreReused() async throws {
        let fake = try await FakeDropboxServer.start()
        let client = liveClient(fake, transport: CurlTransport())
        let (_, lines) = try await capturingLog {
            for _ in 0..<10 { _ = try await client.getSpaceUsage() }
        }
        let mine = lines.filter { $0.contains("/2/users/get_space_usage -> 200") }
        #expect(mine.count >= 10)
        #expect(mine.filter { $0.hasSuffix("new connection") }.count <= 1)
    }

    /// Every line leaves the logger escaped: a name or server text with a newline, ESC, a C1 CSI,
    /// a NUL or a bidi override cannot forge a line or drive a terminal (Log.escaped).
    @Test func everyLineIsEscapedOnItsWayOut() async {
        let hostile = "a\nforged[error]: x\u{1B}[31mred\u{9B}2J\u{0}nul\u{202E}txt.exe\tend"
        let (_, lines) = await capturingLog {
            Log.warning("name \(hostile)")
            Log.info("quoted \(Log.quoted(hostile))")
        }
        let mine = lines.filter { $0.contains("forged") }
        #expect(mine.count == 2)
        for line in mine {
            #expect(!line.unicodeScalars.contains { $0.value < 0x20 || (0x7F...0x9F).contains($0.value) }, "\(line.debugDescription)")
            #expect(!line.unicodeScalars.contains { $0.value == 0x202E })
            #expect(line.contains("\\x0aforged[error]: x\\x1b[31mred\\x9b2J\\x00nul\\u{202e}txt.exe\\x09end"))
        }
        #expect(mine.contains { $0.hasSuffix("quoted \"a\\x0aforged[error]: x\\x1b[31mred\\x9b2J\\x00nul\\u{202e}txt.exe\\x09end\"") })
        #expect(Log.escaped("plain café ☕ name") == "plain café ☕ name")
        #expect(Log.quoted("say \"hi\" \\") == "\"say \\x22hi\\x22 \\x5c\"")
    }

    /// A download asked for on a fresh connection (after damaged bytes) never uses a pooled one.
    @Test func freshConnectionDownloadsOpenTheirOwn() async throws {
        let fake = try await FakeDropboxServer.start()
        try await fake.addFile("/fresh.bin", size: 1000, seed: 9)
        let client = liveClient(fake, transport: CurlTransport())
        // An odd length marks this test's lines: the log sink is process-wide, and suites of other
        // files that run meanwhile may download too (the line names the route, not the server).
        let length: UInt64 = 37
        let (_, lines) = try await capturingLog {
            for _ in 0..<3 { _ = try await client.download(path: "/fresh.bin", range: ByteRange(offset: 0, length: length)) }
            for _ in 0..<3 {
                _ = try await client.download(
                    path: "/fresh.bin", range: ByteRange(offset: 0, length: length), freshConnection: true)
            }
        }
        let downloads = lines.filter { $0.contains("/2/files/download -> 206") && $0.contains("received \(length) B") }
        #expect(downloads.count == 6)
        #expect(downloads.prefix(3).filter { $0.hasSuffix("new connection") }.count <= 1)
        #expect(downloads.suffix(3).allSatisfy { $0.hasSuffix("new connection") }, "\(downloads)")
    }
}
