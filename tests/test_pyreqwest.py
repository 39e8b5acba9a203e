"""What the pyreqwest backend relies on in the library, pinned, and what it does that the others do not.

The behaviour suite runs over pyreqwest with every other library (``ALL_VARIANTS``);
these tests pin the library's behaviour the transport is built on: the cause
chain that tells "nothing was sent" apart, the refusal to run after a fork, the
Python it needs, and what it cannot hand over (non-UTF-8 header values, the
reason phrase).
"""

from __future__ import annotations

import socket
import sys
from pathlib import Path
from typing import Any

import pytest

from animalstore_client import (
    AnimalStoreClient,
    AnimalStoreError,
    APIConnectionError,
    APITimeoutError,
    AsyncAnimalStoreClient,
)
from animalstore_client._backends import require

from .conftest import API_KEY, ClientFactory, needs_pyreqwest
from .servers import LoopbackServer, refused_url, respond
from .tls import ca_file, serve_tls, server_context


def _closes_after_reading(conn: socket.socket) -> bool:
    """Read the request, then close without a word: the request was sent and may have been acted on."""
    return False


def _causes(exc: BaseException) -> list[str]:
    details: Any = getattr(exc, "details", {})
    return [cause["message"] for cause in details.get("causes") or []]


def test_python_3_10_is_told_which_python_pyreqwest_needs(monkeypatch: pytest.MonkeyPatch) -> None:
    """backend="pyreqwest" on an older Python raises AnimalStoreError naming Python 3.11 and the other backends."""
    monkeypatch.setattr(sys, "version_info", (3, 10, 14, "final", 0))
    with pytest.raises(AnimalStoreError, match=r'backend="pyreqwest" needs Python 3\.11 or later .* Python 3\.10'):
        require("pyreqwest")
    with pytest.raises(AnimalStoreError, match=r"needs Python 3\.11"):
        AnimalStoreClient(API_KEY, backend="pyreqwest")


@needs_pyreqwest
def test_the_cause_that_means_nothing_was_sent_is_still_worded_so() -> None:
    """pyreqwest's refused connection carries reqwest's connector cause; a connection closed after the
    request was written does not, though pyreqwest calls both ConnectError (the SDK reads the cause)."""
    from pyreqwest.client import SyncClientBuilder

    from animalstore_client._transport_pyreqwest import CONNECT_CAUSE

    client = SyncClientBuilder().build()
    with pytest.raises(Exception) as refused:  # noqa: PT011  # pyreqwest's own class, whatever it is
        client.get(f"{refused_url()}/pets").build().send()
    assert CONNECT_CAUSE in _causes(refused.value)
    with LoopbackServer([_closes_after_reading]) as server:
        with pytest.raises(Exception) as closed:  # noqa: PT011
            client.post(f"{server.base_url}/pets").body_bytes(b"{}").build().send()
        assert type(closed.value).__name__ == "ConnectError"  # what makes the cause necessary
        assert CONNECT_CAUSE not in _causes(closed.value)
    client.close()


@pytest.mark.parametrize("variant", ["sync-pyreqwest", "async-pyreqwest"], indirect=True)
@needs_pyreqwest
def test_a_post_whose_connection_closed_after_sending_is_not_repeated(make_client: ClientFactory) -> None:
    """create_pet against a server that reads it and hangs up: one attempt (it may have been stored); a list
    against the same server is retried."""
    with LoopbackServer([_closes_after_reading]) as server:
        client = make_client(base_url=server.base_url, max_retries=2)
        with pytest.raises(APIConnectionError) as create:
            client.create_pet(name="Rex", category_id=1)
        assert create.value.attempts == 1
        assert [r.method for r in server.received] == ["POST"]
        with pytest.raises(APIConnectionError) as listing:
            client.list_pets()
        assert listing.value.attempts == 3


@pytest.mark.parametrize("variant", ["sync-pyreqwest", "async-pyreqwest"], indirect=True)
@needs_pyreqwest
def test_a_post_left_unanswered_times_out_once(make_client: ClientFactory) -> None:
    """A server that never answers: pyreqwest says ConnectTimeoutError, yet the request was sent, so
    create_pet makes one attempt and raises APITimeoutError."""
    with LoopbackServer() as server:
        server.script = [server.hang()]
        client = make_client(base_url=server.base_url, timeout=0.3, max_retries=2)
        with pytest.raises(APITimeoutError) as caught:
            client.create_pet(name="Rex", category_id=1)
        assert caught.value.attempts == 1
        assert "ReadTimeout" in str(caught.value)


@pytest.mark.parametrize("variant", ["sync-pyreqwest", "async-pyreqwest"], indirect=True)
@needs_pyreqwest
def test_a_refused_connection_is_retried_even_for_a_post(make_client: ClientFactory) -> None:
    """Nothing was sent when the connection is refused: create_pet is retried, as on every library."""
    client = make_client(base_url=refused_url(), max_retries=2)
    with pytest.raises(APIConnectionError) as caught:
        client.create_pet(name="Rex", category_id=1)
    assert caught.value.attempts == 3


@pytest.mark.parametrize("variant", ["sync-pyreqwest", "async-pyreqwest"], indirect=True)
@needs_pyreqwest
def test_a_header_pyreqwest_cannot_read_is_left_out_and_the_call_succeeds(
    make_client: ClientFactory, caplog: pytest.LogCaptureFixture
) -> None:
    """A Latin-1 (not UTF-8) header value: pyreqwest cannot hand it over, so it is left out (logged at DEBUG)
    and the other headers and the body are kept."""

    def latin1(conn: socket.socket) -> bool:
        body = b"[]"
        conn.sendall(
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nX-Place: caf\xe9\r\nX-Other: kept\r\n"
            + f"Content-Length: {len(body)}\r\n\r\n".encode()
            + body
        )
        return True

    caplog.set_level("DEBUG", logger="animalstore_client")
    with LoopbackServer([latin1]) as server:
        client = make_client(base_url=server.base_url)
        raw = client.with_raw_response.list_pets()
        assert raw.parse() == []
        assert raw.headers["x-other"] == "kept"
        assert "x-place" not in raw.headers
    assert any("x-place" in record.getMessage() for record in caplog.records)


@pytest.mark.parametrize("variant", ["sync-pyreqwest", "async-pyreqwest"], indirect=True)
@needs_pyreqwest
def test_the_reason_phrase_is_the_standard_one(make_client: ClientFactory) -> None:
    """pyreqwest does not hand over the server's reason phrase: the response carries the standard one."""
    with LoopbackServer([respond(201, {"id": 1, "name": "Rex", "categoryId": 1})]) as server:
        raw = make_client(base_url=server.base_url).with_raw_response.create_pet(name="Rex", category_id=1)
        assert (raw.status_code, raw.http_response.reason_phrase) == (201, "Created")


@needs_pyreqwest
def test_a_callers_pyreqwest_clients_over_https_are_used_and_left_open() -> None:
    """A caller's SyncClient and Client trusting the run's CA carry the calls over TLS; the SDK leaves them open."""
    import asyncio

    from pyreqwest.client import ClientBuilder, SyncClientBuilder

    from animalstore_client.testing import FakeAnimalStore

    pem = Path(ca_file()).read_bytes()
    store = FakeAnimalStore(api_keys=[API_KEY])
    with serve_tls(store) as url:
        library_client = SyncClientBuilder().add_root_certificate_pem(pem).build()
        with AnimalStoreClient(API_KEY, base_url=url, http_client=library_client) as client:
            assert client.create_pet(name="Rex", category_id=1).name == "Rex"
        assert (
            library_client.get(f"{url}/pets").header("Authorization", f"Bearer {API_KEY}").build().send().status == 200
        )
        library_client.close()

        async def main() -> int:
            async_library_client = ClientBuilder().add_root_certificate_pem(pem).build()
            async with AsyncAnimalStoreClient(API_KEY, base_url=url, http_client=async_library_client) as client:
                pets = await client.list_pets()
            response = (
                await async_library_client.get(f"{url}/pets")
                .header("Authorization", f"Bearer {API_KEY}")
                .build()
                .send()
            )
            await async_library_client.close()
            assert response.status == 200
            return len(pets)

        assert asyncio.run(main()) == 1


@pytest.mark.parametrize("variant", ["sync-pyreqwest", "async-pyreqwest"], indirect=True)
@needs_pyreqwest
def test_a_ca_bundle_of_many_certificates_is_read_whole(make_client: ClientFactory, tmp_path: Any) -> None:
    """verify= a bundle holding certifi's CAs and then the run's CA: pyreqwest trusts the last one too."""
    import certifi

    from animalstore_client.testing import FakeAnimalStore

    bundle = tmp_path / "bundle.pem"
    bundle.write_bytes(Path(certifi.where()).read_bytes() + b"\n" + Path(ca_file()).read_bytes())
    store = FakeAnimalStore(api_keys=[API_KEY])
    with serve_tls(store, server_context()) as url:
        assert make_client(base_url=url, verify=str(bundle)).list_pets() == []
