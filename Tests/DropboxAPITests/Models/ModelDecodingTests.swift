// Every JSON shape of docs/DROPBOX-API.md ("Routes used", "Metadata") decodes into the models:
// file, folder and deleted metadata with optional parts, unknown fields and nulls; listings with an
// undecodable entry; accounts; space usage for individuals and teams; the download result header.

import Foundation
import Testing

@testable import DropboxAPI

private func decode<T: Decodable>(_ type: T.Type, _ json: String) throws -> T {
    try JSONDecoder().decode(T.self, from: Data(json.utf8))
}

@Suite struct ModelDecodingTests {
    static let fileJSON = """
        {".tag":"file","name":"Prime_Numbers.txt","id":"id:a4ayc_80_OEAAAAAAAAAXw",
         "path_lower":"/homework/math/prime_numbers.txt","path_display":"/Homework/math/Prime_Numbers.txt",
         "client_modified":"2015-05-12T15:50:38Z","server_modified":"2015-05-12T15:50:38Z",
         "rev":"a1c10ce0dd78","size":7212,"is_downloadable":true,
         "content_hash":"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"}
        """

    @Test func file() throws {
        guard case .file(let f) = try decode(Metadata.self, Self.fileJSON) else {
            Issue.record("not a file")
            return
        }
        #expect(f.name == "Prime_Numbers.txt")
        #expect(f.id == "id:a4ayc_80_OEAAAAAAAAAXw")
        #expect(f.pathLower == "/homework/math/prime_numbers.txt")
        #expect(f.pathDisplay == "/Homework/math/Prime_Numbers.txt")
        #expect(f.clientModified == DropboxTimestamp(secondsSinceEpoch: 1_431_445_838))
        #expect(f.serverModified.description == "2015-05-12T15:50:38Z")
        #expect(f.rev == "a1c10ce0dd78")
        #expect(f.size == 7212)
        #expect(f.isDownloadable)
        #expect(f.contentHash?.hex == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        #expect(f.symlinkTarget == nil && f.exportAs == nil && f.sharedReadOnly == nil)
    }

    @Test func fileWithOptionalPartsUnknownFieldsAndNulls() throws {
        let json = """
            {".tag":"file","name":"link","id":"id:abc","path_lower":null,"path_display":null,
             "client_modified":"2020-01-02T03:04:05Z","server_modified":"2020-01-02T03:04:06Z",
             "rev":"0123456789a","size":9007199254740992,"content_hash":null,
             "symlink_info":{"target":"../elsewhere/file.txt"},
             "sharing_info":{"read_only":true,"parent_shared_folder_id":"84528192421","modified_by":"dbid:x"},
             "file_lock_info":{"is_lockholder":false},"has_explicit_shared_members":false,
             "property_groups":[],"preview_url":null,"some_future_field":{"nested":[1,2,3]}}
            """
        guard case .file(let f) = try decode(Metadata.self, json) else {
            Issue.record("not a file")
            return
        }
        #expect(f.pathLower == nil && f.pathDisplay == nil)
        #expect(f.size == ServerLimits.maxFileSize)  // the largest accepted (ServerLimitsTests)
        #expect(f.contentHash == nil)
        #expect(f.isDownloadable)
        #expect(f.symlinkTarget == "../elsewhere/file.txt")
        #expect(f.sharedReadOnly == true)
    }

    @Test func exportOnlyFile() throws {
        let json = """
            {".tag":"file","name":"Notes.paper","id":"id:p","path_lower":"/notes.paper","path_display":"/Notes.paper",
             "client_modified":"2021-06-01T00:00:00Z","server_modified":"2021-06-01T00:00:00Z",
             "rev":"015c0ffee0001","size":0,"is_downloadable":false,
             "export_info":{"export_as":"html","export_options":["html","markdown"]}}
            """
        guard case .file(let f) = try decode(Metadata.self, json) else {
            Issue.record("not a file")
            return
        }
        #expect(!f.isDownloadable)
        #expect(f.exportAs == "html")
    }

    @Test func folder() throws {
        let plain = try decode(
            Metadata.self,
            #"{".tag":"folder","name":"math","id":"id:a4ayc_80_OEAAAAAAAAAXz","path_lower":"/homework/math","path_display":"/Homework/math"}"#
        )
        #expect(
            plain
                == .folder(
                    FolderMetadata(
                        name: "math", id: "id:a4ayc_80_OEAAAAAAAAAXz", pathLower: "/homework/math",
                        pathDisplay: "/Homework/math")))
        let shared = try decode(
            Metadata.self,
            """
            {".tag":"folder","name":"Team","id":"id:t","path_lower":"/team","path_display":"/Team",
             "shared_folder_id":"84528192421",
             "sharing_info":{"read_only":false,"parent_shared_folder_id":null,"shared_folder_id":"84528192421",
                             "traverse_only":true,"no_access":true},"unknown":null}
            """)
        guard case .folder(let f) = shared else {
            Issue.record("not a folder")
            return
        }
        #expect(f.sharedFolderId == "84528192421")
        #expect(f.sharedReadOnly == false)
        #expect(f.traverseOnly && f.noAccess)
    }

    @Test func listRevisionsWithWhoStoredEachAndTheDeletionTime() throws {
        let json = """
            {"is_deleted":true,"server_deleted":"2026-12-06T10:41:00Z","has_more":false,"entries":[
             {"name":"a.txt","id":"id:a","path_lower":"/s/a.txt","path_display":"/S/a.txt",
              "client_modified":"2026-12-01T00:00:00Z","server_modified":"2026-12-02T00:00:00Z",
              "rev":"015a0000000002","size":3,"sharing_info":{"read_only":false,
              "parent_shared_folder_id":"84","modified_by":"dbid:AAHteammate"}},
             {"name":"a.txt","id":"id:a","client_modified":"2026-11-01T00:00:00Z",
              "server_modified":"2026-11-02T00:00:00Z","rev":"015a0000000001","size":1}]}
            """
        let result = try decode(ListRevisionsResult.self, json)
        #expect(result.isDeleted && !result.hasMore)
        #expect(result.serverDeleted == DropboxTimestamp(parsing: "2026-12-06T10:41:00Z"))
        #expect(result.entries.map(\.rev) == ["015a0000000002", "015a0000000001"])
        #expect(result.entries.map(\.modifiedBy) == ["dbid:AAHteammate", nil])
        #expect(result.entries[0].sharedReadOnly == false)
        // A live file's history: no deletion time, has_more may be absent.
        let live = try decode(ListRevisionsResult.self, #"{"is_deleted":false,"entries":[]}"#)
        #expect(!live.isDeleted && live.serverDeleted == nil && !live.hasMore)
    }

    @Test func listRevisionsArgumentEncodesModeAsAUnion() throws {
        let data = try JSONEncoder().encode(ListRevisionsArg(path: "/a", mode: .id, limit: 500, beforeRev: nil))
        let object = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        #expect((object["mode"] as? [String: String]) == [".tag": "id"])
        #expect(object["limit"] as? Int == ListRevisionsArg.maxLimit, "the limit is clamped to Dropbox's 100")
        #expect(object["before_rev"] == nil)
    }

    @Test func deleted() throws {
        let d = try decode(
            Metadata.self,
            #"{".tag":"deleted","name":"pi.txt","path_lower":"/homework/math/pi.txt","path_display":"/Homework/math/pi.txt"}"#
        )
        #expect(
            d
                == .deleted(
                    DeletedMetadata(
                        name: "pi.txt", pathLower: "/homework/math/pi.txt", pathDisplay: "/Homework/math/pi.txt")))
        #expect(d.name == "pi.txt")
    }

    @Test func unknownTagAndMissingFieldsAreErrors() {
        #expect(throws: DecodingError.self) {
            try decode(Metadata.self, #"{".tag":"shortcut","name":"x","path_lower":"/x"}"#)
        }
        #expect(throws: DecodingError.self) {
            try decode(Metadata.self, #"{".tag":"file","name":"x","id":"id:x"}"#)
        }
        #expect(throws: DecodingError.self) {
            try decode(
                Metadata.self,
                #"{".tag":"file","name":"x","id":"id:x","client_modified":"2015-05-12 15:50:38","server_modified":"2015-05-12T15:50:38Z","rev":"123456789","size":1}"#
            )
        }
    }

    @Test func listingDropsUndecodableEntries() throws {
        let json = """
            {"entries":[
               \(Self.fileJSON),
               {".tag":"mystery","name":"?"},
               {".tag":"folder","name":"math","id":"id:f","path_lower":"/math","path_display":"/math"},
               {".tag":"deleted","name":"gone","path_lower":"/gone","path_display":"/gone"}],
             "cursor":"AAE-cursor","has_more":true,"extra":1}
            """
        let result = try decode(ListFolderResult.self, json)
        #expect(result.entries.map(\.name) == ["Prime_Numbers.txt", "math", "gone"])
        #expect(result.undecodableEntries == 1)
        #expect(result.cursor == "AAE-cursor")
        #expect(result.hasMore)
    }

    @Test func emptyListingAndLongpoll() throws {
        let result = try decode(ListFolderResult.self, #"{"entries":[],"cursor":"c","has_more":false}"#)
        #expect(result.entries.isEmpty && !result.hasMore && result.undecodableEntries == 0)
        #expect(
            try decode(LongpollResult.self, #"{"changes":true,"backoff":60}"#)
                == LongpollResult(changes: true, backoff: 60))
        #expect(try decode(LongpollResult.self, #"{"changes":false}"#) == LongpollResult(changes: false))
        #expect(try decode(LongpollResult.self, #"{"changes":false,"backoff":null}"#) == LongpollResult(changes: false))
    }

    @Test func downloadResultWithAndWithoutTag() throws {
        let untagged = Self.fileJSON.replacingOccurrences(of: #"".tag":"file","#, with: "")
        let a = try decode(FileMetadata.self, untagged)
        let b = try decode(FileMetadata.self, Self.fileJSON)
        #expect(a == b)
        #expect(a.size == 7212)
    }

    @Test func fullAccount() throws {
        let json = """
            {"account_id":"dbid:AAH4f99T0taONIb-OurWxbNQ6ywGRopQngc",
             "name":{"given_name":"Franz","surname":"Ferdinand","familiar_name":"Franz",
                     "display_name":"Franz Ferdinand (Personal)","abbreviated_name":"FF"},
             "email":"franz@dropbox.com","email_verified":true,"disabled":false,"locale":"en",
             "referral_link":"https://db.tt/ZITNuhtI","is_paired":true,
             "account_type":{".tag":"basic"},
             "root_info":{".tag":"user","root_namespace_id":"3235641","home_namespace_id":"3235641"},
             "country":"US","profile_photo_url":null,"team":null}
            """
        let account = try decode(FullAccount.self, json)
        #expect(account.accountId == "dbid:AAH4f99T0taONIb-OurWxbNQ6ywGRopQngc")
        #expect(account.displayName == "Franz Ferdinand (Personal)")
        #expect(account.email == "franz@dropbox.com")
        #expect(account.accountType == "basic")
        #expect(account.rootInfo == RootInfo(tag: "user", rootNamespaceId: "3235641", homeNamespaceId: "3235641"))

        let team = try decode(
            FullAccount.self,
            json.replacingOccurrences(
                of: #"{".tag":"user","root_namespace_id":"3235641","home_namespace_id":"3235641"}"#,
                with:
                    #"{".tag":"team","root_namespace_id":"777","home_namespace_id":"3235641","home_path":"/Franz Ferdinand"}"#
            ).replacingOccurrences(of: #"{".tag":"basic"}"#, with: #"{".tag":"business"}"#))
        #expect(team.accountType == "business")
        #expect(team.rootInfo.tag == "team")
        #expect(team.rootInfo.rootNamespaceId == "777")
        #expect(team.rootInfo.homePath == "/Franz Ferdinand")
    }

    /// account_type is a union of void members, so it may be a bare string; one not understood
    /// must not fail the account (and the mount).
    @Test func anAccountTypeWrittenAsABareTagDecodes() async throws {
        let reply = #"{"account_id":"dbid:AAA","name":{"display_name":"A"},"email":"a@b.c","account_type":"pro","#
            + #""root_info":{".tag":"user","root_namespace_id":"1","home_namespace_id":"1"}}"#
        let transport = ScriptedTransport(replies: [.json(reply)])
        let account = try await makeClient(transport).getCurrentAccount()
        #expect(account.accountType == "pro")
        let odd = reply.replacingOccurrences(of: #""account_type":"pro""#, with: #""account_type":7"#)
        let other = try await makeClient(ScriptedTransport(replies: [.json(odd)])).getCurrentAccount()
        #expect(other.accountType == "unknown")
    }

    @Test func spaceUsage() throws {
        let individual = try decode(
            SpaceUsage.self, #"{"used": 314159265, "allocation": {".tag": "individual", "allocated": 10000000000}}"#)
        #expect(individual == SpaceUsage(used: 314_159_265, allocation: .individual(allocated: 10_000_000_000)))
        #expect(individual.effectiveLimit == 10_000_000_000)
        #expect(individual.effectiveUsed == 314_159_265)

        let team = try decode(
            SpaceUsage.self,
            """
            {"used": 314159265, "allocation": {".tag": "team", "used": 27182818284, "allocated": 100000000000,
              "user_within_team_space_allocated": 0, "user_within_team_space_limit_type": {".tag": "off"},
              "user_within_team_space_used_cached": 314159265}}
            """)
        #expect(
            team
                == SpaceUsage(
                    used: 314_159_265, allocation: .team(used: 27_182_818_284, allocated: 100_000_000_000, userLimit: 0)
                ))
        #expect(team.effectiveLimit == 100_000_000_000)
        #expect(team.effectiveUsed == 27_182_818_284)

        let other = try decode(SpaceUsage.self, #"{"used": 5, "allocation": {".tag": "something_new"}}"#)
        #expect(other.allocation == .other("something_new"))
        #expect(other.effectiveLimit == nil)
    }

    @Test func tokenGrant() throws {
        let grant = try decode(
            TokenGrant.self,
            """
            {"access_token":"sl.abc","token_type":"bearer","expires_in":14400,"refresh_token":"rt",
             "scope":"account_info.read files.content.read files.metadata.read","account_id":"dbid:x","uid":"12345"}
            """)
        #expect(grant.accessToken == "sl.abc" && grant.expiresIn == 14400 && grant.refreshToken == "rt")
        let refreshed = try decode(
            TokenGrant.self, #"{"access_token":"sl.def","token_type":"bearer","expires_in":14400}"#)
        #expect(refreshed.refreshToken == nil)
    }
}
