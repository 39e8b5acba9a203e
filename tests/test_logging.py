"""Logging: what the records say, that they never hold a secret, and the ANIMALSTORE_LOG switch."""

from __future__ import annotations

import logging
import os
import re
import subprocess
import sys
import warnings

import pytest

from animalstore_client import AnimalStoreClient, AsyncAnimalStoreClient

from .conftest import ClientFactory
from .servers import LoopbackServer, respond

PET = {"id": 7, "name": "Rex", "categoryId": 3, "status": "available"}
ERROR_503 = {"code": "unavailable", "message": "try later", "status": 503}


def test_logs_describe_attempts_and_retries_without_secrets(
    make_client: ClientFactory, caplog: pytest.LogCaptureFixture
) -> None:
    """Records name the method, URL, status, elapsed time, retry number and delay; never the key."""
    secret = "sk-log-secret-777"
    caplog.set_level(logging.DEBUG)  # every logger, httpx and httpcore included
    with LoopbackServer([respond(503, ERROR_503), respond(200, [PET])]) as server:
        make_client(api_key=secret, base_url=server.base_url, max_retries=2).list_pets()
    ours = [r.getMessage() for r in caplog.records if r.name == "animalstore_client"]
    assert any(re.search(r"GET http://127\.0\.0\.1:\d+/v1/pets -> 503 .* in [\d.]+ ms \(attempt 1\)", m) for m in ours)
    assert any(re.search(r"Retrying GET .*/v1/pets in 0\.50 s \(retry 1 of 2\) after 503", m) for m in ours)
    assert any("-> 200 OK" in m and "(attempt 2)" in m for m in ours)
    assert secret not in caplog.text
    assert "Bearer" not in caplog.text


def test_library_adds_no_handlers_by_default() -> None:
    """Without ANIMALSTORE_LOG the animalstore_client logger has no handlers."""
    code = (
        "import logging, animalstore_client as a\n"
        "a.AnimalStoreClient('k')\n"
        "print(len(logging.getLogger('animalstore_client').handlers))\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANIMALSTORE_")}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert out.stdout.strip() == "0"


def test_animalstore_log_turns_on_stderr_logging() -> None:
    """ANIMALSTORE_LOG=debug prints request lines to stderr, without the key."""
    code = (
        "import httpx, animalstore_client as a\n"
        "t = httpx.MockTransport(lambda r: httpx.Response(200, json=[]))\n"
        "a.AnimalStoreClient('sk-env-secret', http_client=httpx.Client(transport=t)).list_pets()\n"
    )
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("ANIMALSTORE_")}, "ANIMALSTORE_LOG": "debug"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert "DEBUG animalstore_client: GET https://api.animalstore.example/v1/pets -> 200 OK" in out.stderr
    assert "sk-env-secret" not in out.stderr


@pytest.mark.parametrize("client_class", [AnimalStoreClient, AsyncAnimalStoreClient])
def test_a_bad_animalstore_log_warns_once_and_is_ignored(
    client_class: type[AnimalStoreClient], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A typo in ANIMALSTORE_LOG never stops a client being made: one warning naming the variable, no handler."""
    value = f"verbse-{client_class.__name__}"
    monkeypatch.setenv("ANIMALSTORE_LOG", value)
    with pytest.warns(
        UserWarning, match=f"ANIMALSTORE_LOG must be 'debug' or 'info'.*'{value.lower()}': ignored"
    ) as caught:
        client_class("test-key")
    assert caught[0].filename == __file__  # pointed at the line that made the client
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        client_class("test-key")  # the same value again: no second warning
    assert not [h for h in logging.getLogger("animalstore_client").handlers if type(h).__name__ == "_EnvHandler"]
