"""The service's own deprecation notices: its ``Deprecation`` (RFC 9745) and ``Sunset`` (RFC 8594) headers.

A raw server sends each form to every client/library pair: one `DeprecationWarning` per client and operation, at
the caller's line, naming the operation, the dates and the ``Link`` targets; malformed values are ignored; and
``get_pet``'s own warning is not doubled by the fake store's notice, which says the same.
"""

from __future__ import annotations

import warnings
from datetime import date
from typing import Any

import pytest

from animalstore_client._core.deprecation import MAX_LINK_SHOWN, MAX_LINKS_SHOWN, notice_message, service_notice

from .conftest import ALL_VARIANTS, ClientFactory
from .servers import LoopbackServer, respond

PET = {"id": 7, "name": "Rex", "categoryId": 3, "status": "available"}
SUNSET = "Thu, 05 Dec 2030 00:00:00 GMT"
FORMS: dict[str, tuple[dict[str, str], str | None]] = {
    "RFC 9745 date, sunset and links": (
        {
            "Deprecation": "@1767225600",
            "Sunset": SUNSET,
            "Link": '<https://docs.example/migrate>; rel="deprecation", <https://docs.example/x>; rel="alternate"',
        },
        "list_pets() (GET /pets) is deprecated since 2026-01-01 and will be removed on 2030-12-05; "
        "see https://docs.example/migrate",
    ),
    "the older 'true'": ({"Deprecation": "true"}, "list_pets() (GET /pets) is deprecated (its"),
    "a sunset alone": ({"Sunset": SUNSET}, "list_pets() (GET /pets) is deprecated and will be removed on 2030-12-05"),
    "malformed": ({"Deprecation": "soon", "Sunset": "one day"}, None),
}


def _listed_twice(make_client: ClientFactory, variant: str, base_url: str) -> list[warnings.WarningMessage]:
    """Two list_pets calls from this file's lines, sync or in a coroutine of this file's; what they warned."""
    client = make_client(base_url=base_url)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        if variant.startswith("sync"):
            client.list_pets()
            client.list_pets()
        else:
            inner: Any = client.inner  # type: ignore[attr-defined]

            async def calls() -> None:
                await inner.list_pets()
                await inner.list_pets()

            client._loop.run_until_complete(calls())  # type: ignore[attr-defined]  # the SyncView's own loop
    # Only this module's subject: a warning another test's object gives when collected meanwhile is not it.
    return [w for w in caught if w.category is DeprecationWarning]


@pytest.mark.parametrize("form", list(FORMS))
@pytest.mark.parametrize("variant", ALL_VARIANTS, indirect=True)
def test_a_notice_warns_once_per_client_and_operation_at_the_callers_line(
    make_client: ClientFactory, variant: str, form: str
) -> None:
    """Each form sent on both answers: one DeprecationWarning naming the operation, the dates and the link, at this
    file's line; a malformed notice warns nothing."""
    headers, expected = FORMS[form]
    with LoopbackServer([respond(200, [PET], headers)]) as server:
        caught = _listed_twice(make_client, variant, server.base_url)
    if expected is None:
        assert caught == []
        return
    assert len(caught) == 1, [str(w.message) for w in caught]
    warning = caught[0]
    assert warning.category is DeprecationWarning
    assert f"The animal store announces that {expected}" in str(warning.message)
    assert warning.filename == __file__


def test_get_pets_own_warning_is_not_doubled_by_a_notice_that_says_the_same() -> None:
    """The fake store announces GET /pets/{petId}'s removal on the date get_pet's own warning gives: one warning a
    call; a request() to that route, which warned of nothing, gets the service's notice once for every pet id."""
    from animalstore_client.testing import FakeAnimalStore

    store = FakeAnimalStore()
    with store.client() as client:
        first = client.create_pet(name="Rex", category_id=1)
        second = client.create_pet(name="Max", category_id=1)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            client.get_pet(first.id)  # type: ignore[deprecated]  # pyright: ignore[reportDeprecated]
            client.request("GET", f"/pets/{first.id}")
            client.request("GET", f"/pets/{second.id}")
    caught = [w for w in caught if w.category is DeprecationWarning]
    messages = [str(w.message) for w in caught]
    assert len(messages) == 2, messages
    assert messages[0].startswith("get_pet() is deprecated")
    assert messages[1].startswith("The animal store announces that get_pet() (GET /pets/{petId}) is deprecated")
    assert all(w.filename == __file__ for w in caught)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ([(b"Deprecation", b"@0")], (date(1970, 1, 1), True, None, ())),
        ([(b"deprecation", b"TRUE"), (b"SUNSET", SUNSET.encode())], (None, True, date(2030, 12, 5), ())),
        ([(b"Deprecation", b"@99999999999999999999")], None),
        ([(b"Deprecation", b"@-x")], None),
        ([(b"Sunset", b"\xff\xfe")], None),
        ([(b"Link", b'<https://x>; rel="sunset"')], None),
    ],
)
def test_what_the_headers_announce_is_read_or_ignored_never_an_error(raw: Any, expected: Any) -> None:
    """Values read as the RFCs write them; a malformed or overflowing one is ignored; a link alone announces nothing."""
    assert service_notice(raw) == (None if expected is None else expected)


def test_a_notice_under_warnings_as_errors_keeps_the_stored_pet(caplog: pytest.LogCaptureFixture) -> None:
    """With a filter that makes warnings errors, a notice on create_pet's 201 cannot lose the pet: the call returns
    it, and the notice is logged instead."""
    from animalstore_client import AnimalStoreClient

    with (
        LoopbackServer([respond(201, PET, {"Deprecation": "true"})]) as server,
        AnimalStoreClient("k" * 16, base_url=server.base_url) as client,
        warnings.catch_warnings(),
    ):
        warnings.simplefilter("error")
        pet = client.create_pet(name="Rex", category_id=3)
    assert pet.id == 7
    assert "The animal store announces that create_pet() (POST /pets) is deprecated" in caplog.text


UNICODE_LINK = "https://docs.example/migración/ü"


@pytest.mark.parametrize("variant", ALL_VARIANTS, indirect=True)
def test_a_non_ascii_link_reads_as_the_service_wrote_it(make_client: ClientFactory, variant: str) -> None:
    """A ``Link`` target sent as UTF-8 reads as written on every pair, not as Latin-1 (``migraciÃ³n``); pyreqwest
    hands over no header value that is not ASCII, so there the notice warns without it, never garbled."""
    headers = {"Deprecation": "@1767225600", "Link": f'<{UNICODE_LINK}>; rel="deprecation"'}
    with LoopbackServer([respond(200, [PET], headers)]) as server:
        caught = _listed_twice(make_client, variant, server.base_url)
    assert len(caught) == 1, [str(w.message) for w in caught]
    message = str(caught[0].message)
    if variant.endswith("pyreqwest"):
        assert message.endswith("is deprecated since 2026-01-01 (its Deprecation and Sunset headers).")
    else:
        assert f"see {UNICODE_LINK} (its" in message


@pytest.mark.parametrize("variant", ALL_VARIANTS, indirect=True)
def test_a_notices_text_is_cut_and_quoted_on_every_pair(make_client: ClientFactory, variant: str) -> None:
    """Four links of 1,000 characters: the warning names three, each cut, and says how many more; its length stays
    a log line's whatever the service sends."""
    links = ", ".join(f'<https://docs.example/{n}/{"x" * 1000}>; rel="deprecation"' for n in range(4))
    headers = {"Deprecation": "@1767225600", "Link": links}
    with LoopbackServer([respond(200, [PET], headers)]) as server:
        caught = _listed_twice(make_client, variant, server.base_url)
    assert len(caught) == 1, [str(w.message) for w in caught]
    message = str(caught[0].message)
    assert all(f"https://docs.example/{n}/xxx" in message for n in range(3))
    assert "https://docs.example/3/" not in message
    assert message.endswith("... and 1 more (its Deprecation and Sunset headers).")
    assert len(message) < 200 + MAX_LINKS_SHOWN * (MAX_LINK_SHOWN + 5)


def test_escape_codes_and_line_breaks_in_a_notice_are_escaped() -> None:
    """A link holding an escape code, a line break or a bidirectional override is shown escaped: it cannot colour,
    split or reverse a log line (most libraries refuse such bytes in a header; the reader does not rely on it)."""
    raw = [
        (b"Deprecation", b"true"),
        (b"Link", b'<https://docs.example/\x1b[31mred\r\nFAKE \xe2\x80\xaeevil>; rel="sunset"'),
    ]
    notice = service_notice(raw)
    assert notice is not None
    message = notice_message("list_pets", "GET", "/pets", notice)
    assert message.isprintable()
    assert "https://docs.example/\\x1b[31mred\\r\\nFAKE \\u202eevil" in message
