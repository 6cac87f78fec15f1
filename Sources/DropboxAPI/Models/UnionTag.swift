// The tag of a union value the client reads only by name (docs/DROPBOX-API.md, "Decoding rules"):
// `{".tag": "pro", ...}`, or the bare string `"pro"` that a member without a value may be.

struct UnionTag: Decodable {
    var tag: String

    private enum CodingKeys: String, CodingKey { case tag = ".tag" }

    init(from decoder: any Decoder) throws {
        if let c = try? decoder.container(keyedBy: CodingKeys.self) {
            tag = try c.decode(String.self, forKey: .tag)
        } else {
            tag = try decoder.singleValueContainer().decode(String.self)
        }
    }
}
