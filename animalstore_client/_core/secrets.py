"""What the SDK treats as secret (`SECRET_NAMES`), and how it keeps secrets out of what it shows: masked text
(`redact_url`, `redact_text`), cleared frames (`forget_locals`). It imports nothing of the package: any layer may."""

from __future__ import annotations

import contextlib
import inspect
import re
import sys
from collections.abc import Mapping
from types import FrameType
from typing import cast
from urllib.parse import unquote_plus

__all__ = [
    "REDACTED",
    "SECRET_NAMES",
    "SHORTEST_MASKED",
    "MaskedException",
    "forget_locals",
    "has_userinfo",
    "is_secret_name",
    "qualified_name",
    "redact_text",
    "redact_url",
]

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
"""Query parameter and header names whose values are credentials, lower case; compared case-insensitively:
OpenTelemetry's list for ``url.full``, plus names that as often carry a key, a token, a password or a session."""

REDACTED = "REDACTED"
"""What a secret value is replaced by (OpenTelemetry's spelling for ``url.full``)."""


def is_secret_name(name: str) -> bool:
    """Whether a query parameter or header called ``name`` carries a credential (`SECRET_NAMES`)."""
    return name.lower() in SECRET_NAMES


_USERINFO = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*://)([^/?#\s@]*@)")
# A name never holds a separator, "?" included: each try at a pair stops at the next one, so a text of many
# separators with no "=" (a server's "????...") is read once, not once from each of them.
_PAIR = re.compile(r"([?&;])([^=&;#?\s]+)=([^&;#\s'\"]*)")
_SCHEME_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+.-")
_LONGEST_SCHEME = 32
"""Characters looked at before a ``://`` for its scheme: no scheme in use is longer."""
_USERINFO_PART = re.compile(r"[^/?#\s@]*")


def has_userinfo(url: str) -> bool:
    """Whether the URL text ``url`` holds a ``user:password@`` part."""
    return _USERINFO.match(url.lstrip()) is not None


def _masked_pair(match: re.Match[str]) -> str:
    name = match[2]
    if is_secret_name(unquote_plus(name)):
        return f"{match[1]}{name}={REDACTED}"
    return match[0]


def redact_text(text: str, *, userinfo: str = "***@") -> str:
    """``text`` (a URL, or text quoting one, such as a library's error) with every ``user:password@`` replaced by
    ``userinfo`` (``""`` drops it, as ``url.full`` wants) and every secret-looking query value masked."""
    if "@" in text:
        text = _without_userinfo(text, userinfo)
    if "=" in text:
        text = _PAIR.sub(_masked_pair, text)
    return text


def _without_userinfo(text: str, userinfo: str) -> str:
    """``text`` with the ``user:password@`` after each ``scheme://`` replaced by ``userinfo``: one pass.

    ``_USERINFO.sub`` is quadratic on a long run of letters (a scheme tried from each); here each ``://`` is found
    once, its scheme sought in the few characters before it, and a scan finding no ``@`` skips the ``://`` in it.
    """
    parts: list[str] = []
    done = 0
    at = text.find("://")
    while at >= 0:
        start = at
        while start > 0 and at - start < _LONGEST_SCHEME and text[start - 1] in _SCHEME_CHARS:
            start -= 1
        while start < at and not text[start].isalpha():
            start += 1
        authority = at + 3
        end = _USERINFO_PART.match(text, authority).end()  # type: ignore[union-attr]  # always matches
        if start < at and text[start].isascii() and end < len(text) and text[end] == "@":
            parts.append(text[done:authority])
            parts.append(userinfo)
            done = end + 1
            at = text.find("://", done)
        else:
            at = text.find("://", max(end, authority))
    if not parts:
        return text
    parts.append(text[done:])
    return "".join(parts)


def redact_url(url: object, *, userinfo: str = "***@") -> str:
    """``url`` (an `httpx.URL` or any text, even invalid) as it may be shown: no ``user:password@`` or secret value."""
    return redact_text(str(url), userinfo=userinfo)


_GENERATOR_CODE = inspect.CO_GENERATOR | inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR
# Before 3.13 frame.clear() closes a suspended generator or coroutine instead of refusing (RuntimeError); before
# 3.12 a finished coroutine's frame has no f_back to prove which frame awaited it.
_CLEAR_REFUSES_SUSPENDED = sys.version_info >= (3, 13)
_FINISHED_CORO_KNOWS_CALLER = sys.version_info >= (3, 12)
_MOST_EXCEPTIONS = 64
"""Most exceptions of one chain looked at: a chain is a few long, a cycle is cut by identity."""


def forget_locals(exc: BaseException, secrets: tuple[str, ...] = ()) -> None:
    """Clear the local variables of the frames ``exc`` and the exceptions it chains passed out of (which ones:
    docs/architecture.md, "No secret in a crash report"). Never raises: best effort on a path already failing."""
    try:
        _forget(exc, secrets)
    except Exception:  # noqa: BLE001  # the exception being raised must stay the one that leaves
        return


def _forget(exc: BaseException, secrets: tuple[str, ...]) -> None:
    ours: set[int] = set()
    seen: set[int] = set()
    pending: list[BaseException] = [exc]
    first_exception = True
    while pending and len(seen) < _MOST_EXCEPTIONS:
        current = pending.pop(0)
        if id(current) in seen:
            continue
        seen.add(id(current))
        tb = current.__traceback__
        if tb is not None and not first_exception and id(tb.tb_frame) not in ours:
            continue  # raised before this call, or elsewhere: not this call's to clear
        first_exception = False
        previous = None
        while tb is not None:
            frame = tb.tb_frame
            ours.add(id(frame))
            if previous is not None:
                _clear(frame, previous, secrets)
            previous = frame
            tb = tb.tb_next
        _mask_args(current, secrets)
        _replace_leaking_links(current, secrets)
        linked: list[object] = [current.__cause__, current.__context__]
        linked.extend(_members(current) or ())
        pending.extend(item for item in linked if isinstance(item, BaseException))


class MaskedException(Exception):
    """A copy of an exception of code outside the SDK that held the API key where masking could not reach.

    The SDK chains (``__cause__``) the exception a hook, a middleware or a library
    raised. When that exception still holds the key after its text arguments are
    masked (as bytes, in a header list or mapping, through a custom ``__str__``,
    in a pydantic ``ValidationError``), or cannot be checked (its ``__str__``
    raises), it is replaced in the chain by this copy: the original class's
    name (`original_class`) and its text with the key masked. The original is
    not kept; the copy carries its traceback, whose frames' variables the SDK
    cleared.
    """

    original_class: str
    """The qualified name of the class of the exception this stands in for (``"pydantic.ValidationError"``)."""

    def __init__(self, original_class: str, text: str) -> None:
        super().__init__(f"{original_class}: {text}")
        self.original_class = original_class

    def __reduce__(self) -> tuple[object, ...]:
        return (_rebuilt_masked, (self.original_class, str(self)))


def _rebuilt_masked(original_class: str, shown: str) -> MaskedException:
    masked = MaskedException(original_class, "")
    masked.args = (shown,)
    return masked


def qualified_name(exc: BaseException) -> str:
    """The class of ``exc`` as ``module.qualname`` (a builtin's bare name): ``httpx.ReadTimeout``."""
    cls = type(exc)
    module = cls.__module__
    return cls.__qualname__ if module == "builtins" else f"{module}.{cls.__qualname__}"


_MOST_SHOWN = 10_000
"""The characters of an exception's text a masked copy keeps."""
_MOST_MEMBERS = 16
"""Members of an exception group looked at (and shown in its masked copy): a group of more is replaced."""
_MOST_NESTED = 4
"""Groups nested in groups looked into: one nested deeper is replaced."""


def _members(exc: BaseException) -> tuple[BaseException, ...] | None:
    """An exception group's members; ``None`` for any other exception."""
    group: object = exc
    if isinstance(group, BaseExceptionGroup):
        return cast("BaseExceptionGroup[BaseException]", group).exceptions
    return None


def _leaks(exc: BaseException, secrets: tuple[str, ...], depth: int = 0) -> bool:
    """Whether ``exc`` (not the SDK's own) may still show one of ``secrets``, in any part or group member; ``True``
    when that cannot be told (a ``__str__`` that raises, a group nested past `_MOST_NESTED`)."""
    if type(exc).__module__.split(".")[0] == "animalstore_client":
        return False  # the SDK's own messages are masked when made
    members = _members(exc)
    if members is not None:
        if depth >= _MOST_NESTED:
            return True
        if (
            any(_leaks(member, secrets, depth + 1) for member in members[:_MOST_MEMBERS])
            or len(members) > _MOST_MEMBERS
        ):
            return True
    try:
        shown = [str(exc), repr(exc)]
        values: list[object] = [*exc.args, *vars(exc).values(), *getattr(exc, "__notes__", ())]
        for value in values:
            if isinstance(value, (str, bytes, bytearray, Mapping, list, tuple)):
                if _contains(cast("object", value), secrets, 3):
                    return True
            elif not isinstance(value, (int, float, bool, type(None), BaseException)):
                shown.append(repr(value))
    except Exception:  # noqa: BLE001  # a __str__ or __repr__ of someone else's that fails: no way to be sure
        return True
    return any(secret in text for text in shown for secret in secrets)


def _masked_copy(exc: BaseException, secrets: tuple[str, ...]) -> MaskedException:
    try:
        text = str(exc)
    except Exception:  # noqa: BLE001
        text = "(its text cannot be shown)"
    members = _members(exc)
    if members:
        shown: list[str] = []
        for member in list(members)[:_MOST_MEMBERS]:
            try:
                shown.append(f"{qualified_name(member)}: {member}")
            except Exception:  # noqa: BLE001
                shown.append(f"{qualified_name(member)}: (its text cannot be shown)")
        text += " [" + "; ".join(shown) + "]"
    # Masked whole, then cut: a cut through a secret would leave its start unmasked.
    copy = MaskedException(qualified_name(exc), redact_text(_masked(text, secrets))[:_MOST_SHOWN])
    copy.__traceback__ = exc.__traceback__
    copy.__cause__ = exc.__cause__
    copy.__context__ = exc.__context__
    copy.__suppress_context__ = exc.__suppress_context__
    return copy


def _replace_leaking_links(exc: BaseException, secrets: tuple[str, ...]) -> None:
    """Replace a cause or context of ``exc`` that still holds one of ``secrets`` by its `MaskedException` copy."""
    secrets = tuple(secret for secret in secrets if len(secret) >= SHORTEST_MASKED)
    if not secrets:
        return
    copies: dict[int, MaskedException] = {}
    for attribute in ("__cause__", "__context__"):
        linked = getattr(exc, attribute)
        if isinstance(linked, BaseException):
            copy = copies.get(id(linked))  # most often one exception is both: it stays one
            if copy is None:
                _mask_args(linked, secrets)
                if not _leaks(linked, secrets):
                    continue
                copy = copies[id(linked)] = _masked_copy(linked, secrets)
            setattr(exc, attribute, copy)


SHORTEST_MASKED = 8
"""A secret shorter than this (a test's ``"k"``) is not masked in free text: it would garble every word holding it."""


def _mask_args(exc: BaseException, secrets: tuple[str, ...]) -> None:
    """Mask ``secrets`` in the text arguments of ``exc``, one of this call's: code of the caller's may quote the key,
    and a crash reporter records every chained exception's ``args`` (the SDK's own are masked when made)."""
    args = exc.args
    masked = tuple(_masked(arg, secrets) if isinstance(arg, str) else arg for arg in args)
    if masked != args:
        exc.args = masked
    if isinstance(exc, OSError) and isinstance(exc.strerror, str):  # its str() is made from strerror, not args
        exc.strerror = _masked(exc.strerror, secrets)


def _masked(text: str, secrets: tuple[str, ...]) -> str:
    for secret in secrets:
        if len(secret) >= SHORTEST_MASKED and secret in text:
            text = text.replace(secret, "[redacted]")
    return text


def _clear(frame: FrameType, caller: FrameType, secrets: tuple[str, ...]) -> None:
    if (
        frame.f_code.co_flags & _GENERATOR_CODE
        and not _CLEAR_REFUSES_SUSPENDED
        and not (_FINISHED_CORO_KNOWS_CALLER and frame.f_back is caller)
        and not _holds_secret(frame, secrets)
    ):
        return  # may be suspended, and clearing would close it: left as it is
    # Refused for a running frame (and, from 3.13, a suspended one): not finished, so left alone.
    with contextlib.suppress(RuntimeError):
        frame.clear()


def _holds_secret(frame: FrameType, secrets: tuple[str, ...]) -> bool:
    """Whether a local of ``frame`` contains one of ``secrets``, directly or in a mapping or sequence (two levels)."""
    return bool(secrets) and any(_contains(value, secrets, 2) for value in frame.f_locals.values())


def _contains(value: object, secrets: tuple[str, ...], depth: int) -> bool:
    if isinstance(value, (bytes, bytearray)):
        value = bytes(value).decode("latin-1")
    if isinstance(value, str):
        return any(secret in value for secret in secrets)
    if depth == 0:
        return False
    if isinstance(value, Mapping):
        pairs = cast("Mapping[object, object]", value)
        return any(
            _contains(key, secrets, 0) or _contains(item, secrets, depth - 1) for key, item in list(pairs.items())[:256]
        )
    if isinstance(value, (list, tuple)):
        return any(_contains(item, secrets, depth - 1) for item in list(cast("list[object]", value))[:256])
    return False
