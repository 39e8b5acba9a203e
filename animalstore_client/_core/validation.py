"""Argument checks, run before any request is built: each raises `ClientValidationError` naming the argument, the
rule and the value, so a caller can fix the call without reading the source."""

from __future__ import annotations

import math
import re
import sys
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Union, cast

import httpx

from animalstore_client._core.exceptions import ClientValidationError
from animalstore_client._core.models import KNOWN_STATUSES, PetStatus
from animalstore_client._core.show import MAX_SHOWN, show

if TYPE_CHECKING:
    import decimal
    import uuid

INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1
LIMIT_MIN = 1
LIMIT_MAX = 100
MAX_SECONDS = 365 * 24 * 3600.0
"""The longest timeout accepted: a year; longer ones overflow some platforms' socket timeouts."""


class NotGiven:
    """The type of `NOT_GIVEN`: an argument left out, as distinct from ``None``.

    For ``timeout=`` the difference matters: left out means "the client's timeout", ``None`` "no timeout at all".
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

QueryValue = Union[str, int, float, "decimal.Decimal", "uuid.UUID", bool, None]
"""One query parameter value: ``True``/``False`` are sent as ``true``/``false``, ``None`` as an empty value."""
QueryParams = Mapping[str, QueryValue | Sequence[QueryValue]] | Sequence[tuple[str, QueryValue | Sequence[QueryValue]]]
"""`request`'s ``params``: a mapping, or a sequence of (name, value) pairs; a list value repeats the name."""

_STATUS_VALUES = ", ".join(repr(member.value) for member in PetStatus)


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
    if not encodable(value):
        shown = f"{show(value)} (surrogates not allowed)"  # the UTF-8 codec's one reason to refuse a str
        raise _fail(argument, "a str that can be encoded as UTF-8", value, shown=shown)
    return value


def check_status(status: object, argument: str = "status") -> PetStatus | None:
    """``None``, a known `PetStatus`, or one of its string values."""
    if status is None:
        return None
    if isinstance(status, str):
        member = KNOWN_STATUSES.get(str(status))
        if member is not None:
            return member
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
            shown = f"a key with {_char_name(char)} at index {index} (the key is not shown)"
            raise _fail("api_key", rule, None, shown=shown)
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
    """``max_retries``: an int from 0 to 2**63-1."""
    # The bound keeps the count printable: repr() and "%d" fail past 4300 digits.
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= INT64_MAX:
        return int(value)
    raise _fail("max_retries", "an int from 0 to 2**63-1", value)


def _is_seconds(value: object) -> bool:
    # inf would be accepted by httpx and then overflow the socket layer on every call.
    return isinstance(value, (int, float)) and not isinstance(value, bool) and 0 < value <= MAX_SECONDS


def check_timeout(value: object, argument: str = "timeout") -> httpx.Timeout:
    """A timeout: finite seconds > 0 (at most a year), an `httpx.Timeout` of such (a phase ``None`` is off), or
    ``None`` for none at all."""
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
    if type(value).__module__.startswith("httpx2"):
        # httpx2's Timeout has httpx's repr to the letter: "got Timeout(...)" would read as a contradiction.
        raise _fail(argument, rule, value, shown=f"httpx2.{show(value)}")
    raise _fail(argument, rule, value)


def check_total_timeout(value: object) -> float | None:
    """``total_timeout``: a finite number of seconds > 0, or ``None`` for no deadline."""
    if value is None:
        return None
    if _is_seconds(value):
        return float(value)  # type: ignore[arg-type]  # checked by _is_seconds
    raise _fail("total_timeout", "a finite number of seconds > 0, or None for no deadline", value)


def check_max_response_bytes(value: object) -> int | None:
    """``max_response_bytes``: an int from 1 to 2**63-1, or ``None`` for no cap."""
    if value is None:
        return None
    # The bound keeps the cap printable in messages (repr() fails past 4300 digits).
    if isinstance(value, int) and not isinstance(value, bool) and 0 < value <= INT64_MAX:
        return int(value)
    raise _fail("max_response_bytes", "an int from 1 to 2**63-1, or None for no cap", value)


# Headers that frame the message or belong to one hop: httpx sets them from the request, and a caller's copy would
# contradict it (a request with both Content-Length and Transfer-Encoding is the request-smuggling shape).
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


CLIENT_HEADERS = FORBIDDEN_HEADERS | {"authorization"}
"""Headers only the client sets: neither ``extra_headers`` nor a middleware may set or change them."""


def check_headers(headers: object, argument: str) -> dict[str, str]:
    """A mapping of header names to str values that may not set ``Authorization``."""
    if headers is None:
        return {}
    if not isinstance(headers, Mapping):
        raise _fail(argument, "a mapping of header names to str values", headers)
    result: dict[str, str] = {}
    items = cast("Mapping[object, object]", headers).items()
    for name, value in items:
        if not isinstance(name, str) or not is_token(name):
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
            raise _fail(argument, f"a mapping whose values are str of printable ASCII (header {name!r})", value)
        result[name] = value
    return result


def is_token(text: str) -> bool:
    """Whether ``text`` is an RFC 9110 token: a header name, or a method."""
    return bool(text) and _TOKEN_CHARS.issuperset(text)


def encodable(text: str) -> bool:
    """Whether ``text`` can be sent as UTF-8 (no lone surrogates)."""
    if text.isascii():
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


_PARAM_NAME_RULE = "a mapping or pairs whose names are str encodable as UTF-8"
_PARAM_VALUE_RULE = (
    "a mapping or pairs whose values are str (encodable as UTF-8), int, finite float or Decimal, UUID, bool or "
    "None, or a list or tuple of those"
)


def _is_instance(value: object, module: str, name: str) -> bool:
    # A value of the class can exist only once its module was imported: nothing is imported here.
    cls = getattr(sys.modules.get(module), name, None)
    return isinstance(cls, type) and isinstance(value, cls)


def _query_text(value: object) -> str | None:
    """``value`` as httpx writes it in a query, or None when the rule refuses it."""
    # httpx's primitive_value_to_str spelling, so switching to or from plain httpx sends the same query.
    if value is True or value is False or value is None:
        return "true" if value else "" if value is None else "false"
    if _is_instance(value, "uuid", "UUID") or _is_instance(value, "decimal", "Decimal"):
        return str(value) if getattr(value, "is_finite", lambda: True)() else None
    if not isinstance(value, (str, int, float)) or (isinstance(value, float) and not math.isfinite(value)):
        return None
    try:
        text = str(value)
    except Exception:  # noqa: BLE001 (an int past the interpreter's digit limit, or a subclass's broken __str__)
        return None
    return text if encodable(text) else None


def _pair(item: object) -> tuple[object, object] | None:
    """``item`` as (name, value) when it is a list or tuple of two, else None."""
    if isinstance(item, (list, tuple)) and len(cast("tuple[object, ...]", item)) == 2:
        name, value = cast("tuple[object, object]", item)
        return name, value
    return None


def check_params(params: object) -> list[tuple[str, str]]:
    """``params`` of `request` (`QueryParams`, every str encodable as UTF-8): the query as (name, text) pairs,
    spelt as httpx spells them. A query string (``"a=1"``) is not accepted: pass ``{"a": 1}``."""
    if params is None:
        return []
    items: list[tuple[object, object]] = []
    if isinstance(params, Mapping):
        items.extend(cast("Mapping[object, object]", params).items())
    elif isinstance(params, (list, tuple)):
        for item in cast("list[object] | tuple[object, ...]", params):
            pair = _pair(item)
            if pair is None:
                raise _fail("params", "a list or tuple of (name, value) pairs", item, shown=f"an item {show(item)}")
            items.append(pair)
    else:
        raise _fail("params", "None, a mapping, or a list or tuple of (name, value) pairs", params)
    pairs: list[tuple[str, str]] = []
    for name, value in items:
        key = _query_text(name) if isinstance(name, str) else None
        if key is None:
            raise _fail("params", _PARAM_NAME_RULE, name, shown=f"the name {show(name)}")
        values = cast("list[object] | tuple[object, ...]", value) if isinstance(value, (list, tuple)) else (value,)
        for one in values:
            text = _query_text(one)
            if text is None:
                raise _fail("params", _PARAM_VALUE_RULE, one, shown=f"{show(one)} for {show(key)}")
            pairs.append((key, text))
    return pairs


JSON_MAX_DEPTH = 500
"""How deep ``json=`` may nest: real documents need a few dozen levels; json.dumps recurses per level (limit 1000)."""

_JSON_TYPES_RULE = "JSON data: dicts with str keys, lists, tuples, str, int, float, bool or None"
_JSON_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _json_where(path: list[object]) -> str:
    """A JSONPath-like location, ``$.pets[3].name``, cut in the middle when long."""
    parts = ["$"]
    for key in path:
        if isinstance(key, int):
            parts.append(f"[{key}]")
        elif isinstance(key, str) and _JSON_IDENTIFIER.fullmatch(key):
            parts.append(f".{key}")
        else:
            parts.append(f"[{show(key)}]")
    text = "".join(parts)
    return text if len(text) <= MAX_SHOWN else text[:97] + "..." + text[-100:]


def _json_fail(rule: str, value: object, shown: str, path: list[object]) -> ClientValidationError:
    return _fail("json", rule, value, shown=f"{shown} at {_json_where(path)}")


def _json_leaf_fault(item: object) -> str | None:
    """The rule a value that is not a container breaks, or None when it is JSON."""
    if item is None:
        return None
    if isinstance(item, str):
        return None if encodable(item) else "JSON data whose strings are encodable as UTF-8"
    if isinstance(item, float):
        return None if math.isfinite(item) else "JSON data whose numbers are finite (JSON has no NaN or Infinity)"
    if isinstance(item, int):  # bool included: json.dumps writes true and false
        if int.bit_length(item) > 128:
            try:
                int.__repr__(item)
            except ValueError:
                return "JSON data whose ints Python can write in decimal (see sys.get_int_max_str_digits())"
        return None
    return _JSON_TYPES_RULE


def check_json(data: object) -> None:
    """``json`` of `request`: data json.dumps encodes and every JSON parser reads back (dicts with str keys, lists,
    tuples, str encodable as UTF-8, int, finite float, bool, ``None``), without cycles, at most `JSON_MAX_DEPTH` deep.
    Walked with a stack of its own, so no nesting can exhaust Python's."""
    path: list[object] = []  # the key or index of the current item in each open container
    children: list[Iterator[tuple[object, object]]] = []
    open_ids: list[int] = []
    on_path: set[int] = set()
    item = data
    while True:
        if isinstance(item, (dict, list, tuple)):
            container = cast("dict[object, object] | list[object] | tuple[object, ...]", item)
            if id(container) in on_path:
                kind = type(container).__name__
                raise _json_fail("JSON data without cycles", container, f"a {kind} inside itself", path)
            if len(children) >= JSON_MAX_DEPTH:
                rule = f"JSON data at most {JSON_MAX_DEPTH} levels deep"
                raise _json_fail(rule, container, f"a {type(container).__name__} deeper than that", path)
            if isinstance(container, dict):
                # json.dumps would write 1 as "1", so {1: a, "1": b} would send one key twice.
                bad = next((key for key in container if not isinstance(key, str) or not encodable(key)), _NO_KEY)
                if bad is not _NO_KEY:
                    rule = "JSON data whose dict keys are str encodable as UTF-8"
                    raise _json_fail(rule, bad, f"the key {show(bad)}", path)
                children.append(iter(container.items()))
            else:
                children.append(enumerate(container))
            on_path.add(id(container))
            open_ids.append(id(container))
            path.append(None)
        else:
            fault = _json_leaf_fault(item)
            if fault is not None:
                raise _json_fail(fault, item, show(item), path)
        while children:
            step = next(children[-1], None)
            if step is not None:
                path[-1], item = step
                break
            children.pop()
            on_path.discard(open_ids.pop())
            path.pop()
        else:
            return


_NO_KEY = object()
