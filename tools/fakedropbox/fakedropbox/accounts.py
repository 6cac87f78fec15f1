"""The accounts the fake serves: one by default, two with --second-account.

Exists so tests can sign in to two different Dropbox accounts against one server (a mount of
account B where a tree of account A is stored): each account has its own identity (account id,
uid, namespaces, name), its own tree (with its own lock, journal, cursors and contents) and its own
server instance id, so a cursor of one account answers 409 reset in the other. An access token
belongs to one account; tokens issued by /oauth2/token belong to account "a". Faults, runtime
config, token store, statistics and the request log stay shared (state.py).

Which account a request is about is per request thread (State.use_account, a threading.local):
the server picks it from the token (or, for the unauthenticated longpoll, from the cursor), the
control API from ?account=; every route then reads st.tree, st.account_id... of that account.
"""

import base64
import hashlib
import secrets

from .team import View

KEYS = ("a", "b")


def _account_id(seed):
    h = hashlib.sha256(seed).digest()
    acc = "dbid:AAD" + base64.urlsafe_b64encode(h).decode()[:32]
    assert len(acc) == 40
    return acc


class Account:
    """One account's identity and tree. Immutable after start but for the tree (tree.lock)."""

    def __init__(self, key, tree, team=False):
        self.key = key
        self.tree = tree
        self.instance = secrets.token_hex(4)
        self.team = team
        if key == "a":   # the one account the fake always served: unchanged
            self.account_id = _account_id(b"fakedropbox-account")
            self.uid = "73219482"
            self.home_ns = "1928374650"
            self.given_name, self.surname, self.email = "Franz", "Ferdinand", "franz@example.com"
        else:
            self.account_id = _account_id(b"fakedropbox-account-b")
            self.uid = "84320593"
            self.home_ns = "2039485761"
            self.given_name, self.surname, self.email = "Sophie", "Chotek", "sophie@example.com"
        self.root_ns = "5647382910" if team else self.home_ns
        # Namespace views (team.py).  Without --team both are the whole tree.
        self.root_view = View(None, tree.root)
        self.home_view = View.home(tree) if tree.home is not None else self.root_view
        self.size_key = self.size_val = None     # tree_total_size cache (under tree.lock)
