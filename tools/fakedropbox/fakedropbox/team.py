"""The team space (--team): the member's home folder, two team folders, and
the two namespace views of the tree.

Exists so a team-space member can be modelled: the tree holds the team space
root; the member's home namespace is the folder at HOME_PATH.  A request sees
the tree through a View chosen by its Dropbox-API-Path-Root header: the root
view (full paths) or the home view (paths relative to the home folder, nothing
outside it reachable).  Without --team there is a single view, the whole tree,
and nothing here changes what the fake serves.
"""

from .tree import key_of

HOME_NAME = "Franz Ferdinand"
HOME_PATH = "/" + HOME_NAME
TEAM_TIME = 1700000000  # 2023-11-14, well in the past
TEAM_FILES = (("Marketing", "Plan.txt", b"marketing plan\n"),
              ("Engineering", "Design.md", b"# design\n"))
# The team folders are shared folders: entries in them carry sharing_info (Marketing read-only).
TEAM_SHARING = {"Marketing": {"shared_folder_id": "84528192421", "read_only": True},
                "Engineering": {"shared_folder_id": "84528192422", "read_only": False}}


def build_team_space(tree):
    """Turn a freshly built tree into a team space: everything built so far
    moves into the member's home folder, next to it come the team folders.

    Run after all other start-up content is built (no journal).  The existing
    nodes keep their numbers, hence their ids, revs, times and synthetic
    bytes: the home view shows what the same flags show without --team.
    """
    root = tree.root
    content = root.children
    root.children = {}
    root.content = None
    home = tree.add_child(root, HOME_NAME, folder=True)
    home.children = content
    for child in content.values():
        child.parent = home
    for i, (folder_name, file_name, data) in enumerate(TEAM_FILES):
        folder = tree.add_child(root, folder_name, folder=True)
        folder.extra = dict(TEAM_SHARING[folder_name])
        tree.add_child(folder, file_name, size=len(data), content=data,
                       mtime=TEAM_TIME + 60 * i)
    tree.home = home
    tree.shared = True
    tree.invalidate_json()
    return home


class View:
    """How one request (or cursor) sees the tree.

    ``base`` is the node the API's "" means; ``pd``/``pl`` are its full
    path_display/path_lower ("" for the root view), stripped from every path
    the view returns.  ``tag`` is what a cursor records (None: root view).
    """

    __slots__ = ("tag", "base", "pd", "pl")

    def __init__(self, tag, base, pd="", pl=""):
        self.tag, self.base, self.pd, self.pl = tag, base, pd, pl

    @classmethod
    def home(cls, tree):
        return cls("h", tree.home, HOME_PATH, "/" + key_of(HOME_NAME))

    def resolve(self, tree, path, root_ns, home_ns):
        """Tree.resolve relative to this view; entries outside it are not_found."""
        node, err = tree.resolve(path, root_ns, home_ns, base=self.base)
        if node is not None and not self.contains(node):
            return None, "not_found"
        return node, err

    def contains(self, node):
        if not self.pl:
            return True
        while node is not None:
            if node is self.base:
                return True
            node = node.parent
        return False

    def contains_pl(self, pl):
        """Whether a (full) path_lower lies inside this view."""
        return not self.pl or pl.startswith(self.pl + "/")

    def path_cache(self):
        """A Tree.paths cache whose paths come out relative to the view."""
        return {self.base: ("", "")} if self.pl else {}

    def rel(self, pd, pl):
        """Full (path_display, path_lower) -> the view's."""
        if not self.pl:
            return pd, pl
        return pd[len(self.pd):], pl[len(self.pl):]

    def fix(self, md):
        """Make a metadata dict's paths the view's (in place); returns md."""
        if self.pl and "path_lower" in md:
            md["path_display"], md["path_lower"] = self.rel(md["path_display"], md["path_lower"])
        return md

    def json_cache(self, tree):
        """The Tree's rendered-entry cache for this view's paths."""
        return tree.json_cache_home if self.pl else tree.json_cache
