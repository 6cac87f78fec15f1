// A client's tree built only from list_folder and continue entries, with nothing but the rules the
// contract gives (docs/DROPBOX-API.md, "Delta semantics"), so the adversarial fake's tests can
// check that its unkind pages still describe its own tree. Entries are applied in order and keyed
// by path_lower; missing parents become placeholder folders named from the path_display component,
// confirmed when their own entry arrives.

import DropboxAPI

struct ReferenceTree {
    /// What a test compares: a path_lower, the kind, the name, and a file's size and rev.
    struct Node: Hashable, CustomStringConvertible {
        var key: String
        var kind: String
        var name: String
        var detail: String

        init(key: String, kind: String, name: String, detail: String = "") {
            (self.key, self.kind, self.name, self.detail) = (key, kind, name, detail)
        }

        /// The node for a live file or folder; nil for a `deleted` entry.
        init?(_ entry: Metadata) {
            switch entry {
            case .file(let file):
                self.init(key: file.pathLower ?? "?", kind: "file", name: file.name, detail: "\(file.size) \(file.rev)")
            case .folder(let folder): self.init(key: folder.pathLower ?? "?", kind: "folder", name: folder.name)
            case .deleted: return nil
            }
        }

        var description: String { "\(kind):\(key) \"\(name)\" \(detail)" }
    }

    private var nodes: [String: Node] = [:]
    /// Child keys by folder key; the root's children are under "".
    private var children: [String: Set<String>] = [:]

    var contents: Set<Node> { Set(nodes.values) }

    /// `file`: store it, creating parents, replacing whatever was there with its children.
    /// `folder`: store it, creating parents, replacing a file, keeping children. `deleted`: remove
    /// the path and its children, or nothing when absent.
    mutating func apply(_ entry: Metadata) {
        guard let key = entry.pathLower, let display = entry.pathDisplay else { return }
        switch entry {
        case .deleted:
            remove(key)
        case .file:
            remove(key)
            makeParents(of: key, display: display)
            store(Node(entry)!)
        case .folder:
            if nodes[key]?.kind != "folder" { remove(key) }
            makeParents(of: key, display: display)
            store(Node(entry)!)
        }
    }

    mutating func apply(_ entries: some Sequence<Metadata>) {
        for entry in entries { apply(entry) }
    }

    /// Placeholder folders for the missing ancestors of `key` (a file in the way is replaced).
    private mutating func makeParents(of key: String, display: String) {
        let keys = Self.components(key)
        let names = Self.components(display)
        precondition(keys.count == names.count, "path_lower \(key) and path_display \(display) differ in depth")
        var parent = ""
        for index in 0..<(keys.count - 1) {
            let ancestor = parent + "/" + keys[index]
            if nodes[ancestor]?.kind == "file" { remove(ancestor) }
            if nodes[ancestor] == nil { store(Node(key: ancestor, kind: "folder", name: names[index])) }
            parent = ancestor
        }
    }

    private mutating func store(_ node: Node) {
        nodes[node.key] = node
        children[Self.parent(of: node.key), default: []].insert(node.key)
    }

    private mutating func remove(_ key: String) {
        guard nodes.removeValue(forKey: key) != nil else { return }
        children[Self.parent(of: key)]?.remove(key)
        var stack = Array(children.removeValue(forKey: key) ?? [])
        while let next = stack.popLast() {
            nodes.removeValue(forKey: next)
            stack += children.removeValue(forKey: next) ?? []
        }
    }

    /// "/a/b" -> ["a", "b"], cut on bytes (a name may start with a combining mark).
    static func components(_ path: String) -> [String] {
        path.utf8.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false).dropFirst()
            .map { String(decoding: $0, as: UTF8.self) }
    }

    static func parent(of key: String) -> String {
        guard let slash = key.utf8.lastIndex(of: UInt8(ascii: "/")) else { return "" }
        return String(key[..<slash])
    }
}
