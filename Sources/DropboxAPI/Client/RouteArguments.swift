// The small JSON arguments and results of routes that have no model of their own.

struct PathArg: Encodable {
    var path: String
}

struct CursorArg: Encodable {
    var cursor: String
}

struct LongpollArg: Encodable {
    var cursor: String
    var timeout: Int
}

struct GetMetadataArg: Encodable {
    var path: String
    var includeDeleted = false

    enum CodingKeys: String, CodingKey {
        case path
        case includeDeleted = "include_deleted"
    }
}

struct CursorResult: Decodable {
    var cursor: String
}
