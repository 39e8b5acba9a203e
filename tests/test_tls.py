"""HTTPS on every client and library: trust settings, certificate failures, and the promises that hold over TLS.

The servers are on 127.0.0.1 with certificates from a CA made for the run
(``tests/tls.py``); the clients trust it through ``verify=``, through
``SSL_CERT_FILE``, or through their own http client's settings.
"""

from __future__ import annotations

import asyncio
import gc
import os
import shutil
import socket
import ssl
import subprocess
import time
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

import httpx
import pytest

from animalstore_client import (
    AnimalStoreClient,
    APIConnectionError,
    APIResponseValidationError,
    APITimeoutError,
    AsyncAnimalStoreClient,
    ClientValidationError,
    InsecureTransportWarning,
    PetStatus,
)
from animalstore_client._core.libraries import by_name, for_client
from animalstore_client.testing import FakeAnimalStore

from .conftest import ALL_VARIANTS, API_KEY, PYREQWEST_VARIANTS, ClientFactory, library_of
from .servers import LoopbackServer, respond
from .test_hostile import MALFORMED, _only_sdk_errors
from .test_limits import _bomb, _endless_continue, _trickle
from .timing import OVERSHOOT, Stopwatch
from .tls import ca_file, client_context, serve_tls, server_context, stranger


@pytest.fixture
def store() -> FakeAnimalStore:
    """An empty fake store with the test key."""
    return FakeAnimalStore(api_keys=[API_KEY])


@pytest.fixture
def tls_url(store: FakeAnimalStore) -> Iterator[str]:
    """The store served over HTTPS with a certificate from the run's CA."""
    with serve_tls(store) as url:
        yield url


def test_the_three_operations_over_https(make_client: ClientFactory, tls_url: str) -> None:
    """create, list and get work over TLS with verify= the run's CA bundle, on every client and library."""
    client = make_client(base_url=tls_url, verify=ca_file())
    created = client.create_pet(name="Rex", category_id=1, status=PetStatus.AVAILABLE)
    assert [pet.id for pet in client.list_pets(status="available")] == [created.id]
    with pytest.warns(DeprecationWarning, match="get_pet"):
        assert client.get_pet(created.id) == created  # type: ignore[deprecated]  # pyright: ignore[reportDeprecated]


@pytest.mark.parametrize("variant", ALL_VARIANTS, indirect=True)
def test_an_ssl_context_is_used_as_given(make_client: ClientFactory, variant: str, tls_url: str) -> None:
    """verify= an ssl.SSLContext trusting the CA works on every library but those declared without one
    (``takes_ssl_context``: pyreqwest), which refuse it, saying why and naming the other backends of that client
    only (those this Python runs, as the declarations say)."""
    library = library_of(variant)
    if not by_name(library).takes_ssl_context:
        refused = r"cannot use verify=<ssl.SSLContext>.*verify='/path/to/ca.pem'"
        with pytest.raises(ClientValidationError, match=refused) as info:
            make_client(base_url=tls_url, verify=client_context())
        side: Literal["sync", "async"] = "sync" if variant.startswith("sync") else "async"
        others = [f'"{declared.name}"' for declared in for_client(side) if declared.name != library]
        listed = others[0] if len(others) == 1 else ", ".join(others[:-1]) + f" or {others[-1]}"
        assert f"or use another backend (backend={listed})" in str(info.value)
        return
    client = make_client(base_url=tls_url, verify=client_context())
    assert client.list_pets() == []


def test_ssl_cert_file_is_honoured_alike(
    make_client: ClientFactory, tls_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With verify left at True, SSL_CERT_FILE names the trusted CAs on every library."""
    monkeypatch.setenv("SSL_CERT_FILE", ca_file())
    assert make_client(base_url=tls_url).list_pets() == []


@pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl command to name a hashed CA directory")
def test_ssl_cert_dir_is_honoured_alike(
    make_client: ClientFactory, tls_url: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """SSL_CERT_DIR (a directory of CA files named by subject hash) is trusted on every library, as is verify=<dir>."""
    subject_hash = subprocess.run(
        ["openssl", "x509", "-hash", "-noout", "-in", ca_file()], capture_output=True, text=True, check=True
    ).stdout.strip()
    shutil.copy(ca_file(), tmp_path / f"{subject_hash}.0")
    assert make_client(base_url=tls_url, verify=str(tmp_path)).list_pets() == []
    monkeypatch.setenv("SSL_CERT_DIR", str(tmp_path))
    assert make_client(base_url=tls_url).list_pets() == []


def test_retries_over_https(make_client: ClientFactory, store: FakeAnimalStore, tls_url: str) -> None:
    """A 503 is retried over TLS and the second attempt's answer returned."""
    store.fail_next(503)
    client = make_client(base_url=tls_url, verify=ca_file())
    response = client.with_raw_response.list_pets()
    assert response.attempts == 2


@pytest.mark.parametrize(
    ("authority", "hosts"),
    [(stranger, ("127.0.0.1", "localhost")), (None, ("other.example",))],
    ids=["untrusted-ca", "other-host-name"],
)
def test_a_refused_certificate_is_a_connection_error_not_retried(
    make_client: ClientFactory, authority: Any, hosts: tuple[str, ...]
) -> None:
    """An unknown CA or another host's certificate is one APIConnectionError saying so; nothing is sent."""
    context = server_context(authority() if authority else None, hosts)
    with LoopbackServer([respond(200, [])], tls=context) as server:
        client = make_client(base_url=server.base_url, verify=ca_file(), max_retries=2)
        with pytest.raises(APIConnectionError, match="TLS certificate verification failed") as caught:
            client.list_pets()
        assert caught.value.attempts == 1
        assert not isinstance(caught.value, APITimeoutError)
        assert server.received == []


def test_the_default_trust_refuses_a_private_ca(make_client: ClientFactory, tls_url: str) -> None:
    """verify=True (certifi) does not trust the run's CA: a certificate failure, not silence."""
    with pytest.raises(APIConnectionError, match="certificate"):
        make_client(base_url=tls_url).list_pets()


def test_verify_false_reaches_a_loopback_server_silently(make_client: ClientFactory, tls_url: str) -> None:
    """verify=False works against 127.0.0.1 without a warning from the SDK."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", InsecureTransportWarning)
        client = make_client(base_url=tls_url, verify=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error", Warning)
        assert client.list_pets() == []


@pytest.mark.parametrize("cls", [AnimalStoreClient, AsyncAnimalStoreClient])
def test_verify_false_to_a_remote_host_warns(cls: type[AnimalStoreClient]) -> None:
    """verify=False never applies to a non-loopback host silently: constructor and with_options warn."""
    with pytest.warns(InsecureTransportWarning, match="verify=False"):
        client = cls(API_KEY, verify=False)
    local = cls(API_KEY, base_url="https://127.0.0.1:1/v1", verify=False)
    with pytest.warns(InsecureTransportWarning, match="verify=False"):
        local.with_options(base_url="https://api.example.com/v1")
    for made in (client, local):
        if isinstance(made, AsyncAnimalStoreClient):
            asyncio.run(made.aclose())
        else:
            made.close()


@pytest.mark.parametrize("value", [1, "/no/such/ca.pem", b"/etc", None, 1.5, ["a"]])
def test_bad_verify_is_refused(make_client: ClientFactory, value: object) -> None:
    """verify must be a bool, an existing path or an SSLContext: anything else names the argument."""
    with pytest.raises(ClientValidationError) as caught:
        make_client(verify=value)  # type: ignore[arg-type]
    assert caught.value.argument == "verify"


def test_a_file_that_is_no_ca_bundle_is_refused_when_the_client_is_made(
    make_client: ClientFactory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """verify= or SSL_CERT_FILE naming a file with no certificate: ClientValidationError naming it, not an SSLError."""
    junk = tmp_path / "junk.pem"
    junk.write_text("not a certificate\n")
    with pytest.raises(ClientValidationError, match="could not be loaded") as caught:
        make_client(verify=str(junk))
    assert caught.value.argument == "verify"
    client = make_client()
    with pytest.raises(ClientValidationError) as caught:
        client.with_options(verify=str(junk))
    assert caught.value.argument == "verify"
    monkeypatch.setenv("SSL_CERT_FILE", str(junk))
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    with pytest.raises(ClientValidationError, match="SSL_CERT_FILE") as caught:
        make_client()
    assert caught.value.argument == "SSL_CERT_FILE"


def test_verify_with_a_callers_client_is_refused() -> None:
    """verify= and http_client= contradict each other: the caller's client keeps its own trust."""
    with httpx.Client() as http, pytest.raises(ClientValidationError, match="http_client") as caught:
        AnimalStoreClient(API_KEY, http_client=http, verify=ca_file())
    assert caught.value.argument == "verify"
    with httpx.Client() as http:
        client = AnimalStoreClient(API_KEY, http_client=http)
        with pytest.raises(ClientValidationError, match="http_client"):
            client.with_options(verify=False)


def test_with_options_verify_gets_its_own_pool(make_client: ClientFactory, tls_url: str) -> None:
    """A derived client with other trust settings works, and closing it leaves the original open."""
    client = make_client(base_url=tls_url)
    trusting = client.with_options(verify=ca_file())
    assert trusting.list_pets() == []
    trusting.close()
    assert not client.is_closed
    with pytest.raises(APIConnectionError, match="certificate"):
        client.list_pets()


# --- a caller's own client over TLS -----------------------------------------------------------


def test_a_callers_httpx_client_over_https(tls_url: str) -> None:
    """An httpx.Client trusting the CA carries the SDK's calls; closing the SDK client leaves it open."""
    with httpx.Client(verify=client_context()) as http:
        client = AnimalStoreClient(API_KEY, base_url=tls_url, http_client=http)
        assert client.create_pet(name="a", category_id=1).name == "a"
        client.close()
        assert not http.is_closed
        assert http.get(f"{tls_url}/pets", headers={"Authorization": f"Bearer {API_KEY}"}).status_code == 200


def test_a_callers_aiohttp_session_over_https(tls_url: str) -> None:
    """An aiohttp.ClientSession trusting the CA carries the SDK's calls; closing the SDK client leaves it open."""
    import aiohttp

    async def main() -> tuple[str, bool]:
        connector = aiohttp.TCPConnector(ssl=client_context())
        async with aiohttp.ClientSession(connector=connector) as session:
            client = AsyncAnimalStoreClient(API_KEY, base_url=tls_url, http_client=session)
            name = (await client.create_pet(name="a", category_id=1)).name
            await client.aclose()
            return name, session.closed

    assert asyncio.run(main()) == ("a", False)


def test_a_callers_async_httpx_client_over_https(tls_url: str) -> None:
    """An httpx.AsyncClient trusting the CA carries the SDK's calls; closing the SDK client leaves it open."""

    async def main() -> tuple[str, bool]:
        async with httpx.AsyncClient(verify=client_context()) as http:
            client = AsyncAnimalStoreClient(API_KEY, base_url=tls_url, http_client=http)
            name = (await client.create_pet(name="a", category_id=1)).name
            await client.aclose()
            return name, http.is_closed

    assert asyncio.run(main()) == ("a", False)


@pytest.mark.parametrize("variant", PYREQWEST_VARIANTS, indirect=True)
def test_a_ca_bundle_of_many_certificates_is_read_whole_on_pyreqwest(
    make_client: ClientFactory, tmp_path: Path, tls_url: str
) -> None:
    """verify= a bundle of certifi's CAs followed by the run's CA: pyreqwest (rustls, given the file's PEM) trusts
    the last certificate too, so every certificate of a many-certificate file is loaded."""
    import certifi

    certifi_pem = Path(certifi.where()).read_bytes()
    assert certifi_pem.count(b"-----BEGIN CERTIFICATE-----") > 100  # a real bundle ahead of the run's CA
    bundle = tmp_path / "bundle.pem"
    bundle.write_bytes(certifi_pem + b"\n" + Path(ca_file()).read_bytes())
    assert make_client(base_url=tls_url, verify=str(bundle)).list_pets() == []
    with pytest.raises(APIConnectionError, match="certificate"):  # certifi's part alone does not trust the run's CA
        make_client(base_url=tls_url, verify=certifi.where()).list_pets()


# --- the deadline and the cap over TLS ----------------------------------------------------------


@pytest.mark.parametrize("action", [_trickle, _endless_continue], ids=["trickle", "endless-100-continue"])
def test_the_deadline_holds_over_https(make_client: ClientFactory, action: Any) -> None:
    """A trickling body or endless 100 Continue over TLS ends at total_timeout, as an APITimeoutError."""
    with LoopbackServer([action()], tls=server_context()) as server:
        client = make_client(base_url=server.base_url, verify=ca_file(), total_timeout=1)
        with Stopwatch() as watch, pytest.raises(APITimeoutError, match="total_timeout=1s passed"):
            client.list_pets()
        watch.assert_within(1 + OVERSHOOT)


@pytest.mark.parametrize("answer", MALFORMED, ids=lambda answer: repr(answer[:24]))
def test_malformed_answers_over_https_raise_only_sdk_errors(make_client: ClientFactory, answer: bytes) -> None:
    """Whatever a TLS server sends back, every library's client returns or raises an AnimalStoreError."""

    def send(conn: socket.socket) -> bool:
        conn.sendall(answer)
        return False

    with LoopbackServer([send], tls=server_context()) as server:
        client = make_client(base_url=server.base_url, verify=ca_file(), max_retries=0, timeout=2.0)
        for operation in (lambda: client.list_pets(limit=5), lambda: client.create_pet(name="Rex", category_id=1)):
            _only_sdk_errors(operation)
        client.close()
    gc.collect()  # while this test's warning filters apply


def test_the_cap_holds_over_https(make_client: ClientFactory) -> None:
    """A decompression bomb over TLS is cut at max_response_bytes."""
    bomb = _bomb(64 * 1024 * 1024)
    headers = {"Content-Encoding": "gzip, gzip"}
    with LoopbackServer([respond(200, bomb, headers)], tls=server_context()) as server:
        client = make_client(base_url=server.base_url, verify=ca_file(), max_response_bytes=1024 * 1024)
        with pytest.raises(APIResponseValidationError, match="max_response_bytes"):
            client.list_pets()


def test_verify_is_not_in_the_repr(tls_url: str) -> None:
    """A client's repr is unchanged by trust settings (paths can be private)."""
    with AnimalStoreClient(API_KEY, base_url=tls_url, verify=ca_file()) as client:
        assert ca_file() not in repr(client)
        assert os.path.basename(ca_file()) not in repr(client)


# --- failures after the request left ---------------------------------------------------------


# The SDK tells a library's failure from the caller's code by the frame that raised it: this one reads as
# anyio's TLS stream, which lets a raw ssl.SSLError through httpcore's reads.
_LIBRARY_FRAME: dict[str, Any] = {"__name__": "anyio.streams.tls"}
exec("def raise_it(exc):\n    raise exc\n", _LIBRARY_FRAME)


class _RaisingTransport(httpx.BaseTransport, httpx.AsyncBaseTransport):
    """Raises the raw ssl.SSLError a broken TLS stream gives, as a library might let it through."""

    def __init__(self) -> None:
        self.calls = 0

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        self.calls += 1
        _LIBRARY_FRAME["raise_it"](
            ssl.SSLError(1, "[SSL: DECRYPTION_FAILED_OR_BAD_RECORD_MAC] decryption failed or bad record mac")
        )
        raise AssertionError("unreachable")

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        return self.handle_request(request)


def _tls_broken_mid_body(conn: socket.socket) -> bool:
    """Send a 201's head and half its body over TLS, then bytes that are no TLS record at all."""
    conn.sendall(b'HTTP/1.1 201 Created\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"id": ')
    time.sleep(0.05)
    os.write(conn.fileno(), b"\x17\x03\x03\x00\x20" + b"\x00" * 32)  # an application-data record that fails its MAC
    time.sleep(0.2)
    return False


def test_a_tls_failure_mid_body_never_repeats_a_post(make_client: ClientFactory) -> None:
    """TLS breaking while a 201 arrives: an APIConnectionError, and the server saw the POST once, on every library."""
    with LoopbackServer([_tls_broken_mid_body], tls=server_context()) as server:
        client = make_client(base_url=server.base_url, verify=ca_file(), max_retries=2)
        with pytest.raises(APIConnectionError):
            client.create_pet(name="Rex", category_id=1)
        client.close()
    gc.collect()  # while this test's warning filters apply
    assert [request.method for request in server.received] == ["POST"]


def _create_then_list(client: Any) -> tuple[BaseException | None, BaseException | None]:
    """Run create_pet then list_pets on a sync or async client; return what each raised."""

    async def both() -> tuple[BaseException | None, BaseException | None]:
        outcomes: list[BaseException | None] = []
        for call in (lambda: client.create_pet(name="a", category_id=1), client.list_pets):
            try:
                result = call()
                if asyncio.iscoroutine(result):
                    await result
                outcomes.append(None)
            except BaseException as exc:  # what escaped is what the test looks at
                outcomes.append(exc)
        return outcomes[0], outcomes[1]

    return asyncio.run(both())


@pytest.mark.parametrize("cls", [AnimalStoreClient, AsyncAnimalStoreClient])
def test_a_raw_ssl_error_from_the_library_is_an_sdk_exception(cls: type[Any]) -> None:
    """A library's own ssl.SSLError becomes APIConnectionError; a POST is not retried after it, a GET is."""
    transport = _RaisingTransport()
    http: Any = (
        httpx.Client(transport=transport) if cls is AnimalStoreClient else httpx.AsyncClient(transport=transport)
    )
    created, listed = _create_then_list(cls(API_KEY, http_client=http, max_retries=2))
    assert isinstance(created, APIConnectionError)
    assert "SSLError" in str(created)
    assert isinstance(created.__cause__, httpx.ReadError)
    assert isinstance(created.__cause__.__cause__, ssl.SSLError)
    assert isinstance(listed, APIConnectionError)
    assert transport.calls == 1 + 3


def test_the_proxy_is_chosen_per_request_url(make_client: ClientFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """A with_options copy to a host NO_PROXY exempts goes direct, though the first URL went through the proxy."""
    own = [{"id": 1, "name": "direct", "categoryId": 1}]
    proxied = [{"id": 9, "name": "via-proxy", "categoryId": 1}]
    with LoopbackServer([respond(200, own)]) as target, LoopbackServer([respond(200, proxied)]) as proxy:
        monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{proxy.port}")
        monkeypatch.setenv("NO_PROXY", "127.0.0.1")
        client = make_client(base_url=f"http://localhost:{target.port}/v1")
        assert [pet.name for pet in client.list_pets()] == ["via-proxy"]
        direct = client.with_options(base_url=f"http://127.0.0.1:{target.port}/v1")
        assert [pet.name for pet in direct.list_pets()] == ["direct"]
    assert [request.target for request in proxy.received] == [f"http://localhost:{target.port}/v1/pets"]
    assert [request.target for request in target.received] == ["/v1/pets"]


def test_clients_trusting_the_same_bundle_share_one_context(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The bundle is loaded once per process (clients are cheap to make); a changed file or variable gets its own."""
    first = AnimalStoreClient(API_KEY)
    assert AnimalStoreClient(API_KEY)._ssl_context is first._ssl_context  # pyright: ignore[reportPrivateUsage]
    bundle = tmp_path / "ca.pem"
    shutil.copy(ca_file(), bundle)
    monkeypatch.setenv("SSL_CERT_FILE", str(bundle))
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    ours = AnimalStoreClient(API_KEY)._ssl_context  # pyright: ignore[reportPrivateUsage]
    assert ours is not first._ssl_context  # pyright: ignore[reportPrivateUsage]
    assert AnimalStoreClient(API_KEY, verify=str(bundle))._ssl_context is ours  # pyright: ignore[reportPrivateUsage]
    bundle.write_bytes(bundle.read_bytes() + stranger().cert_pem.bytes())
    assert AnimalStoreClient(API_KEY)._ssl_context is not ours  # pyright: ignore[reportPrivateUsage]
