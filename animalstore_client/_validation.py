"""Argument checks, run before any request is built.

Each check raises `ClientValidationError` naming the argument, the rule and
the value, so a caller can fix the call without reading the source.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import cast

import httpx

from ._exceptions import ClientValidationError
from ._models import PetStatus

INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1
LIMIT_MIN = 1
LIMIT_MAX = 100
MAX_SECONDS = 365 * 24 * 3600.0
"""The longest timeout accepted: a year; longer ones overflow some platforms' socket timeouts."""


class NotGiven:
    """The type of `NOT_GIVEN`: an argument left out, as distinct from ``None``.

    For ``timeout=`` the difference matters: left out means "the client's
    timeout", ``None`` means "no timeout at all".
    """

    _instance: NotGiven | None = None

    def __new__(cls) -> NotGiven:
        # One instance, so that identity checks hold across copies and pickles.
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "NOT_GIVEN"

    def __bool__(self) -> bool:
        return False

    def __reduce__(self) -> str:
        return "NOT_GIVEN"


NOT_GIVEN = NotGiven()
"""The default of per-call ``timeout=``: use the client's setting."""

_STATUS_VALUES = ", ".join(repr(member.value) for member in PetStatus)


_MAX_SHOWN = 200


def show(value: object) -> str:
    """A short, safe repr for messages: huge ints and long values are summarised, not printed."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 128:
        # repr() of an int past 4300 digits raises ValueError; nobody reads 40 digits anyway.
        return f"an int of about {int(value.bit_length() * 0.30103) + 1} digits"
    try:
        text = repr(value)
    except Exception:  # noqa: BLE001 (a broken __repr__ must not hide the real error)
        return f"a {type(value).__name__}"
    return text if len(text) <= _MAX_SHOWN else text[: _MAX_SHOWN - 3] + "..."


def _fail(argument: str, rule: str, value: object, *, shown: str | None = None) -> ClientValidationError:
    got = shown if shown is not None else show(value)
    return ClientValidationError(f"{argument} must be {rule}, got {got}", argument=argument, rule=rule, value=value)


def check_limit(limit: object) -> int | None:
    """``limit`` of `list_pets`: ``None`` or an int from 1 to 100."""
    if limit is None:
        return None
    # bool is an int subclass; limit=True must not mean limit=1.
    if isinstance(limit, int) and not isinstance(limit, bool) and LIMIT_MIN <= limit <= LIMIT_MAX:
        return int(limit)
    raise _fail("limit", f"an int from {LIMIT_MIN} to {LIMIT_MAX}", limit)


def check_int64(value: object, argument: str) -> int:
    """An int (not bool) within the signed 64-bit range the service uses for ids."""
    if isinstance(value, int) and not isinstance(value, bool) and INT64_MIN <= value <= INT64_MAX:
        return int(value)
    raise _fail(argument, "an int within int64 (-2**63 to 2**63-1)", value)


def check_str(value: object, argument: str) -> str:
    """A ``str`` that can be sent as UTF-8 (no lone surrogates)."""
    if not isinstance(value, str):
        raise _fail(argument, "a str", value)
    if not value.isascii():
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise _fail(
                argument, "a str that can be encoded as UTF-8", value, shown=f"{show(value)} ({exc.reason})"
            ) from None
    return value


def check_status(status: object, argument: str = "status") -> PetStatus | None:
    """``None``, a known `PetStatus`, or one of its string values."""
    if status is None:
        return None
    if isinstance(status, str):
        member = PetStatus._value2member_map_.get(str(status))
        if member is not None:
            return PetStatus(member)
    raise _fail(argument, f"a PetStatus or one of {_STATUS_VALUES}", status)


def check_api_key(api_key: object) -> str:
    """A key that can travel in a header; its value never appears in the error."""
    if not isinstance(api_key, str):
        raise _fail("api_key", "a str", None, shown=f"a {type(api_key).__name__} (value not shown)")
    rule = "a non-empty str of printable ASCII with no whitespace or control characters"
    if not api_key:
        raise _fail("api_key", rule, None, shown="an empty str")
    for index, char in enumerate(api_key):
        if not "!" <= char <= "~":
            raise _fail(
                "api_key",
                rule,
                None,
                shown=f"a key with {_char_name(char)} at index {index} (the key is not shown)",
            )
    return api_key


def _char_name(char: str) -> str:
    if char == " ":
        return "a space"
    if char.isspace():
        return f"whitespace {char!r}"
    if ord(char) < 0x20 or ord(char) == 0x7F:
        return f"control character {char!r}"
    return f"non-ASCII character U+{ord(char):04X}"


def check_max_retries(value: object) -> int:
    """``max_retries``: an int >= 0."""
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return int(value)
    raise _fail("max_retries", "an int >= 0", value)


def _is_seconds(value: object) -> bool:
    # inf would be accepted by httpx and then overflow the socket layer on every call.
    return isinstance(value, (int, float)) and not isinstance(value, bool) and 0 < value <= MAX_SECONDS


def check_timeout(value: object, argument: str = "timeout") -> httpx.Timeout:
    """A timeout: seconds as a number, an `httpx.Timeout`, or ``None`` for none at all.

    Every number, including each phase of an `httpx.Timeout`, must be finite
    and positive (at most a year); ``None`` turns a phase off.
    """
    rule = "a finite number of seconds > 0, an httpx.Timeout of such numbers (or None), or None for no timeout"
    if isinstance(value, httpx.Timeout):
        phases = (value.connect, value.read, value.write, value.pool)
        if all(phase is None or _is_seconds(phase) for phase in phases):
            return value
        raise _fail(argument, rule, value)
    if value is None:
        return httpx.Timeout(None)
    if _is_seconds(value):
        return httpx.Timeout(float(value))  # type: ignore[arg-type]  # checked by _is_seconds
    raise _fail(argument, rule, value)


def check_total_timeout(value: object) -> float | None:
    """``total_timeout``: a finite number of seconds > 0, or ``None`` for no deadline."""
    if value is None:
        return None
    if _is_seconds(value):
        return float(value)  # type: ignore[arg-type]  # checked by _is_seconds
    raise _fail("total_timeout", "a finite number of seconds > 0, or None for no deadline", value)


def check_max_response_bytes(value: object) -> int | None:
    """``max_response_bytes``: an int > 0, or ``None`` for no cap."""
    if value is None:
        return None
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return int(value)
    raise _fail("max_response_bytes", "an int > 0, or None for no cap", value)


# Headers that frame the message or belong to one hop: httpx sets them from
# the request itself, and a caller's copy would contradict it (a request with
# both Content-Length and Transfer-Encoding is the request-smuggling shape).
FORBIDDEN_HEADERS = frozenset(
    {
        "content-length",
        "transfer-encoding",
        "host",
        "connection",
        "keep-alive",
        "upgrade",
        "te",
        "trailer",
        "proxy-authorization",
        "proxy-connection",
    }
)
_TOKEN_CHARS = frozenset("!#$%&'*+-.^_`|~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")


def check_headers(headers: object, argument: str) -> dict[str, str]:
    """A mapping of header names to str values that may not set ``Authorization``."""
    if headers is None:
        return {}
    if not isinstance(headers, Mapping):
        raise _fail(argument, "a mapping of header names to str values", headers)
    result: dict[str, str] = {}
    items = cast("Mapping[object, object]", headers).items()
    for name, value in items:
        if not isinstance(name, str) or not name or not _TOKEN_CHARS.issuperset(name):
            raise _fail(argument, "a mapping whose keys are header names (RFC 9110 tokens)", name)
        if name.lower() in FORBIDDEN_HEADERS:
            raise ClientValidationError(
                f"{argument} must not set {name}: it frames the message or belongs to one hop, so the "
                "client sets it itself",
                argument=argument,
                rule="no framing or hop-by-hop header (" + ", ".join(sorted(FORBIDDEN_HEADERS)) + ")",
                value=name,
            )
        if name.lower() == "authorization":
            raise ClientValidationError(
                f"{argument} must not set Authorization: the client sends the API key itself; "
                "pass api_key= (or use with_options(api_key=...)) to change it",
                argument=argument,
                rule="no Authorization header",
                value=None,
            )
        if not isinstance(value, str) or not all(" " <= c <= "~" or c == "\t" for c in value):
            raise _fail(
                argument,
                f"a mapping whose values are str of printable ASCII (header {name!r})",
                value,
            )
        result[name] = value
    return result
