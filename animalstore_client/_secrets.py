"""What the SDK treats as secret, declared once, and how it keeps secrets out of what it shows.

- `SECRET_NAMES`: the query parameter and header names whose values are
  credentials. Log lines, exception text, ``url.full`` in traces, pickled
  requests and the ``base_url`` checks all mask by this one list (`redact_url`,
  `is_secret_name`).
- `forget_locals`: a crash reporter (Sentry's Python SDK with its default
  ``include_local_variables=True``, and others like it) sends the local
  variables of every frame of an exception's traceback and of its chained
  causes. The frames an HTTP library ran to send a request hold its headers,
  the bearer key among them (urllib3's ``headers``, http.client's raw request
  bytes, aiohttp's ``_request``). Before an exception leaves a public method,
  the clients clear the locals of every frame below it that has finished: the
  traceback keeps each frame's file, line and function, so it still says
  where the failure happened; only the variables go.

Nothing here imports the rest of the package: every layer may use it.
"""

from __future__ import annotations

import contextlib
import inspect
import re
import sys
from types import FrameType
from urllib.parse import unquote_plus

__all__ = ["REDACTED", "SECRET_NAMES", "forget_locals", "has_userinfo", "is_secret_name", "redact_url"]

SECRET_NAMES = frozenset(
    {
        "access_token",
        "api-key",
        "api_key",
        "apikey",
        "auth",
        "authorization",
        "awsaccesskeyid",
        "client_secret",
        "cookie",
        "id_token",
        "key",
        "passwd",
        "password",
        "proxy-authorization",
        "refresh_token",
        "secret",
        "session",
        "set-cookie",
        "sig",
        "signature",
        "token",
        "x-amz-signature",
        "x-api-key",
        "x-goog-signature",
    }
)
"""Query parameter and header names whose values are credentials, lower case; compared case-insensitively.

OpenTelemetry's list for ``url.full`` (``AWSAccessKeyId``, ``Signature``, ``sig``,
``X-Goog-Signature``), plus the names that carry a key, a token, a password or a
session as often.
"""

REDACTED = "REDACTED"
"""What a secret value is replaced by (OpenTelemetry's spelling for ``url.full``)."""


def is_secret_name(name: str) -> bool:
    """Whether a query parameter or header called ``name`` carries a credential (`SECRET_NAMES`)."""
    return name.lower() in SECRET_NAMES


_USERINFO = re.compile(r"^(\s*[A-Za-z][A-Za-z0-9+.-]*:/*)([^/?#]*@)")
_QUERY_PAIR = re.compile(r"(^|[&;])([^=&;#]*)=([^&;#]*)")


def has_userinfo(url: str) -> bool:
    """Whether the URL text ``url`` holds a ``user:password@`` part."""
    return _USERINFO.match(url) is not None


def _masked_pair(match: re.Match[str]) -> str:
    name = match[2]
    if is_secret_name(unquote_plus(name)):
        return f"{match[1]}{name}={REDACTED}"
    return match[0]


def redact_url(url: object, *, userinfo: str = "***@") -> str:
    """``url`` (an `httpx.URL` or any text) as it may be shown: no ``user:password@``, no secret query value.

    Works on text that is not a valid URL too (a ``base_url`` being refused).
    ``userinfo`` replaces the ``user:password@`` part (``""`` drops it, as ``url.full`` wants).
    """
    text = str(url)
    if "@" in text:
        text = _USERINFO.sub(lambda match: match[1] + userinfo, text)
    path, mark, rest = text.partition("?")
    if not mark:
        return text
    query, hash_mark, fragment = rest.partition("#")
    return f"{path}?{_QUERY_PAIR.sub(_masked_pair, query)}{hash_mark}{fragment}"


_GENERATOR_CODE = inspect.CO_GENERATOR | inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR
# Python 3.13 made frame.clear() refuse a suspended frame (RuntimeError) as it refuses an executing
# one; before, it closed the suspended generator or coroutine, which must not happen to one still in use.
_CLEAR_REFUSES_SUSPENDED = sys.version_info >= (3, 13)
_MOST_EXCEPTIONS = 64
"""Most exceptions of one chain whose frames are cleared: a chain is a few long, a cycle is cut by identity."""


def forget_locals(exc: BaseException) -> None:
    """Clear the local variables of the finished frames in ``exc``'s traceback and its chained exceptions.

    A frame still running (the caller's, a thread's, an event loop's) is left
    as it is, and so is, before Python 3.13, a generator or coroutine frame
    that may be suspended rather than finished: clearing one would close it.
    Such a frame is cleared only where the exception passed out of it (not
    the first of its traceback) and no task of the running event loop waits
    in it.
    """
    waiting: set[int] | None = None
    seen: set[int] = set()
    pending: list[BaseException] = [exc]
    while pending and len(seen) < _MOST_EXCEPTIONS:
        current = pending.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        tb = current.__traceback__
        first = True
        while tb is not None:
            frame = tb.tb_frame
            if not frame.f_code.co_flags & _GENERATOR_CODE or _CLEAR_REFUSES_SUSPENDED:
                _clear(frame)
            elif not first:
                if waiting is None:
                    waiting = _waiting_frames()
                if id(frame) not in waiting:
                    _clear(frame)
            first = False
            tb = tb.tb_next
        for linked in (current.__cause__, current.__context__, *getattr(current, "exceptions", ())):
            if isinstance(linked, BaseException):
                pending.append(linked)


def _clear(frame: FrameType) -> None:
    # Refused for a running frame (and, from 3.13, a suspended one): not finished, so left alone.
    with contextlib.suppress(RuntimeError):
        frame.clear()


def _waiting_frames() -> set[int]:
    """The ids of the frames of every coroutine the running asyncio loop's tasks wait in (none outside a loop)."""
    asyncio = sys.modules.get("asyncio")
    if asyncio is None:
        return set()
    try:
        tasks = asyncio.all_tasks()
    except RuntimeError:  # no running asyncio loop (a sync client, or trio)
        return set()
    frames: set[int] = set()
    for task in tasks:
        awaited: object = task.get_coro()
        for _ in range(256):  # an await chain this deep is not a real one
            frame = getattr(awaited, "cr_frame", None) or getattr(awaited, "gi_frame", None)
            if frame is None:
                break
            frames.add(id(frame))
            awaited = getattr(awaited, "cr_await", None) or getattr(awaited, "gi_yieldfrom", None)
    return frames
