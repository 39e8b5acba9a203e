"""Choosing the HTTP library: backend=, a caller's own client of each library, and a missing library."""

from __future__ import annotations

import ast
import asyncio
import base64
import copy
import functools
import hashlib
import importlib
import importlib.metadata
import importlib.util
import os
import pickle
import re
import shutil
import subprocess
import sys
import warnings
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal, cast

import aiohttp
import httpx
import pytest
import urllib3

from animalstore_client import (
    AnimalStoreClient,
    APIConnectionError,
    APITimeoutError,
    AsyncAnimalStoreClient,
    ClientValidationError,
)
from animalstore_client._clients.backends import REQUIREMENTS, _stand_in
from animalstore_client._core.deprecation import URLLIB3_DEPRECATION
from animalstore_client._core.libraries import LIBRARIES, by_name, for_client
from animalstore_client.testing import FakeAnimalStore

from .conftest import API_KEY, needs_pyreqwest, on_library, urllib3_deprecated
from .servers import LoopbackServer, refused_url, respond

PET = {"id": 7, "name": "Rex", "categoryId": 3, "status": "available"}


@urllib3_deprecated
def test_httpx_is_the_default_and_backend_is_visible() -> None:
    """Without backend= both clients use httpx; client.backend says which library is used."""
    with AnimalStoreClient(API_KEY) as sync, AnimalStoreClient(API_KEY, backend="urllib3") as fast:
        assert (sync.backend, fast.backend) == ("httpx", "urllib3")
    assert AsyncAnimalStoreClient(API_KEY).backend == "httpx"
    assert AsyncAnimalStoreClient(API_KEY, backend="aiohttp").backend == "aiohttp"


def _backends_of(client: Literal["sync", "async"]) -> str:
    """A client's backends as its error lists them, from the declarations: ``'httpx', 'httpx2' or 'pyreqwest'``."""
    names = [repr(library.name) for library in for_client(client)]
    return ", ".join(names[:-1]) + f" or {names[-1]}"


def _callers_clients_of(client: Literal["sync", "async"]) -> str:
    """The library clients a client takes as ``http_client``, as its error lists them, from the declarations:
    ``an httpx.Client, an httpx2.Client or a urllib3.PoolManager`` (a library whose clients are refused left out)."""
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
            lambda: AnimalStoreClient(API_KEY, http_client=urllib3.PoolManager(), backend="httpx"),
            r"backend='httpx' contradicts http_client, which is a urllib3 client",
        ),
        (
            lambda: AnimalStoreClient(API_KEY, http_client=httpx.Client(), backend="urllib3"),
            r"backend='urllib3' contradicts http_client, which is an httpx client",
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


@urllib3_deprecated
def test_a_callers_pool_manager_is_used_and_left_open() -> None:
    """An urllib3.PoolManager passed as http_client carries the calls; closing the client leaves it usable."""
    manager = urllib3.PoolManager()
    with LoopbackServer([respond(200, [PET])]) as server:
        client = AnimalStoreClient(API_KEY, base_url=server.base_url, http_client=manager)
        assert client.backend == "urllib3"
        assert client.list_pets()[0].id == 7
        client.close()
        assert manager.request("GET", f"{server.base_url}/pets").status == 200
        assert len(server.received) == 2


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


@urllib3_deprecated
def test_the_user_agent_names_the_library_of_a_callers_client() -> None:
    """A caller's urllib3 PoolManager, httpx client or aiohttp session: the User-Agent names that library."""

    def library_in(agent: str) -> str:
        return agent.split(" ")[1]

    with LoopbackServer([respond(200, [])]) as server:
        with urllib3.PoolManager() as manager:  # a caller's client: closing the SDK's leaves it to the caller
            AnimalStoreClient(API_KEY, base_url=server.base_url, http_client=manager).list_pets()
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
        f"urllib3/{importlib.metadata.version('urllib3')}",
        f"httpx/{httpx.__version__}",
        f"aiohttp/{aiohttp.__version__}",
        f"httpx/{httpx.__version__}",
    ]


@urllib3_deprecated
def test_urllib3_failures_name_no_class_of_the_sdk() -> None:
    """urllib3 writes its pool's or connection's repr into its messages; the SDK's errors give host:port instead
    of the SDK's own classes (_SDKHTTPPool...), for a read timeout and a refused connection alike."""
    with LoopbackServer() as server:
        server.script = [server.hang()]
        client = AnimalStoreClient(API_KEY, base_url=server.base_url, backend="urllib3", timeout=0.2, max_retries=0)
        with client, pytest.raises(APITimeoutError) as timed_out:
            client.list_pets()
        read_origin = f"127.0.0.1:{server.port}"
    refused = refused_url()
    client = AnimalStoreClient(API_KEY, base_url=refused, backend="urllib3", max_retries=0)
    with client, pytest.raises(APIConnectionError) as not_connected:
        client.list_pets()
    refused_origin = refused.removeprefix("http://").removesuffix("/v1")
    for caught, origin in ((timed_out, read_origin), (not_connected, refused_origin)):
        texts = [str(caught.value), repr(caught.value), str(caught.value.__cause__)]
        assert all("_SDK" not in text for text in texts), texts
        assert f"{origin}: " in str(caught.value.__cause__)


def test_urllib3s_connect_timeout_is_shown_without_a_repr() -> None:
    """urllib3's ConnectTimeoutError holds the connection object and a message (shown as a tuple with the
    object's repr); the SDK's message is host:port and the message."""
    from urllib3.exceptions import ConnectTimeoutError

    from animalstore_client._transports.urllib3 import _SDKHTTPConnection, _translated

    failure = ConnectTimeoutError(
        _SDKHTTPConnection("10.0.0.1", 8080), "Connection to 10.0.0.1 timed out. (connect timeout=0.1)"
    )
    translated = _translated(failure, httpx.Request("GET", "http://10.0.0.1:8080/v1/pets"))
    assert type(translated) is httpx.ConnectTimeout
    assert str(translated) == "10.0.0.1:8080: Connection to 10.0.0.1 timed out. (connect timeout=0.1)"


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


@pytest.mark.parametrize("library", OPTIONAL)
def test_each_installed_library_is_the_distribution_declared(library: str) -> None:
    """Each optional library installed for the tests is the distribution its declaration names: nothing refused."""
    declared = by_name(library)
    try:
        module = importlib.import_module(library)
    except ImportError:
        pytest.skip(f"{library} is not installed here (it needs Python {declared.python[0]}.{declared.python[1]}+)")
    assert _stand_in(library, module.__file__, declared.distribution) is None


def _record_line(path: str, content: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(content).digest()).rstrip(b"=").decode()
    return f"{path},sha256={digest},{len(content)}\n"


def _dist_info(site: Path, name: str, version: str, record: dict[str, bytes]) -> None:
    """A distribution's metadata in ``site`` as pip writes it: METADATA, RECORD (``record``'s files), top_level.txt."""
    info = site / f"{name}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name.replace('_', '-')}\nVersion: {version}\n")
    (info / "RECORD").write_text("".join(_record_line(path, content) for path, content in record.items()))
    # Where Python 3.10 looks for the packages a distribution provides (3.11 reads RECORD too).
    (info / "top_level.txt").write_text("urllib3\n" if record else "")


_MAKE_URLLIB3_CLIENT = (
    "import animalstore_client as a\n"
    "try:\n"
    "    a.AnimalStoreClient('k', backend='urllib3').close()\n"
    "    print('accepted')\n"
    "except Exception as exc:\n"
    "    print(type(exc).__name__, exc)\n"
)


def _made_on(*path: Path) -> str:
    """What making a client on urllib3 prints, with ``path`` ahead of the environment's site-packages."""
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(str(p) for p in path),
        "PYTHONWARNINGS": "ignore::DeprecationWarning",
    }
    out = subprocess.run(
        [sys.executable, "-c", _MAKE_URLLIB3_CLIENT], capture_output=True, text=True, check=True, timeout=60, env=env
    )
    return out.stdout.strip() + out.stderr


REFUSED = (
    'ClientValidationError backend="urllib3" needs the urllib3 distribution, but the urllib3 package here holds '
    "files of urllib3-future, another library under the same name that the SDK is not tested with: "
    'choose backend="httpx"'
)


@pytest.mark.parametrize("replaced", ["__init__.py", "connectionpool.py"])
def test_a_stand_in_under_the_same_import_name_is_refused_naming_it(tmp_path: Path, replaced: str) -> None:
    """urllib3-future writing over urllib3's files (as installing niquests does) is refused, naming it, before a send:
    found from its RECORD, whichever file it replaced (a look-alike that kept urllib3's __init__.py too)."""
    site = tmp_path / "site"
    package = site / "urllib3"
    package.mkdir(parents=True)
    ours = b"# urllib3's own file\n"
    theirs = b"__version__ = '2.99.900'  # urllib3-future's file, written over urllib3's\n"
    (package / "__init__.py").write_bytes(theirs if replaced == "__init__.py" else ours)
    (package / "connectionpool.py").write_bytes(theirs if replaced == "connectionpool.py" else ours)
    _dist_info(site, "urllib3", "2.8.0", {"urllib3/__init__.py": ours, "urllib3/connectionpool.py": ours})
    _dist_info(site, "urllib3_future", "2.99.900", {f"urllib3/{replaced}": theirs})
    assert _made_on(site).startswith(REFUSED)


@pytest.mark.skipif(sys.version_info < (3, 12), reason="importlib.metadata reads installed-files.txt from 3.12 on")
def test_a_stand_in_installed_the_legacy_way_is_refused_naming_it(tmp_path: Path) -> None:
    """An impostor whose files are listed the pre-wheel way (an ``.egg-info`` folder's installed-files.txt, its paths
    relative to that folder) is found as one listed in a RECORD is."""
    site = tmp_path / "site"
    (site / "urllib3").mkdir(parents=True)
    ours = b"# urllib3's own file\n"
    (site / "urllib3" / "__init__.py").write_bytes(ours)
    (site / "urllib3" / "connectionpool.py").write_bytes(b"# urllib3-future's file\n")
    _dist_info(site, "urllib3", "2.8.0", {"urllib3/__init__.py": ours})
    info = site / "urllib3_future-2.99.900-py3.11.egg-info"
    info.mkdir()
    (info / "PKG-INFO").write_text("Metadata-Version: 2.1\nName: urllib3-future\nVersion: 2.99.900\n")
    (info / "installed-files.txt").write_text("../urllib3/connectionpool.py\nPKG-INFO\n")
    assert _made_on(site).startswith(REFUSED)


def test_a_library_installed_in_part_is_an_sdk_error(tmp_path: Path) -> None:
    """A urllib3 package missing the modules the SDK's transport imports: an AnimalStoreError naming the missing
    module, not the ImportError itself."""
    site = tmp_path / "site"
    (site / "urllib3").mkdir(parents=True)
    (site / "urllib3" / "__init__.py").write_bytes(b"# all that is left\n")
    made = _made_on(site)
    assert made.startswith("AnimalStoreError animalstore_client._transports."), made
    assert "incomplete: No module named 'urllib3." in made, made


def _real_urllib3() -> Path:
    return Path(importlib.import_module("urllib3").__file__ or "").parent


def test_a_vendored_copy_ahead_on_sys_path_is_accepted(tmp_path: Path) -> None:
    """A byte-identical copy of urllib3 in a folder ahead on sys.path (vendored), beside an impostor's record in
    another site directory: no other distribution's files are in the folder imported, so it is accepted."""
    vendor = tmp_path / "vendor"
    shutil.copytree(_real_urllib3(), vendor / "urllib3", ignore=shutil.ignore_patterns("__pycache__"))
    elsewhere = tmp_path / "site"
    _dist_info(elsewhere, "urllib3_future", "2.99.900", {"urllib3/__init__.py": b"theirs\n"})
    assert _made_on(vendor, elsewhere) == "accepted"


def test_an_editable_install_is_accepted(tmp_path: Path) -> None:
    """urllib3 installed editable: its dist-info records no package file (the source stays in the checkout)."""
    checkout = tmp_path / "checkout" / "src"
    shutil.copytree(_real_urllib3(), checkout / "urllib3", ignore=shutil.ignore_patterns("__pycache__"))
    site = tmp_path / "site"
    _dist_info(site, "urllib3", "2.8.0", {})
    assert _made_on(checkout, site) == "accepted"


def test_a_zipapp_of_the_real_library_is_accepted(tmp_path: Path) -> None:
    """urllib3 imported from a zip archive (a zipapp's): accepted, and nothing but an SDK error could escape."""
    archive = tmp_path / "app.zip"
    source = _real_urllib3()
    with zipfile.ZipFile(archive, "w") as zipped:
        for path in source.rglob("*.py"):
            zipped.write(path, Path("urllib3") / path.relative_to(source))
    assert _made_on(archive) == "accepted"


# --- the urllib3 backend's deprecation ---------------------------------------------------------------


def _warnings_of(make: Callable[[], Any], *, close: bool = True) -> list[warnings.WarningMessage]:
    """Every warning ``make`` raises (none filtered out); the clients it returns closed unless ``close`` is false."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        made = make()
    for client in (made if isinstance(made, tuple) else (made,)) if close else ():
        cast("Any", client).close()
    return caught


def _warned_once_at(caught: list[warnings.WarningMessage], make: Callable[[], object]) -> None:
    """``caught`` is the urllib3 deprecation, once, at the line of the lambda ``make`` (the caller's own line)."""
    assert [(w.category, str(w.message)) for w in caught] == [(DeprecationWarning, URLLIB3_DEPRECATION)]
    assert (caught[0].filename, caught[0].lineno) == (__file__, make.__code__.co_firstlineno)


def test_backend_urllib3_warns_at_the_callers_line() -> None:
    """backend="urllib3" warns a DeprecationWarning naming the default and 2.0, at the caller's line."""
    make = lambda: AnimalStoreClient(API_KEY, backend="urllib3")  # noqa: E731  # its line is the one warned at
    _warned_once_at(_warnings_of(make), make)
    assert 'backend="httpx"' in URLLIB3_DEPRECATION
    assert "default backend" in URLLIB3_DEPRECATION
    assert "removed in animalstore-client 2.0" in URLLIB3_DEPRECATION


def test_a_callers_pool_manager_warns_at_the_callers_line() -> None:
    """A urllib3.PoolManager as http_client warns the same, at the caller's line; the manager stays the caller's."""
    with urllib3.PoolManager() as manager:
        make = lambda: AnimalStoreClient(API_KEY, http_client=manager)  # noqa: E731  # its line is the one warned at
        _warned_once_at(_warnings_of(make), make)


def test_the_kits_urllib3_client_warns_at_the_callers_line() -> None:
    """store.client(backend="urllib3") warns at the test's line, not inside the kit that made the client."""
    store = FakeAnimalStore(api_keys=[API_KEY])
    make = lambda: store.client(backend="urllib3")  # noqa: E731  # its line is the one warned at
    _warned_once_at(_warnings_of(make), make)


@urllib3_deprecated
def test_copies_of_a_urllib3_client_do_not_warn_again() -> None:
    """One warning per construction written: with_options, copy, deepcopy and pickle make no second one, and a
    construction that fails makes none."""
    client = AnimalStoreClient(API_KEY, backend="urllib3")
    assert _warnings_of(lambda: client.with_options(max_retries=1, timeout=3), close=False) == []
    assert _warnings_of(lambda: copy.copy(client), close=False) == []  # shares the pool: not closed
    assert _warnings_of(lambda: (copy.deepcopy(client), pickle.loads(pickle.dumps(client)))) == []
    client.close()

    def refused() -> None:
        with pytest.raises(ClientValidationError):
            AnimalStoreClient(API_KEY, backend="urllib3", max_retries=-1)

    assert _warnings_of(refused, close=False) == []


def test_no_other_backend_warns() -> None:
    """Every other backend, by name or by a caller's client, of either client, makes a client without a warning."""

    def undeprecated(client: Literal["sync", "async"]) -> list[str]:
        """The client's libraries that are not deprecated and are installed here, from the declarations."""
        return [
            library.name
            for library in for_client(client)
            if library.deprecation is None and importlib.util.find_spec(library.name) is not None
        ]

    sync_backends = undeprecated("sync")
    assert _warnings_of(lambda: tuple(AnimalStoreClient(API_KEY, backend=b) for b in sync_backends)) == []  # type: ignore[arg-type]
    with httpx.Client() as http:
        assert _warnings_of(lambda: AnimalStoreClient(API_KEY, http_client=http)) == []

    async def main() -> list[warnings.WarningMessage]:
        backends = undeprecated("async")
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            for backend in backends:
                await AsyncAnimalStoreClient(API_KEY, backend=backend).aclose()  # type: ignore[arg-type]
        return caught

    assert asyncio.run(main()) == []


def test_a_script_shows_the_deprecation_with_pythons_default_filters() -> None:
    """Run as a script with no -W option, backend="urllib3" prints the warning at the script's line (Python shows
    a DeprecationWarning by default only when __main__'s own code triggers it)."""
    code = "import animalstore_client as a\n\na.AnimalStoreClient('k', backend='urllib3').close()\n"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    # Python 3.10 prints the source line after it (linecache finds -c's text); 3.11 and later do not.
    assert out.stderr.startswith(f"<string>:3: DeprecationWarning: {URLLIB3_DEPRECATION}\n"), out.stderr
    assert out.stderr.count("DeprecationWarning") == 1, out.stderr


def test_a_library_declared_without_an_ssl_context_refuses_one_by_its_declaration(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Whether ``verify=`` may be an `ssl.SSLContext` is the declaration's ``takes_ssl_context``, not a library's
    name: urllib3 declared without one refuses a context, naming itself and the sync client's other backends, and
    takes a CA path as before."""
    import ssl

    import attrs

    from animalstore_client._clients import backends

    without = attrs.evolve(by_name("urllib3"), takes_ssl_context=False)
    monkeypatch.setattr(backends, "by_name", lambda name: without if name == "urllib3" else by_name(name))
    with pytest.raises(ClientValidationError, match=r'backend="urllib3" cannot use verify=<ssl.SSLContext>') as info:
        backends.new_transport_sync("urllib3", None, verify=ssl.create_default_context())
    assert info.value.rule == "True, False or a CA bundle path with urllib3"
    assert '"httpx"' in str(info.value)
    backends.new_transport_sync("urllib3", None, verify=True).close()
