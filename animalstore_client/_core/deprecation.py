"""What is deprecated: ``get_pet``, its message written once, the run-time warnings and the service's notices.

Type checkers read the message only from a string literal in the
``@deprecated(...)`` decorator, so each decorator holds a copy that
``scripts/codegen.py`` writes from `GET_PET_DEPRECATION` (and checks in CI).
"""

from __future__ import annotations

import contextlib
import email.utils
import functools
import inspect
import re
import warnings
from collections.abc import Callable
from datetime import UTC, date, datetime
from typing import Any, NamedTuple, TypeVar, cast

__all__ = [
    "GET_PET_DEPRECATION",
    "GET_PET_SUNSET",
    "MAX_LINKS_SHOWN",
    "MAX_LINK_FIELDS",
    "MAX_LINK_SHOWN",
    "MAX_NOTICE_FIELD",
    "ServiceNotice",
    "announces",
    "notice_message",
    "service_notice",
    "warn_at_callers_line",
    "warns_deprecated",
]

GET_PET_DEPRECATION = (
    "get_pet() is deprecated: GET /pets/{petId} will be removed from the animal store "
    "on 2030-12-05. Use list_pets(status=..., limit=100) and pick the pet by id (only the "
    "first 100 pets can be seen), or keep the Pet that create_pet returned; "
    "help(AnimalStoreClient.get_pet) lists the recipes."
)

F = TypeVar("F", bound=Callable[..., Any])
_PACKAGE = "animalstore_client."  # the frames of its modules are the SDK's, not the caller's


def warns_deprecated(message: str) -> Callable[[F], F]:
    """A decorator: warn ``message`` at the caller's line on every call of the function, sync or async.

    Not ``typing_extensions.deprecated`` (kept with ``category=None`` for the static marker): for a coroutine
    function on Python < 3.12 it imports asyncio, doubling this package's import cost. Typed as returning
    ``function``'s own type so checkers keep its name (``The method "get_pet" ... is deprecated``).
    """

    def decorate(function: F) -> F:
        @functools.wraps(function)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            # Warned when called, not when awaited: the caller's line is then on the stack.
            warnings.warn(message, DeprecationWarning, stacklevel=2)
            return function(*args, **kwargs)

        mark = getattr(inspect, "markcoroutinefunction", None)  # Python 3.12+
        if mark is not None and inspect.iscoroutinefunction(function):
            return cast("F", mark(wrapper))
        return cast("F", wrapper)

    return decorate


def warn_at_callers_line(message: str, category: type[Warning] = DeprecationWarning) -> None:
    """Warn ``message`` (a `DeprecationWarning` unless told) at the first line outside this package: the caller's.

    A fixed ``stacklevel`` would be right for one path only: ``AnimalStoreClient(...)`` and the testing kit's
    ``store.client(...)``, which adds frames of its own, reach the same construction.
    """
    here = inspect.currentframe()
    frame = here.f_back if here is not None else None  # stacklevel 2: where this was called from
    level = 2
    while frame is not None and frame.f_back is not None and frame.f_globals.get("__name__", "").startswith(_PACKAGE):
        frame = frame.f_back
        level += 1
    del here, frame  # frames hold their locals: a reference kept here would keep the caller's alive
    warnings.warn(message, category, stacklevel=level)


# What the service announces at run time (RFC 9745 Deprecation, RFC 8594 Sunset).
_REL = re.compile(r"""\brel\s*=\s*"?([^";,]+)"?""", re.IGNORECASE)

MAX_NOTICE_FIELD = 8 * 1024
"""Bytes of each ``Deprecation``, ``Sunset`` and ``Link`` field read: the rest of a longer one is not looked at."""
MAX_LINK_FIELDS = 16
"""``Link`` fields read of one answer: the rest are not looked at."""
MAX_LINKS_SHOWN = 3
"""Links a warning names; it says how many more the service gave."""
MAX_LINK_SHOWN = 200
"""Characters of each link a warning shows (a longer one is cut, with ``...``): a warning stays a line of a log."""


def _text(value: bytes) -> str:
    """A header value's first `MAX_NOTICE_FIELD` bytes as text: UTF-8, as servers write a non-ASCII link (RFC 8288
    asks for percent-encoding, which many do not do), else Latin-1, as HTTP reads a byte it does not know."""
    value = value[:MAX_NOTICE_FIELD]
    try:
        return value.decode()
    except UnicodeDecodeError:
        return value.decode("latin-1")


def _clean(text: str) -> str:
    """``text`` fit for one log line: cut to `MAX_LINK_SHOWN` characters, a character that does not print (an escape
    code, a line break, a bidirectional override) written as its escape."""
    if len(text) > MAX_LINK_SHOWN:
        text = text[:MAX_LINK_SHOWN] + "..."
    if text.isprintable():
        return text
    return "".join(char if char.isprintable() else char.encode("unicode_escape").decode("ascii") for char in text)


def _link_targets(field: str) -> list[str]:
    """The targets of a ``Link`` field whose ``rel`` is ``deprecation`` or ``sunset``: one pass, linear in its length.

    A link-value is ``<target>`` and its parameters, up to the next ``,`` or ``<``; a ``<`` with no ``>`` ends the
    field. Each search starts where the last ended, or is bounded by the next ``<``."""
    found: list[str] = []
    start = field.find("<")
    while start >= 0:
        end = field.find(">", start + 1)
        if end < 0:
            break
        following = field.find("<", end + 1)
        stop = following if following >= 0 else len(field)
        comma = field.find(",", end + 1, stop)
        params = field[end + 1 : comma if comma >= 0 else stop]
        if any(rel.lower() in ("deprecation", "sunset") for value in _REL.findall(params) for rel in value.split()):
            found.append(field[start + 1 : end])
        start = following
    return found


class ServiceNotice(NamedTuple):
    """A deprecation the service announced in an answer's headers: ``Deprecation``, ``Sunset`` and their links."""

    deprecated_since: date | None
    """When the deprecation took effect (RFC 9745 ``@<unix time>``); ``None`` for the older ``true``, or none sent."""
    deprecated: bool
    """Whether a valid ``Deprecation`` field was sent."""
    sunset: date | None
    """When the operation goes (RFC 8594 ``Sunset``, an HTTP date); ``None`` when none was sent, or not a date."""
    links: tuple[str, ...]
    """The ``Link`` targets whose ``rel`` is ``deprecation`` or ``sunset``, in order."""


def _deprecation(value: str) -> tuple[bool, date | None] | None:
    """A ``Deprecation`` value: (deprecated, since), or ``None`` when malformed (ignored, never an error)."""
    text = value.strip()
    if text.lower() == "true":  # the draft's form, before RFC 9745
        return True, None
    with contextlib.suppress(OverflowError, OSError, ValueError):
        if text.startswith("@") and text[1:].isascii() and text[1:].lstrip("-").isdigit():
            return True, datetime.fromtimestamp(int(text[1:]), tz=UTC).date()
    return None


def _http_date(value: str) -> date | None:
    with contextlib.suppress(TypeError, ValueError, IndexError, OverflowError):
        return email.utils.parsedate_to_datetime(value.strip()).date()
    return None


def announces(raw: list[tuple[bytes, bytes]]) -> bool:
    """Whether an answer's raw headers carry a ``Deprecation`` or ``Sunset`` field (read on every answer)."""
    for name, _ in raw:  # noqa: SIM110  # a loop: any() over a generator costs a call per field, on every answer
        if len(name) in (6, 11) and name.lower() in (b"sunset", b"deprecation"):
            return True
    return False


def service_notice(raw: list[tuple[bytes, bytes]]) -> ServiceNotice | None:
    """What an answer's raw headers announce of a deprecation; ``None`` when nothing valid is announced.

    Malformed values are ignored, never an error. Each field is read up to `MAX_NOTICE_FIELD` bytes, and at most
    `MAX_LINK_FIELDS` ``Link`` fields, each in one pass: whatever a server sends costs time linear in those caps.
    """
    deprecation: tuple[bool, date | None] | None = None
    sunset: date | None = None
    links: list[str] = []
    for name, value in raw:
        lowered = name.lower()
        if lowered == b"deprecation":
            deprecation = _deprecation(_text(value))
        elif lowered == b"sunset":
            sunset = _http_date(_text(value))
        elif lowered == b"link" and len(links) < MAX_LINK_FIELDS:
            links.append(_text(value))
    if deprecation is None and sunset is None:
        return None
    targets = tuple(target for field in links for target in _link_targets(field))
    deprecated, since = deprecation or (False, None)
    return ServiceNotice(since, deprecated, sunset, targets)


def notice_message(operation: str, method: str, route: str, notice: ServiceNotice) -> str:
    """The warning for ``notice``, naming the operation, the dates and the links the service gave."""
    what = f"{operation}() ({method} {route})" if operation != "request" else f"{method} {route}"
    parts = [f"The animal store announces that {what} is deprecated"]
    if notice.deprecated_since is not None:
        parts.append(f" since {notice.deprecated_since.isoformat()}")
    if notice.sunset is not None:
        parts.append(f" and will be removed on {notice.sunset.isoformat()}")
    if notice.links:
        from animalstore_client._core.secrets import redact_url  # a link is the service's: shown with no secret

        # The service's text, quoted not pasted: a few links, each cut and with its escape codes escaped.
        shown = ", ".join(_clean(redact_url(link)) for link in notice.links[:MAX_LINKS_SHOWN])
        more = len(notice.links) - MAX_LINKS_SHOWN
        parts.append(f"; see {shown}" + (f" and {more} more" if more > 0 else ""))
    return "".join(parts) + " (its Deprecation and Sunset headers)."


GET_PET_SUNSET = date(2030, 12, 5)
"""The removal date `GET_PET_DEPRECATION` states: a service notice for ``get_pet`` saying no more is not shown again."""
