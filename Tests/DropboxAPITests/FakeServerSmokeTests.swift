import DropboxAPI
import DropboxTestSupport
import Testing

@Suite struct FakeServerSmokeTests {
    @Test func listsRoot() async throws {
        Log.level = .debug
        print("starting")
        let fake = try await FakeDropboxServer.start(arguments: ["--sample-account"])
        print("started", fake.baseURL)
        let t = CurlTransport()
        let r = try await t.send(HTTPRequest(method: .get, url: fake.baseURL + "/_control/stats"))
        print("stats", r.status, String(decoding: r.body, as: UTF8.self))
        let client = DropboxHTTPClient(
            endpoints: fake.endpoints, tokens: StaticTokenProvider(token: fake.token), transport: fake.transport)
        let result = try await client.listFolder(ListFolderArg(path: ""))
        print(result.entries.map(\.name), result.hasMore)
        let account = try await client.getCurrentAccount()
        print(account)
        print(try await client.getSpaceUsage())
    }
}
