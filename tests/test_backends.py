"""Choosing the HTTP library: backend=, a caller's own client of each library, and a missing library."""

from __future__ import annotations

import ast
import asyncio
import functools
import importlib
import importlib.metadata
import importlib.util
import os
import re
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any, Literal

import aiohttp
import httpx
import pytest

from animalstore_client import (
    AnimalStoreClient,
    AsyncAnimalStoreClient,
    ClientValidationError,
)
from animalstore_client._clients.backends import REQUIREMENTS
from animalstore_client._core.libraries import LIBRARIES, by_name, for_client

from .conftest import API_KEY, needs_pyreqwest, on_library
from .servers import LoopbackServer, respond

PET = {"id": 7, "name": "Rex", "categoryId": 3, "status": "available"}


def test_httpx_is_the_default_and_backend_is_visible() -> None:
    """Without backend= both clients use httpx; client.backend says which library is used."""
    with AnimalStoreClient(API_KEY) as sync, AnimalStoreClient(API_KEY, backend="httpx2") as other:
        assert (sync.backend, other.backend) == ("httpx", "httpx2")
    assert AsyncAnimalStoreClient(API_KEY).backend == "httpx"
    assert AsyncAnimalStoreClient(API_KEY, backend="aiohttp").backend == "aiohttp"


def _backends_of(client: Literal["sync", "async"]) -> str:
    """A client's backends as its error lists them, from the declarations: ``'httpx', 'httpx2' or 'pyreqwest'``."""
    names = [repr(library.name) for library in for_client(client)]
    return ", ".join(names[:-1]) + f" or {names[-1]}"


def _callers_clients_of(client: Literal["sync", "async"]) -> str:
    """The library clients a client takes as ``http_client``, as its error lists them, from the declarations:
    ``an httpx.Client or an httpx2.Client`` (a library whose clients are refused left out)."""
    kinds = [
        f"{'an' if module[0] in 'aehio' else 'a'} {module}.{cls}"
        for library in for_client(client)
        if not library.callers_clients_refused
        for module, cls in [library.client_classes[client]]
    ]
    return ", ".join(kinds[:-1]) + f" or {kinds[-1]}"


NO_LIBRARY = "no-such-library"
"""A backend name no library can be declared under (a library's name is its import name)."""


def _not_its_backends(cls: type[AnimalStoreClient | AsyncAnimalStoreClient]) -> list[Any]:
    """``cls`` made on each library only the other client has (aiohttp for the sync client), and on a name that is
    no library: each with the message listing the client's own backends, from the declarations."""
    client: Literal["sync", "async"] = "sync" if cls is AnimalStoreClient else "async"
    names = [*(library.name for library in LIBRARIES if client not in library.clients), NO_LIBRARY]
    return [
        pytest.param(
            functools.partial(cls, API_KEY, backend=name),  # type: ignore[arg-type]  # the point
            re.escape(f"backend must be {_backends_of(client)}, got {name!r}"),
            id=f"{client}-{name}",
        )
        for name in names
    ]


@pytest.mark.parametrize(
    ("make", "message"),
    [
        *_not_its_backends(AnimalStoreClient),
        *_not_its_backends(AsyncAnimalStoreClient),
        (
            lambda: AnimalStoreClient(API_KEY, http_client=httpx.Client(), backend="httpx2"),
            r"backend='httpx2' contradicts http_client, which is an httpx client",
        ),
    ],
)
def test_bad_or_contradicting_backends_are_refused(make: object, message: str) -> None:
    """A backend the client does not have, or one that contradicts http_client's library, is a ClientValidationError
    (the first naming the client's own backends)."""
    assert callable(make)
    with pytest.raises(ClientValidationError, match=message) as info:
        make()
    assert info.value.argument == "backend"


@needs_pyreqwest
def test_pyreqwest_serves_both_clients_and_its_client_is_refused_as_http_client() -> None:
    """backend="pyreqwest" is accepted by both clients; a pyreqwest client as http_client is told apart and
    refused (it may follow redirects unseen), whatever backend= says beside it."""
    from pyreqwest.client import SyncClientBuilder

    assert AnimalStoreClient(API_KEY, backend="pyreqwest").backend == "pyreqwest"
    assert AsyncAnimalStoreClient(API_KEY, backend="pyreqwest").backend == "pyreqwest"
    library_client = SyncClientBuilder().build()
    for backend in (None, *(library.name for library in for_client("sync"))):
        with pytest.raises(ClientValidationError, match="http_client cannot be a pyreqwest client"):
            AnimalStoreClient(API_KEY, http_client=library_client, backend=backend)  # type: ignore[arg-type]
    with pytest.raises(ClientValidationError) as info:
        AnimalStoreClient(API_KEY, http_client=object())  # type: ignore[arg-type]  # the point
    assert str(info.value) == f"http_client must be {_callers_clients_of('sync')}, got object"
    library_client.close()


def test_a_callers_aiohttp_session_is_used_and_left_open() -> None:
    """An aiohttp.ClientSession passed as http_client carries the calls; closing the client leaves it open."""

    async def main(base_url: str) -> None:
        async with aiohttp.ClientSession() as session:
            client = AsyncAnimalStoreClient(API_KEY, base_url=base_url, http_client=session)
            assert client.backend == "aiohttp"
            assert (await client.list_pets())[0].id == 7
            await client.aclose()
            assert not session.closed

    with LoopbackServer([respond(200, [PET])]) as server:
        asyncio.run(main(server.base_url))


def test_the_user_agent_names_the_library_of_a_callers_client() -> None:
    """A caller's httpx client or aiohttp session: the User-Agent names that library."""

    def library_in(agent: str) -> str:
        return agent.split(" ")[1]

    with LoopbackServer([respond(200, [])]) as server:
        with httpx.Client() as httpx_client:
            AnimalStoreClient(API_KEY, base_url=server.base_url, http_client=httpx_client).list_pets()

        async def main() -> None:
            async with aiohttp.ClientSession() as session:
                await AsyncAnimalStoreClient(API_KEY, base_url=server.base_url, http_client=session).list_pets()
            async with httpx.AsyncClient() as httpx_client:
                await AsyncAnimalStoreClient(API_KEY, base_url=server.base_url, http_client=httpx_client).list_pets()

        asyncio.run(main())
        agents = [library_in(request.headers["user-agent"]) for request in server.received]
    assert agents == [
        f"httpx/{httpx.__version__}",
        f"aiohttp/{aiohttp.__version__}",
        f"httpx/{httpx.__version__}",
    ]


OPTIONAL = [library.name for library in LIBRARIES if library.requirement is not None]
"""Every library an extra installs, from the declarations."""


@pytest.mark.parametrize("library", [on_library(name, name) for name in OPTIONAL])
def test_a_missing_library_says_how_to_install_it(library: str) -> None:
    """Without the library installed, asking for it raises AnimalStoreError with the exact pip command."""
    client = "AnimalStoreClient" if "sync" in by_name(library).clients else "AsyncAnimalStoreClient"
    code = (
        "import sys\n"
        f"sys.modules[{library!r}] = None  # as if not installed\n"
        "import animalstore_client as a\n"
        "try:\n"
        f"    a.{client}('k', backend={library!r})\n"
        "except a.AnimalStoreError as exc:\n"
        "    print(type(exc).__name__, exc)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert out.stdout.strip() == (
        f'AnimalStoreError backend="{library}" needs the {library} library, which is not installed: '
        f'pip install "{REQUIREMENTS[str(by_name(library).distribution)]}" (what the [{library}] extra installs)'
    )


def test_the_install_advice_matches_the_extras() -> None:
    """The requirement the error names is the one the package's extra declares."""
    declared = [r for r in importlib.metadata.requires("animalstore-client") or [] if "extra ==" in r]
    extras = {r.split(";")[0].strip().split(">")[0]: r.split(";")[0].strip().replace(" ", "") for r in declared}
    assert extras == REQUIREMENTS


def test_importing_the_package_loads_no_optional_library() -> None:
    """import animalstore_client leaves every library an extra installs (aiohttp, urllib3...) unimported."""
    code = f"import sys, animalstore_client\nprint([m for m in {OPTIONAL!r} if m in sys.modules])"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert out.stdout.strip() == "[]"


METADATA_MODULES = frozenset({"importlib.metadata", "zipfile", "csv", "email.parser", "email.message"})
"""What reading installed metadata loads (importlib.metadata and the parts it reads RECORD and METADATA with)."""


def test_importing_the_package_reads_no_installed_metadata() -> None:
    """import animalstore_client, after httpx, attrs and cattrs, loads nothing to read installed metadata: the
    library check reads it when a client first chooses a library. The modules it does load are listed."""
    code = (
        "import sys, httpx, attrs, cattrs\n"
        "before = set(sys.modules)\n"
        "import animalstore_client\n"
        "print(sorted(m for m in set(sys.modules) - before if not m.startswith('animalstore_client')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    loaded = set(ast.literal_eval(out.stdout.strip()))
    assert not loaded & METADATA_MODULES, sorted(loaded)


_MAKE_AIOHTTP_CLIENT = (
    "import asyncio, animalstore_client as a\n"
    "try:\n"
    "    asyncio.run(a.AsyncAnimalStoreClient('k', backend='aiohttp').aclose())\n"
    "    print('accepted')\n"
    "except Exception as exc:\n"
    "    print(type(exc).__name__, exc)\n"
)


def _made_on(*path: Path) -> str:
    """What making a client on aiohttp prints, with ``path`` ahead of the environment's site-packages."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(str(p) for p in path)}
    out = subprocess.run(
        [sys.executable, "-c", _MAKE_AIOHTTP_CLIENT], capture_output=True, text=True, check=True, timeout=60, env=env
    )
    return out.stdout.strip() + out.stderr


def test_a_library_installed_in_part_is_an_sdk_error(tmp_path: Path) -> None:
    """An aiohttp package missing what the SDK's transport imports: an AnimalStoreError naming what is missing,
    not the AttributeError itself."""
    site = tmp_path / "site"
    (site / "aiohttp").mkdir(parents=True)
    (site / "aiohttp" / "__init__.py").write_bytes(b"# all that is left\n")
    made = _made_on(site)
    assert made.startswith("AnimalStoreError animalstore_client._transports."), made
    assert "incomplete: module 'aiohttp' has no attribute 'ClientSession'" in made, made


# --- the urllib3 backend, removed in 2.0 ---------------------------------------------------------------


@pytest.mark.parametrize("cls", [AnimalStoreClient, AsyncAnimalStoreClient])
def test_backend_urllib3_is_refused_naming_the_backends_and_how_to_move(
    cls: type[AnimalStoreClient | AsyncAnimalStoreClient],
) -> None:
    """backend="urllib3" (removed in 2.0) is a ClientValidationError naming the client's backends, the release that
    removed it and the 1.3 deprecation's advice (the default backend), not an unknown name."""
    client: Literal["sync", "async"] = "sync" if cls is AnimalStoreClient else "async"
    with pytest.raises(ClientValidationError) as info:
        cls(API_KEY, backend="urllib3")  # type: ignore[arg-type]  # the point
    message = str(info.value)
    assert message.startswith(f"backend must be {_backends_of(client)}, got 'urllib3', which was removed in "), message
    assert "animalstore-client 2.0" in message
    assert 'backend="httpx"' in message
    assert (info.value.argument, info.value.value) == ("backend", "urllib3")


def test_a_urllib3_pool_manager_is_refused_naming_the_backends_and_how_to_move() -> None:
    """A urllib3.PoolManager as http_client (accepted until 2.0) is refused with the same advice, before any request."""
    urllib3 = pytest.importorskip("urllib3", reason="urllib3 is in tests/requirements.txt (a benchmark floor)")
    with LoopbackServer([respond(200, [])]) as server, urllib3.PoolManager() as manager:
        with pytest.raises(ClientValidationError) as info:
            AnimalStoreClient(API_KEY, base_url=server.base_url, http_client=manager)
        assert server.received == []
    message = str(info.value)
    assert message.startswith("http_client is a urllib3.poolmanager.PoolManager: the urllib3 backend was removed"), (
        message
    )
    assert 'backend="httpx"' in message
    assert _backends_of("sync") in message
    assert info.value.argument == "http_client"


def test_no_backend_warns() -> None:
    """Every backend, by name or by a caller's client, of either client, makes a client without a warning."""
    installed = [library.name for library in LIBRARIES if importlib.util.find_spec(library.name) is not None]
    sync_backends = [name for name in installed if "sync" in by_name(name).clients]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for backend in sync_backends:
            AnimalStoreClient(API_KEY, backend=backend).close()  # type: ignore[arg-type]
        with httpx.Client() as http:
            AnimalStoreClient(API_KEY, http_client=http).close()

    async def main() -> None:
        for backend in installed:
            if "async" in by_name(backend).clients:
                await AsyncAnimalStoreClient(API_KEY, backend=backend).aclose()  # type: ignore[arg-type]

    with warnings.catch_warnings(record=True) as more:
        warnings.simplefilter("always")
        asyncio.run(main())
    assert [*caught, *more] == []
