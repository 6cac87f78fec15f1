"""users/* and auth/token/revoke routes.

Exists to serve the account identity (FullAccount) and SpaceUsage in the
exact shapes the official SDK validates (account_id 40 chars, locale >= 2,
team allocation shape with --team).
"""

from .httpio import json_reply
from .team import HOME_PATH


def full_account(st):
    who = st.account
    acc = {
        "account_id": st.account_id,
        "name": {"given_name": who.given_name, "surname": who.surname,
                 "familiar_name": who.given_name,
                 "display_name": "%s %s (Personal)" % (who.given_name, who.surname),
                 "abbreviated_name": who.given_name[0] + who.surname[0]},
        "email": who.email,
        "email_verified": True,
        "disabled": False,
        "country": "US",
        "locale": "en",
        "referral_link": "https://db.tt/ZITNuhtI",
        "is_paired": False,
        "account_type": {".tag": "business" if st.team else "basic"},
        "root_info": {".tag": "user", "root_namespace_id": st.root_ns,
                      "home_namespace_id": st.home_ns},
    }
    if st.team:
        acc["root_info"] = {".tag": "team", "root_namespace_id": st.root_ns,
                            "home_namespace_id": st.home_ns,
                            "home_path": HOME_PATH}
        acc["team"] = {
            "id": "dbtid:AAFdgehTzw7WlXhZJsbGCLePe8RvQGYDr-I",
            "name": "Fake Team",
            "sharing_policies": {
                "shared_folder_member_policy": {".tag": "team"},
                "shared_folder_join_policy": {".tag": "from_anyone"},
                "shared_link_create_policy": {".tag": "team_only"},
                "group_creation_policy": {".tag": "admins_only"},
                "shared_folder_link_restriction_policy": {".tag": "anyone"},
                "enforce_link_password_policy": {".tag": "optional"},
                "default_link_expiration_days_policy": {".tag": "none"},
                "shared_link_default_permissions_policy": {".tag": "default"},
            },
            "office_addin_policy": {".tag": "disabled"},
            "top_level_content_policy": {".tag": "admin_only"},
        }
        acc["team_member_id"] = "dbmid:AAHhy7WsR0x-u4ZCqiDl5Fz5zvuL3kmspwU"
    return acc


def get_current_account(st, req, arg):
    return json_reply(full_account(st))


def get_space_usage(st, req, arg):
    used = st.quota_used if st.quota_used is not None else st.tree_total_size()
    if st.team:
        alloc = {".tag": "team", "used": used * 3 + 123456789,
                 "allocated": st.quota_allocated,
                 "user_within_team_space_allocated": 0,
                 "user_within_team_space_limit_type": {".tag": "off"},
                 "user_within_team_space_used_cached": used}
    else:
        alloc = {".tag": "individual", "allocated": st.quota_allocated}
    return json_reply({"used": used, "allocation": alloc})


def token_revoke(st, req, arg):
    st.tokens.revoke(req.token)
    return json_reply(None)


ROUTES = {
    "users/get_current_account": ("rpc", "account_info.read", get_current_account),
    "users/get_space_usage": ("rpc", "account_info.read", get_space_usage),
    "auth/token/revoke": ("rpc", "", token_revoke),
}
