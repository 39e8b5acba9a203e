"""Transport security: clear-text keys and proxies, credentials in URLs, and headers that frame the message."""

from __future__ import annotations

import base64
import logging
import pickle
import socket
import warnings

import pytest
import respx

from animalstore_client import (
    AnimalStoreClient,
    AnimalStoreError,
    APIConnectionError,
    ClientValidationError,
    InsecureTransportWarning,
)

from .conftest import API_KEY, ClientFactory
from .servers import Action, LoopbackServer, refused_url, respond

PET = {"id": 7, "name": "Rex", "categoryId": 3, "status": "available"}
ERROR_503 = {"code": "unavailable", "message": "try later", "status": 503}


@pytest.mark.parametrize("base_url", ["http://api.animalstore.example/v1", "http://10.0.0.5:8080/v1"])
def test_plain_http_to_remote_host_warns(base_url: str) -> None:
    """http:// to a non-loopback host emits InsecureTransportWarning at the caller's line."""
    with pytest.warns(InsecureTransportWarning, match="clear text") as record:
        AnimalStoreClient(API_KEY, base_url=base_url).close()
    assert record[0].filename == __file__
    assert issubclass(InsecureTransportWarning, UserWarning)
    client = AnimalStoreClient(API_KEY)
    with pytest.warns(InsecureTransportWarning) as record:
        client.with_options(base_url=base_url)
    assert record[0].filename == __file__
    client.close()


@pytest.mark.parametrize(
    "base_url",
    [
        "https://api.animalstore.example/v1",
        "http://localhost:8080/v1",
        "http://127.0.0.1/v1",
        "http://127.8.9.1/v1",
        "http://[::1]:9/v1",
    ],
)
def test_https_and_loopback_are_silent(base_url: str) -> None:
    """https:// and loopback http:// construct without any warning."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        AnimalStoreClient(API_KEY, base_url=base_url).close()


def test_proxy_environment_variables_are_honoured(make_client: ClientFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """HTTP_PROXY routes requests through the proxy as httpx does, whichever library sends them."""
    with LoopbackServer([respond(200, [PET])]) as proxy:
        monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{proxy.port}")
        monkeypatch.setenv("NO_PROXY", "")
        with pytest.warns(InsecureTransportWarning):
            client = make_client(base_url="http://pets.internal.example/v1")
        assert client.list_pets()[0].id == 7
        assert proxy.received[0].target == "http://pets.internal.example/v1/pets"


PROXY_USER = "pet keeper"
PROXY_PASSWORD = "p@ss:w%rd"
# As the variable must spell them: percent-encoded in the URL.
PROXY_USERINFO = "pet%20keeper:p%40ss%3Aw%25rd"


def _proxy_asking_for(proxy: LoopbackServer, credentials: str) -> Action:
    """A forward proxy's answer: 200 with [] when the request carried these Basic credentials, else 407."""
    expected = "Basic " + base64.b64encode(credentials.encode()).decode()

    def action(conn: socket.socket) -> bool:
        given = proxy.received[-1].headers.get("proxy-authorization")  # the request this action answers
        if given == expected:
            return respond(200, [])(conn)
        return respond(407, {"message": "proxy auth"}, {"Proxy-Authenticate": 'Basic realm="proxy"'})(conn)

    return action


def test_proxy_credentials_from_the_environment_are_sent(
    make_client: ClientFactory, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """HTTP_PROXY=http://user:password@host sends Proxy-Authorization, percent-decoded, on every library; the
    password shows in no repr and no log line."""
    caplog.set_level(logging.DEBUG)
    with LoopbackServer() as proxy:
        proxy.script = [_proxy_asking_for(proxy, f"{PROXY_USER}:{PROXY_PASSWORD}")]
        monkeypatch.setenv("HTTP_PROXY", f"http://{PROXY_USERINFO}@127.0.0.1:{proxy.port}")
        monkeypatch.setenv("NO_PROXY", "")
        with pytest.warns(InsecureTransportWarning):
            client = make_client(base_url="http://pets.internal.example/v1", max_retries=0)
        assert client.list_pets() == []
        assert [request.target for request in proxy.received] == ["http://pets.internal.example/v1/pets"]
        assert "proxy-authorization" in proxy.received[0].headers
    inner = getattr(client, "inner", client)  # the async client behind the test's sync view
    for shown in (repr(client), repr(inner), str(vars(inner)), caplog.text):
        assert PROXY_PASSWORD not in shown
        assert "p%40ss" not in shown


def test_proxy_credentials_show_in_no_error(
    make_client: ClientFactory, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A proxy that refuses the credentials (407), and one nothing listens on: on every library the error and
    the log lines name neither the user nor the password."""
    caplog.set_level(logging.DEBUG)
    monkeypatch.setenv("NO_PROXY", "")
    texts: list[str] = []
    with LoopbackServer() as proxy:
        proxy.script = [_proxy_asking_for(proxy, "someone:else")]
        monkeypatch.setenv("HTTP_PROXY", f"http://{PROXY_USERINFO}@127.0.0.1:{proxy.port}")
        with pytest.warns(InsecureTransportWarning):
            client = make_client(base_url="http://pets.internal.example/v1", max_retries=0)
        with pytest.raises(AnimalStoreError) as refused:
            client.list_pets()
        texts += [str(refused.value), repr(refused.value)]
    closed_port = refused_url().removeprefix("http://").removesuffix("/v1")
    monkeypatch.setenv("HTTP_PROXY", f"http://{PROXY_USERINFO}@{closed_port}")
    with pytest.warns(InsecureTransportWarning):
        client = make_client(base_url="http://pets.internal.example/v1", max_retries=0)
    with pytest.raises(APIConnectionError) as unreachable:
        client.list_pets()
    texts += [str(unreachable.value), repr(unreachable.value), str(unreachable.value.__cause__), caplog.text]
    for text in texts:
        assert PROXY_PASSWORD not in text
        assert "p%40ss" not in text
        assert "keeper" not in text


# --- credentials in URLs ---------------------------------------------------------------------------


@pytest.mark.parametrize("url", ["https://user:secret@api.example/v1", "https://secret@api.example/v1"])
def test_credentials_in_base_url_are_refused_without_showing_them(url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """user:password@ in base_url, ANIMALSTORE_BASE_URL or with_options is refused; the text shows ***."""
    with pytest.raises(ClientValidationError, match=r"must not hold credentials") as info:
        AnimalStoreClient(API_KEY, base_url=url)
    assert "secret" not in str(info.value)
    assert "secret" not in repr(info.value.value)
    assert "https://***@api.example/v1" in str(info.value)
    assert "secret" not in str(pickle.loads(pickle.dumps(info.value)).__dict__)
    monkeypatch.setenv("ANIMALSTORE_BASE_URL", url)
    with pytest.raises(ClientValidationError, match=r"ANIMALSTORE_BASE_URL must not hold credentials") as info:
        AnimalStoreClient(API_KEY)
    assert "secret" not in str(info.value)
    monkeypatch.delenv("ANIMALSTORE_BASE_URL")
    with AnimalStoreClient(API_KEY) as client, pytest.raises(ClientValidationError, match="credentials") as info:
        client.with_options(base_url=url)
    assert "secret" not in str(info.value)


# --- headers that frame the message -------------------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    [
        "Content-Length",
        "transfer-encoding",
        "Host",
        "Connection",
        "Keep-Alive",
        "Upgrade",
        "TE",
        "Trailer",
        "Proxy-Authorization",
        "Proxy-Connection",
    ],
)
def test_framing_and_hop_by_hop_headers_are_refused_everywhere(
    make_client: ClientFactory, router: respx.MockRouter, name: str
) -> None:
    """default_headers, extra_headers and request(headers=) refuse them before anything is sent."""
    route = router.route().respond(200, json=[])
    with pytest.raises(ClientValidationError, match=f"must not set {name}") as info:
        make_client(default_headers={name: "0"})
    assert info.value.argument == "default_headers"
    client = make_client()
    with pytest.raises(ClientValidationError, match=f"extra_headers must not set {name}"):
        client.list_pets(extra_headers={name: "0"})
    with pytest.raises(ClientValidationError, match=f"headers must not set {name}"):
        client.request("GET", "/pets", headers={name: "0"})
    with pytest.raises(ClientValidationError):
        client.with_options(default_headers={name: "0"})
    assert not route.called


@pytest.mark.parametrize("name", ["X(A)", "X A", "X:A", "", "Ünï", "X\r\nY"])
def test_header_names_must_be_tokens(make_client: ClientFactory, router: respx.MockRouter, name: str) -> None:
    """A name that is not an RFC 9110 token is refused at once, not failed at send and retried."""
    route = router.route().respond(200, json=[])
    with pytest.raises(ClientValidationError, match="RFC 9110 tokens"):
        make_client().list_pets(extra_headers={name: "v"})
    assert not route.called


# --- proxies ----------------------------------------------------------------------------------------


def test_plain_http_through_a_remote_proxy_warns(monkeypatch: pytest.MonkeyPatch) -> None:
    """http:// to loopback, routed by HTTP_PROXY through a remote proxy, warns naming the proxy host only."""
    monkeypatch.setenv("HTTP_PROXY", "http://puser:ppass@proxy.corp.example:3128")
    monkeypatch.setenv("NO_PROXY", "")
    with pytest.warns(InsecureTransportWarning, match="through the proxy 'proxy.corp.example'") as record:
        AnimalStoreClient(API_KEY, base_url="http://127.0.0.1:8080/v1").close()
    assert "ppass" not in str(record[0].message)
    assert "puser" not in str(record[0].message)
    assert record[0].filename == __file__


@pytest.mark.parametrize(
    ("proxy", "no_proxy"),
    [("http://127.0.0.1:3128", ""), ("http://proxy.corp.example:3128", "127.0.0.1"), ("", "")],
)
def test_no_warning_when_the_proxy_is_local_bypassed_or_absent(
    monkeypatch: pytest.MonkeyPatch, proxy: str, no_proxy: str
) -> None:
    """A loopback proxy, a NO_PROXY match, or no proxy at all: no warning."""
    monkeypatch.setenv("HTTP_PROXY", proxy)
    monkeypatch.setenv("NO_PROXY", no_proxy)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        AnimalStoreClient(API_KEY, base_url="http://127.0.0.1:8080/v1").close()


def test_https_through_a_proxy_is_silent(monkeypatch: pytest.MonkeyPatch) -> None:
    """HTTPS through a proxy is tunnelled: the key is not exposed, so no warning."""
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.corp.example:3128")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        AnimalStoreClient(API_KEY, base_url="https://api.animalstore.example/v1").close()
