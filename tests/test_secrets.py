"""``_core.secrets``: the one list of secret names, the masking built on it, and forget_locals' limits."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Iterator
from typing import Any

import httpx
import pytest

from animalstore_client._core.attempts import connection_error
from animalstore_client._core.secrets import SECRET_NAMES, forget_locals, is_secret_name, redact_text, redact_url

KEY = "sk-secret-unit-4c2d"


def test_the_issue_s_names_are_secret_in_any_case() -> None:
    """Every name the issue lists is in SECRET_NAMES, compared case-insensitively; 'limit' is not."""
    listed = [
        "api_key",
        "apikey",
        "api-key",
        "x-api-key",
        "key",
        "token",
        "access_token",
        "refresh_token",
        "id_token",
        "client_secret",
        "secret",
        "password",
        "passwd",
        "signature",
        "sig",
        "auth",
        "authorization",
        "session",
        "cookie",
    ]
    assert set(listed) <= SECRET_NAMES
    assert is_secret_name("X-Api-Key")
    assert is_secret_name("ACCESS_TOKEN")
    assert not is_secret_name("limit")


def test_urls_and_text_are_masked_by_that_list() -> None:
    """Userinfo and secret query values are masked in a URL and in text quoting one; other values stay."""
    assert redact_url(httpx.URL("https://u:p@h/v1/pets?limit=2&Token=abc#f")) == (
        "https://***@h/v1/pets?limit=2&Token=REDACTED#f"
    )
    assert redact_url("https://h/v1/pets?api%5Fkey=abc", userinfo="") == "https://h/v1/pets?api%5Fkey=REDACTED"
    message = "Connection timeout to host https://h/v1/pets?status=sold&token=abc'"
    assert redact_text(message) == "Connection timeout to host https://h/v1/pets?status=sold&token=REDACTED'"


def test_a_library_message_quoting_the_url_is_masked_in_the_sdk_exception() -> None:
    """aiohttp writes the URL into its timeout message: the SDK's exception text masks its secret values."""
    request = httpx.Request("GET", "https://h/v1/pets?token=tok-abc")
    failure = httpx.ConnectTimeout("Connection timeout to host https://h/v1/pets?token=tok-abc", request=request)
    text = str(connection_error(failure, request, 1))
    assert "tok-abc" not in text
    assert text.count("token=REDACTED") == 2


def _library(headers: dict[str, str]) -> None:
    raise OSError("reset")


def _sdk_call(headers: dict[str, str]) -> None:
    """What a client method does: translate the library's failure, and forget the locals on the way out."""
    try:
        try:
            _library(headers)
        except OSError as exc:
            raise RuntimeError("translated") from exc
    except BaseException as exc:
        forget_locals(exc, (KEY,))
        raise


def test_finished_frames_below_lose_their_locals_and_keep_their_place() -> None:
    """The frames an exception passed out of are cleared; file, line and function stay in the traceback."""
    with pytest.raises(RuntimeError) as info:
        _sdk_call({"Authorization": f"Bearer {KEY}"})
    cause = info.value.__cause__
    assert cause is not None
    tb = cause.__traceback__
    assert tb is not None
    assert tb.tb_next is not None
    frame = tb.tb_next.tb_frame
    assert frame.f_code.co_name == "_library"
    assert frame.f_locals == {}
    assert tb.tb_next.tb_lineno > 0


def test_the_exception_the_caller_was_handling_is_left_alone() -> None:
    """An exception raised before the call (the last __context__ of every one raised in it) keeps its frames."""

    def earlier() -> None:
        kept = "the caller's local"  # noqa: F841
        raise KeyError("earlier")

    def caller() -> None:
        try:
            earlier()
        except KeyError:
            _sdk_call({})

    with pytest.raises(RuntimeError) as info:
        caller()
    handled = info.value.__context__
    assert isinstance(handled, OSError)
    earlier_error = handled.__context__
    assert isinstance(earlier_error, KeyError)
    tb = earlier_error.__traceback__
    assert tb is not None
    assert tb.tb_next is not None
    assert tb.tb_next.tb_frame.f_locals == {"kept": "the caller's local"}


def test_a_live_generator_in_the_chain_is_not_closed() -> None:
    """A suspended generator whose frame a re-raised exception passes through goes on yielding afterwards."""

    def source() -> Iterator[BaseException | int]:
        try:
            raise LookupError("found nothing")
        except LookupError as exc:
            yield exc  # the frame caught it and lives on, suspended
        yield 2

    items = source()
    stored = next(items)
    assert isinstance(stored, BaseException)
    with pytest.raises(LookupError) as info:
        raise stored  # the generator's frame is now inside this traceback, not first
    forget_locals(info.value, (KEY,))
    assert next(items) == 2


def test_a_live_async_generator_in_the_chain_is_not_closed() -> None:
    """The same for an async generator suspended in a running task."""

    async def source() -> AsyncGenerator[BaseException | int, None]:
        try:
            raise LookupError("found nothing")
        except LookupError as exc:
            yield exc
        yield 2

    async def main() -> int:
        items = source()
        stored = await items.__anext__()
        assert isinstance(stored, BaseException)
        try:
            raise stored
        except LookupError as exc:
            forget_locals(exc, (KEY,))
        result = await items.__anext__()
        await items.aclose()
        assert isinstance(result, int)
        return result

    assert asyncio.run(main()) == 2


class _Odd(Exception):
    """An exception whose ``exceptions`` attribute is not a sequence of exceptions."""

    exceptions = 5


def test_forget_locals_never_raises() -> None:
    """A strange chain (an 'exceptions' attribute that is not a group's, a cycle) changes nothing that leaves."""
    odd = _Odd("odd")
    odd.__context__ = odd
    forget_locals(odd)
    group = BaseExceptionGroup("group", [ValueError("a"), odd])  # builtin from 3.11
    forget_locals(group)


def test_the_key_quoted_in_an_oserrors_strerror_is_masked_when_it_leaves() -> None:
    """str() of an OSError is made from its strerror, not its args: both are masked in an exception a call chains."""
    from animalstore_client._core.secrets import forget_locals

    key = "sk-live-0123456789abcdef"

    def failing() -> None:
        raise ConnectionError(111, f"refused for {key}")

    cause: BaseException | None = None
    try:
        try:
            failing()
        except ConnectionError as inner:
            raise RuntimeError("the call failed") from inner
    except RuntimeError as exc:
        forget_locals(exc, (key,))
        cause = exc.__cause__
    assert cause is not None
    assert key not in str(cause)
    assert key not in repr(cause.args)


_KEY = "sk-live-0123456789abcdef"


class _Holding(Exception):
    """An exception holding request headers in an attribute its text does not show."""

    def __init__(self, message: str, headers: dict[str, str]) -> None:
        super().__init__(message)
        self.headers = headers


class _Base(BaseException):
    """Not an Exception: a BaseException of someone else's."""


class _Long(Exception):
    """An exception whose text is long, the key past where a masked copy cuts it."""

    def __str__(self) -> str:
        return "x" * 9_990 + _KEY


def _group(members: list[Exception]) -> Exception:
    """An exception group of ``members``, as an anyio task group raises one (Python 3.11+)."""
    return ExceptionGroup("tasks", members)  # builtin from 3.11
    raise AssertionError("no ExceptionGroup before Python 3.11")


def _chained(cause: BaseException) -> BaseException:
    """An SDK error raised from ``cause``, as it leaves a public method (`forget_locals` with the key)."""
    from animalstore_client import MiddlewareError

    try:
        try:
            raise cause
        except BaseException as exc:
            raise MiddlewareError("m", request=httpx.Request("GET", "https://store.test/v1/pets")) from exc
    except MiddlewareError as error:
        forget_locals(error, (_KEY,))
        return error


@pytest.mark.parametrize(
    "cause",
    [
        pytest.param(lambda: _Holding("boom", {"authorization": f"Bearer {_KEY}"}), id="an-attribute"),
        pytest.param(
            lambda: _group([_Holding("boom", {"authorization": f"Bearer {_KEY}"})]),
            id="a-group",
        ),
        pytest.param(lambda: _Base(f"Bearer {_KEY}".encode()), id="a-base-exception"),
        pytest.param(_Long, id="past-the-cut"),
    ],
)
def test_a_cause_holding_the_key_anywhere_is_replaced_by_a_masked_copy(cause: Any) -> None:
    """A cause holding the key in an attribute, in a member of an exception group, as a BaseException's bytes, or
    in a text longer than a masked copy keeps: replaced by a MaskedException that shows no part of the key."""
    from animalstore_client import MaskedException

    error = _chained(cause())
    masked = error.__cause__
    assert isinstance(masked, MaskedException)
    assert error.__context__ is masked
    shown = str(masked) + repr(masked) + repr(vars(masked))
    assert not any(_KEY[:length] in shown for length in range(6, len(_KEY) + 1))
