"""Transport security: warnings for clear-text keys, and proxies as the environment sets them."""

from __future__ import annotations

import warnings

import pytest

from animalstore_client import (
    AnimalStoreClient,
    InsecureTransportWarning,
)

from .conftest import API_KEY
from .servers import LoopbackServer, respond

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


def test_proxy_environment_variables_are_honoured(monkeypatch: pytest.MonkeyPatch) -> None:
    """HTTP_PROXY routes requests through the proxy, as httpx does."""
    with LoopbackServer([respond(200, [PET])]) as proxy:
        monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{proxy.port}")
        monkeypatch.setenv("NO_PROXY", "")
        with pytest.warns(InsecureTransportWarning):
            client = AnimalStoreClient(API_KEY, base_url="http://pets.internal.example/v1")
        with client:
            assert client.list_pets()[0].id == 7
        assert proxy.received[0].target == "http://pets.internal.example/v1/pets"
