"""Reply objects and the Dropbox error shapes (docs/DROPBOX-API.md, "Errors").

Exists so every route builds errors the same, faithful way: 400 plain text,
JSON 401/409/422/429 with error_summary derived from the tags.
"""

import json

JSON_CT = "application/json"
TEXT_CT = "text/plain; charset=utf-8"


class Reply:
    """status, headers [(name, value)], and either body bytes or a chunk stream.

    ``stream`` is an iterable of bytes-likes of total ``length`` bytes.
    ``fault`` lets the server apply a truncate/malformed fault late.
    """

    __slots__ = ("status", "headers", "body", "stream", "length", "throttle")

    def __init__(self, status, headers=None, body=b"", stream=None, length=None,
                 throttle=False):
        self.status = status
        self.headers = headers or []
        self.body = body
        self.stream = stream
        self.length = len(body) if stream is None else length
        self.throttle = throttle


def dumps(obj):
    """Compact JSON as UTF-8.  Falls back to ASCII escapes when the data holds
    lone surrogates (only --evil-names does), which UTF-8 cannot carry."""
    s = json.dumps(obj, ensure_ascii=False, separators=(", ", ": "))
    try:
        return s.encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(obj, ensure_ascii=True, separators=(", ", ": ")).encode("ascii")


def entry_json(obj):
    """One listing entry as dumps writes it inside a page: UTF-8 bytes, or str
    when it holds a lone surrogate that UTF-8 cannot carry (see page_body)."""
    s = json.dumps(obj, ensure_ascii=False, separators=(", ", ": "))
    try:
        return s.encode("utf-8")
    except UnicodeEncodeError:
        return s


def page_body(parts, cursor, has_more):
    """A ListFolderResult body from rendered entries (entry_json parts), byte
    for byte what dumps of the whole object gives."""
    cursor = cursor.encode("ascii")
    more = b"true" if has_more else b"false"
    try:
        return b"".join((b'{"entries": [', b", ".join(parts), b'], "cursor": "', cursor,
                         b'", "has_more": ', more, b"}"))
    except TypeError:
        # A str part holds a lone surrogate (only --evil-names): like dumps,
        # write the whole body with ASCII escapes.
        text = '{"entries": [%s], "cursor": "%s", "has_more": %s}' % (
            ", ".join(p if isinstance(p, str) else p.decode("utf-8") for p in parts),
            cursor.decode("ascii"), more.decode("ascii"))
        return json.dumps(json.loads(text), ensure_ascii=True, separators=(", ", ": ")).encode("ascii")


def header_json(obj):
    """JSON for an HTTP header: ASCII only (non-ASCII as \\uXXXX escapes)."""
    return json.dumps(obj, ensure_ascii=True, separators=(", ", ": "))


def json_reply(obj, status=200, headers=None):
    return Reply(status, [("Content-Type", JSON_CT)] + (headers or []), dumps(obj))


def text_reply(status, text, headers=None):
    return Reply(status, [("Content-Type", TEXT_CT)] + (headers or []), text.encode("utf-8"))


def bad_request(route, msg):
    """400 plain text, as Dropbox sends for malformed requests."""
    return text_reply(400, 'Error in call to API function "%s": %s' % (route, msg))


def summary_of(err):
    """error_summary from an error union: tags joined by '/', plus '/..'."""
    tags = []
    cur = err
    while isinstance(cur, dict) and ".tag" in cur:
        tag = cur[".tag"]
        tags.append(tag)
        cur = cur.get(tag)
    if isinstance(cur, str):
        tags.append(cur)
    return "/".join(tags) + "/.."


def error_reply(status, err, headers=None, summary=None):
    body = {"error_summary": summary or summary_of(err), "error": err}
    return json_reply(body, status, headers)


def route_error(err):
    """409 endpoint-specific error."""
    return error_reply(409, err)


def lookup_error(tag):
    return route_error({".tag": "path", "path": {".tag": tag}})


def auth_error(tag, **fields):
    err = {".tag": tag}
    err.update(fields)
    return error_reply(401, err)


def rate_limited_json(retry_after=1):
    err = {"reason": {".tag": "too_many_requests"}, "retry_after": retry_after}
    return error_reply(429, err, [("Retry-After", str(retry_after))],
                       summary="too_many_requests/..")


def rate_limited_text(retry_after=1):
    return text_reply(429, "too_many_requests", [("Retry-After", str(retry_after))])
