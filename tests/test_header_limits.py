"""One header limit, the SDK's, on every pair: an answer's head of at most `MAX_RESPONSE_HEADERS` fields and
`MAX_RESPONSE_HEADER_BYTES` bytes is read; past either, on every backend, the call ends with one documented error.

1.4.0 had five limits: aiohttp refused a field over 8 KB, urllib3 a 100th field, pyreqwest a 101st, httpx a head
over 100 KB. The SDK now sets the libraries' knobs where they have them and checks the rest itself; a library's
own refusal past them is translated to the same error (each library's wording is pinned by the cases below that
reach it: 300 fields on pyreqwest and aiohttp, 200 KB on httpcore and httpcore2).
"""

from __future__ import annotations

import pytest

from animalstore_client import APIConnectionError
from animalstore_client._core.body import HEAD_TOO_LARGE
from animalstore_client._core.defaults import MAX_RESPONSE_HEADER_BYTES, MAX_RESPONSE_HEADERS

from .conftest import ALL_VARIANTS, ClientFactory
from .servers import LoopbackServer, respond

# What `respond` sends of its own: Content-Length (of "[]") and Content-Type.
OWN_FIELDS = 2
OWN_BYTES = len("Content-Length") + len("2") + len("Content-Type") + len("application/json")


def _filled(size: int) -> dict[str, str]:
    """One extra field making the head's names and values ``size`` bytes in all."""
    return {"x-fill": "a" * (size - OWN_BYTES - len("x-fill"))}


WITHIN = {
    "the most fields": {f"x-h{index:03d}": "v" for index in range(MAX_RESPONSE_HEADERS - OWN_FIELDS)},
    "the most bytes, in one field": _filled(MAX_RESPONSE_HEADER_BYTES),
    "openai's thirty fields": {f"x-h{index}": "v" * 40 for index in range(30)},
}
PAST = {
    "one field more": {f"x-h{index:03d}": "v" for index in range(MAX_RESPONSE_HEADERS - OWN_FIELDS + 1)},
    "one byte more": _filled(MAX_RESPONSE_HEADER_BYTES + 1),
    "300 fields": {f"x-h{index}": "v" for index in range(300)},
    "200 KB in 25 fields": {f"x-b{index}": "a" * 8000 for index in range(25)},
    "one 70 KB field": {"x-big": "a" * 70_000},
}


@pytest.mark.parametrize("variant", ALL_VARIANTS, indirect=True)
@pytest.mark.parametrize("case", list(WITHIN))
def test_a_head_within_the_limit_is_read_on_every_backend(make_client: ClientFactory, case: str) -> None:
    """Up to the limit, every backend reads the answer."""
    with LoopbackServer([respond(200, [], WITHIN[case])]) as server:
        assert make_client(base_url=server.base_url, max_retries=0).list_pets() == []


@pytest.mark.parametrize("variant", ALL_VARIANTS, indirect=True)
@pytest.mark.parametrize("case", list(PAST))
def test_a_head_past_the_limit_is_one_error_on_every_backend(make_client: ClientFactory, case: str) -> None:
    """Past the limit, on every backend and whoever found it (the library or the SDK): an APIConnectionError
    saying the headers are over the SDK's limit, the answer unread."""
    with LoopbackServer([respond(200, [], PAST[case])]) as server, pytest.raises(APIConnectionError) as info:
        make_client(base_url=server.base_url, max_retries=0).list_pets()
    assert HEAD_TOO_LARGE in str(info.value)


@pytest.mark.parametrize("variant", ALL_VARIANTS, indirect=True)
def test_a_create_past_the_limit_may_have_been_stored(make_client: ClientFactory) -> None:
    """An answer to create_pet whose head is over the limit came after the request: it may have been stored, and
    is not sent again."""
    with (
        LoopbackServer([respond(201, {}, PAST["300 fields"])] * 3) as server,
        pytest.raises(APIConnectionError) as info,
    ):
        make_client(base_url=server.base_url, max_retries=2).create_pet(name="Rex", category_id=3)
    assert info.value.may_have_been_processed is True
    assert len(server.received) == 1
