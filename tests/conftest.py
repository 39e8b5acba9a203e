"""Shared fixtures: a clean environment and one client factory for both variants.

Tests that take ``make_client`` run twice, once with `AnimalStoreClient` and
once with `AsyncAnimalStoreClient` driven on a private event loop, so each
behaviour is written once and proven for both clients.
"""

from __future__ import annotations

import asyncio
import gc
import importlib
import inspect
import math
import os
import ssl
import sys
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol, TypeVar, cast

import httpx

# Loaded with the configuration, before pytest turns warnings into errors: as hypothesis loads it runs trio's plugin,
# which registers a random generator in a way hypothesis warns about. schemathesis' plugin loaded it so until
# pyproject's addopts left that out; a process whose tests never import hypothesis (`-n 0` on tests/test_codegen.py)
# then loaded it at the terminal summary, and failed.
import hypothesis  # noqa: F401
import pytest
import respx

from animalstore_client import AnimalStoreClient, AsyncAnimalStoreClient, Environment, NotGiven, RetryBudget
from animalstore_client._clients.client_async import AsyncAnimalStoreClientWithRawResponse
from animalstore_client._clients.shells import ASYNC_IO, SYNC_IO, no_jitter
from animalstore_client._core.libraries import LIBRARIES, Library, by_name

API_KEY = "test-key-0123456789"
PRODUCTION = "https://api.animalstore.example/v1"
STAGING = "https://staging.api.animalstore.example/v1"


def pytest_addoption(parser: pytest.Parser) -> None:
    """``--everyday``: every test function once (CONTRIBUTING.md), where the full suite runs every parametrization."""
    parser.addoption(
        "--everyday",
        action="store_true",
        help="run each test function once: its first parametrization on the default client/library pair",
    )


def pytest_configure(config: pytest.Config) -> None:
    """``--everyday`` runs a tenth of each repeated input (`scaled`), unless ANIMALSTORE_TEST_SHARE says otherwise;
    the process that reports every test keeps their durations (`_Durations`).

    Set in the environment, before any test module is imported (a fuzzer's examples are counted at import), so the
    pytest-xdist workers (which configure themselves with the same options) and the processes tests start share it.
    """
    if config.getoption("everyday"):
        os.environ.setdefault(SHARE_VARIABLE, EVERYDAY_SHARE)
    cache = getattr(config, "cache", None)  # None under -p no:cacheprovider
    if cache is not None and not hasattr(config, "workerinput"):
        config.pluginmanager.register(_Durations(cache), "animalstore-durations")


FULL_WORKERS = 6
"""pytest-xdist workers for the full suite on two cores: its tests wait on sockets and timers much of their time (six
measured 20 to 27 s quicker than four on a fresh clone; eight no quicker)."""
EVERYDAY_WORKERS = 4
"""Workers for ``--everyday``, whose scaled-down tests wait less: on an idle two-core machine four finished in 147 s
and 274 CPU-seconds where six took 172 s and 325 (each worker's start and collection costs 4.5 CPU-seconds, and six
busy processes on two cores cost more CPU for the same tests)."""


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int | None:
    """``-n auto`` (pyproject's addopts): `EVERYDAY_WORKERS` with ``--everyday``, else `FULL_WORKERS`; an explicit
    ``-n`` or PYTEST_XDIST_AUTO_NUM_WORKERS wins."""
    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        return None  # pytest-xdist's own hook reads it
    return EVERYDAY_WORKERS if config.getoption("everyday") else FULL_WORKERS


DEFAULT_PAIRS = tuple(LIBRARIES[0].clients)
"""The default library's pairs (`_pair` names them by their client alone): what the everyday tier runs a pair-wise
function on."""


def everyday(items: list[pytest.Item]) -> tuple[list[pytest.Item], list[pytest.Item]]:
    """``items`` split into the everyday tier's (one per test function) and the rest.

    Of a function's parametrizations, the first on a default pair is kept (or the first at all, for a function
    not run over pairs): every function runs, with the smallest inputs its parameters list first.
    """
    kept: dict[str, pytest.Item] = {}
    for item in items:
        function = item.nodeid.split("[", 1)[0]
        callspec = getattr(item, "callspec", None)
        variant = callspec.params.get("variant") if callspec is not None else None
        current = kept.get(function)
        if current is None:
            kept[function] = item
            continue
        current_spec = getattr(current, "callspec", None)
        current_variant = current_spec.params.get("variant") if current_spec is not None else None
        if variant in DEFAULT_PAIRS and current_variant not in DEFAULT_PAIRS:
            kept[function] = item
    chosen = set(map(id, kept.values()))
    return [item for item in items if id(item) in chosen], [item for item in items if id(item) not in chosen]


COLLECTED = pytest.StashKey["tuple[pytest.Item, ...]"]()
"""Every test this session collected, before ``--everyday``, ``-k`` or ``-m`` left any out: the input of
`tests/test_static_checks.py`'s check of the everyday tier, which then needs no collection of its own."""


DURATIONS = "animalstore/durations"
"""pytest's cache key (``.pytest_cache``) for the seconds each test took (setup, call and teardown) when it last ran."""


@pytest.hookimpl(tryfirst=True)  # before pytest's own -k/-m deselection, so COLLECTED holds everything
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Run the Prism contract tests last, after the unit and end-to-end tests; on pytest-xdist's workers, first,
    then the rest longest first.

    The workers (pyproject's ``-n``) are handed tests in this order, so there the longest ones start first and no
    worker is left running one alone at the end (a 60-second test handed out last ends the run 60 s after the
    rest): the Prism group (`ONE_WORKER`), then the tests by the time each took when it last ran here
    (`DURATIONS`, kept by `_Durations`), or where none is known (a fresh clone, ``-p no:cacheprovider``)
    the stress tier first. With ``--everyday``, each test function runs once (`everyday`).
    """
    config.stash[COLLECTED] = tuple(items)
    if config.getoption("everyday"):
        items[:], deselected = everyday(items)
        config.hook.pytest_deselected(items=deselected)
    if hasattr(config, "workerinput"):
        cache = getattr(config, "cache", None)
        took: dict[str, float] = cache.get(DURATIONS, {}) if cache is not None else {}
        # A group that one worker runs (ONE_WORKER) is handed out as one: it takes its place by its whole time.
        group_took = dict.fromkeys(ONE_WORKER.values(), 0.0)
        for item in items:
            if (group := _group(item.nodeid)) is not None:
                group_took[group] += took.get(item.nodeid, 0.0)

        def longest_first(item: pytest.Item) -> tuple[bool, float, bool]:
            group = _group(item.nodeid)
            seconds = took.get(item.nodeid, 0.0) if group is None else group_took[group]
            return item.get_closest_marker("contract") is None, -seconds, item.get_closest_marker("slow") is None

        items.sort(key=longest_first)
    else:
        items.sort(key=lambda item: item.get_closest_marker("contract") is not None)


class _Durations:
    """Each test's setup, call and teardown seconds, added up in the process that reports them all (pytest-xdist's
    controller, or the only one), and kept in pytest's cache at the end (`DURATIONS`) over those of the tests this
    run left out (the everyday tier, ``-k``), for the next run's order (`pytest_collection_modifyitems`)."""

    def __init__(self, cache: pytest.Cache) -> None:
        self.cache = cache
        self.took: dict[str, float] = {}

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self.took[report.nodeid] = self.took.get(report.nodeid, 0.0) + report.duration

    def pytest_sessionfinish(self) -> None:
        if self.took:
            known: dict[str, float] = self.cache.get(DURATIONS, {})
            self.cache.set(DURATIONS, {**known, **{test: round(took, 2) for test, took in self.took.items()}})


def pytest_collection_finish(session: pytest.Session) -> None:
    """Leave everything that exists once the tests are collected (modules, plugins, the items) out of every later
    garbage collection: tests that collect to see a leaked socket warn then scan only what the tests made since.

    A full collection over the collected suite took 0.13 to 0.3 s, and the suite runs about a hundred on purpose
    (tests/test_tls.py, test_stress.py...) besides the interpreter's own; cycles made by the tests are found as before.

    Hypothesis makes its own random generator at its first test, held by an object made at its import, and checks
    with ``gc.get_referrers()`` that something holds it; from Python 3.14 that call does not look into frozen
    objects, and hypothesis warned (an error here) on every test of it. One trivial run of a hypothesis test
    before the freeze makes and registers the generator while its holder can still be seen.
    """
    if "hypothesis" in sys.modules:
        _run_one_hypothesis_example()
    gc.freeze()


def _run_one_hypothesis_example() -> None:
    """One example of a hypothesis test that checks nothing: hypothesis's random generator is made and registered."""
    from hypothesis import given, settings, strategies

    @settings(database=None, max_examples=1, deadline=None)
    @given(strategies.none())
    def nothing(value: None) -> None:
        del value

    nothing()


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config: pytest.Config) -> None:
    """Leave everything out of the collections the interpreter makes as it exits: the tests are over, and nothing's
    finalizer is awaited. The worker that ran the release guard's tests took 6.2 s from here to its exit, in the
    garbage collector over griffe's objects (gdb), and the run waited for it; frozen, 0.8 s."""
    gc.freeze()


ONE_WORKER = {"tests/test_contract.py": "prism", "tests/test_api_snapshot.py": "release guard"}
"""The modules whose tests all go to one pytest-xdist worker (`pytest_xdist_make_scheduler`), and why, by name."""


def _group(nodeid: str) -> str | None:
    """The name of the `ONE_WORKER` group a test belongs to, if any."""
    return ONE_WORKER.get(nodeid.split("::", 1)[0])


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """pytest-xdist hands out the tests one at a time, except those of the modules in `ONE_WORKER`, which each go
    to one worker.

    Each Prism fixture starts a Node.js server (seconds of CPU), and the first run installs Prism under .tools/,
    which two workers must not do at once (npm fails). The release guard's module-scoped fixtures build the
    package's API with griffe (1.4 CPU-seconds each): once on one worker, not on each of six. xdist's own
    ``xdist_group`` marker is not honoured under pytest 9 (xdist renames the items through an attribute pytest 9
    no longer reads), hence this scheduler.
    """
    # Imported by name: xdist ships no type information.
    scheduling: Any = importlib.import_module("xdist.scheduler").LoadScopeScheduling

    def split_scope(self: Any, nodeid: str) -> str:
        return _group(nodeid) or nodeid

    return type("GroupsOnOneWorker", (scheduling,), {"_split_scope": split_scope})(config, log)


SHARE_VARIABLE = "ANIMALSTORE_TEST_SHARE"
EVERYDAY_SHARE = "0.1"
"""The share of each repeated input the everyday tier runs (``--everyday`` sets SHARE_VARIABLE to it when unset)."""


def scaled(count: int, least: int = 1) -> int:
    """How many of what a test repeats (a fuzzer's examples, rows, tasks, runs) it uses: ``count``, or the share
    of it that ANIMALSTORE_TEST_SHARE names, rounded up, and never fewer than ``least``, the fewest that still
    test the promise. noxfile.py's sessions on the other Pythons run a quarter; ``--everyday`` a tenth; the
    README's command (the full suite) runs them all.

    The fuzzers are derandomized: every run draws the same sequence, so a share re-runs its first examples, on which
    a Python's own differences (its parser's bytes, its sockets) show as well as on the rest.
    """
    given = os.environ.get(SHARE_VARIABLE, "1")
    try:
        share = float(given)
    except ValueError:
        share = math.nan
    if not 0 < share <= 1:
        raise ValueError(f"{SHARE_VARIABLE} must be a share in (0, 1], got {given!r}")
    return max(least, math.ceil(count * share))


T = TypeVar("T")


def sample(items: Sequence[T], least: int = 1) -> list[T]:
    """`scaled` many of ``items``, spread evenly over them from the first (the same ones every run): what a test
    runs of a list of inputs each as dear as a process (the howto blocks, the codecs, the ways to declare the SDK)."""
    count = min(len(items), scaled(len(items), least))
    return [items[index * len(items) // count] for index in range(count)] if count else []


def mypy_cache(purpose: str) -> list[str]:
    """mypy's options for a cache of its own under the checkout's ``.mypy_cache/tests/`` (git ignores it), one per
    ``purpose``: a test type-checking a snippet then rechecks only the snippet, not the SDK and its libraries (14
    of its 15 CPU-seconds), from the second run on; mypy keys what it keeps by each file's hash, and the purposes
    keep runs with different options apart."""
    return ["--cache-dir", str(Path(__file__).resolve().parent.parent / ".mypy_cache" / "tests" / purpose)]


SUITES_OWN_PLUGINS = ("schemathesis", "hypothesispytest", "xdist", "xdist.looponfail", "respx")
"""The pytest plugins of this suite's own tools, which a user's project need not have: schemathesis'
(tests/test_fidelity.py's), hypothesis', pytest-xdist's and respx's."""
WITHOUT_SUITES_OWN_PLUGINS = [option for plugin in SUITES_OWN_PLUGINS for option in ("-p", f"no:{plugin}")]
"""pytest's options that leave `SUITES_OWN_PLUGINS` out (PYTEST_ADDOPTS for a script that runs pytest itself)."""
USERS_PYTEST = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *WITHOUT_SUITES_OWN_PLUGINS]
"""pytest as a user's project runs it, in a fresh interpreter: without `SUITES_OWN_PLUGINS`, whose loading took
2.0 of the 3.2 CPU-seconds such a run of one test spent (schemathesis' and hypothesis' import hypothesis)."""


@pytest.fixture
def router() -> Iterator[respx.MockRouter]:
    """Intercepts every request; an unrouted request fails the test."""
    with respx.mock(assert_all_called=False, assert_all_mocked=True) as mock:
        yield mock


@pytest.fixture
def anyio_backend() -> str:
    """Async tests run on asyncio, the loop the SDK supports."""
    return "asyncio"


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """No test sees the developer's own ANIMALSTORE_* variables."""
    for name in ("ANIMALSTORE_API_KEY", "ANIMALSTORE_BASE_URL", "ANIMALSTORE_ENVIRONMENT", "ANIMALSTORE_LOG"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture(autouse=True)
def sleeps(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """Backoff sleeps are recorded instead of slept, and jitter is zero, so retries are instant and exact."""
    recorded: list[float] = []

    def sleep(seconds: float) -> None:
        recorded.append(seconds)

    async def async_sleep(seconds: float) -> None:
        recorded.append(seconds)

    monkeypatch.setattr(SYNC_IO, "sleep", sleep)
    monkeypatch.setattr(ASYNC_IO, "sleep", async_sleep)
    monkeypatch.setattr(SYNC_IO, "jitter", no_jitter)
    monkeypatch.setattr(ASYNC_IO, "jitter", no_jitter)
    return recorded


class SyncView:
    """Calls an async client's coroutine methods to completion on one loop."""

    def __init__(self, client: Any, loop: asyncio.AbstractEventLoop) -> None:
        self._client = client
        self._loop = loop

    def _wrap(self, value: Any) -> Any:
        if isinstance(value, (AsyncAnimalStoreClient, AsyncAnimalStoreClientWithRawResponse)):
            return SyncView(value, self._loop)
        return value

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self._client, name)
        if not callable(attribute):
            return self._wrap(attribute)

        def call(*args: Any, **kwargs: Any) -> Any:
            result = attribute(*args, **kwargs)
            if inspect.isawaitable(result):
                result = self._loop.run_until_complete(result)
            return self._wrap(result)

        return call

    def close(self) -> None:
        self._loop.run_until_complete(self._client.aclose())

    def idle(self, seconds: float) -> None:
        """Let the loop run ``seconds`` with no call, as an application's would between calls (closings finish)."""
        self._loop.run_until_complete(asyncio.sleep(seconds))

    @property
    def inner(self) -> Any:
        return self._client


class ClientFactory(Protocol):
    """Builds a client of the current variant, typed as `AnimalStoreClient`.

    The async variant is the real `AsyncAnimalStoreClient` behind a `SyncView`,
    so the two share one typed surface: a test written against this type is
    checked by mypy and pyright, and proven for both clients.
    """

    def __call__(
        self,
        api_key: str | None = ...,
        *,
        environment: Environment | str | None = ...,
        base_url: str | None = ...,
        timeout: float | httpx.Timeout | NotGiven | None = ...,
        max_retries: int = ...,
        default_headers: Mapping[str, str] | None = ...,
        http_client: httpx.Client | httpx.AsyncClient | None = ...,
        total_timeout: float | None = ...,
        max_response_bytes: int | None = ...,
        backend: str | None = ...,
        verify: bool | str | ssl.SSLContext = ...,
        middleware: Sequence[Any] | None = ...,
        retry_budget: RetryBudget | NotGiven | None = ...,
        tracer_provider: Any = ...,
        meter_provider: Any = ...,
    ) -> AnimalStoreClient: ...


def _importable(module: str) -> bool:
    try:
        importlib.import_module(module)
    except ImportError:
        return False
    return True


def _needs(library: str, installed: bool) -> pytest.MarkDecorator:
    """A mark skipping a test where ``library`` is not installed, saying why."""
    return pytest.mark.skipif(
        not installed, reason=f"{library} is not installed (pip install -r tests/requirements.txt)"
    )


NEEDS = {library.name: _needs(library.name, _importable(library.name)) for library in LIBRARIES if library.extra}
"""A mark per optional library skipping a test where it is not installed, saying why."""
RUN_ONCE = frozenset(library.name for library in LIBRARIES if library.runs_once)
"""Libraries whose client/library pairs carry a mark of their name, which the sessions on the other Pythons leave
out (noxfile.py), to keep CI within 15 minutes (their declarations' ``runs_once``): the pairs of httpx2 and
pyreqwest, new in 1.2.0, run from the README's command on 3.11 and 3.14, and pyreqwest's at its floor
(``minimum``, on 3.11). Their own test modules
(tests/test_pyreqwest.py: its runtime at interpreter exit and across a fork) still run on every Python."""


GET_PET_NOTICE = pytest.mark.filterwarnings("ignore:The animal store announces that get_pet:DeprecationWarning")
"""Marks a test that sends ``request("GET", "/pets/{id}")`` to the fake store on purpose: the store's Deprecation
and Sunset headers warn of get_pet's removal (tests/test_service_deprecation.py holds that warning)."""


def on_library(library: str, value: object) -> Any:
    """``value`` as a parameter of a test that needs ``library``: skipped without it, marked if it runs once."""
    marks = [NEEDS[library]] if library in NEEDS else []
    if library in RUN_ONCE:
        marks.append(getattr(pytest.mark, library))
    return pytest.param(value, marks=marks) if marks else value


def _pair(library: Library, client: str) -> str:
    """A client/library pair's name: ``"sync"``/``"async"`` for the default library, ``"sync-x"`` for others."""
    return client if library is LIBRARIES[0] else f"{client}-{library.name}"


def library_of(variant: Any) -> str:
    """The library of a client/library pair (``"sync"``, ``"async-aiohttp"``), marked by `on_library` or not: the
    inverse of `_pair`."""
    pair = str(getattr(variant, "values", (variant,))[0])
    return pair.partition("-")[2] or LIBRARIES[0].name


def _pairs(library: Library) -> list[Any]:
    """The client/library pairs of one library, each marked as ``on_library`` says."""
    return [on_library(library.name, _pair(library, client)) for client in library.clients]


HAS_PYREQWEST = _importable("pyreqwest")
needs_pyreqwest = NEEDS["pyreqwest"]
"""Marks a test that needs pyreqwest: skipped, with the reason printed, where it cannot be installed."""
PYREQWEST_VARIANTS = _pairs(by_name("pyreqwest"))

HAS_HTTPX2 = _importable("httpx2")
needs_httpx2 = NEEDS["httpx2"]
"""Marks a test that needs httpx2: skipped, with the reason printed, where it cannot be installed."""


def on_httpx2(value: object) -> Any:
    """``value`` as a parameter of a test that needs httpx2, marked so (``needs_httpx2`` and ``httpx2``)."""
    return on_library("httpx2", value)


HTTPX2_VARIANTS = _pairs(by_name("httpx2"))
"""The httpx2 backend's pairs, marked ``httpx2`` (RUN_ONCE)."""


HTTPX_VARIANTS = ["sync", "async"]
ALL_VARIANTS: list[Any] = [pair for library in LIBRARIES for pair in _pairs(library)]
"""Every client/library pair, from the declarations (``_core/libraries.py``): a library declared there runs
the behaviour suite with no test edited."""


def installed_pairs() -> list[str]:
    """Every client/library pair whose library is installed here, by name (``"sync"``, ``"async-aiohttp"``...), for a
    test that runs them all in one fresh interpreter rather than paying a process's start per pair."""
    return [_pair(library, client) for library in LIBRARIES if _importable(library.name) for client in library.clients]


def pairs_to_run(config: pytest.Config) -> list[str]:
    """The pairs a test that runs them all in one interpreter runs: `installed_pairs`, or in the everyday tier
    (``--everyday``) the default pairs alone, as the tier runs a function parametrized over pairs."""
    return list(DEFAULT_PAIRS) if config.getoption("everyday") else installed_pairs()


SYNC_VARIANTS: list[Any] = [
    on_library(library.name, _pair(library, "sync")) for library in LIBRARIES if "sync" in library.clients
]
"""The sync client's pairs, from the declarations: for behaviour only threads can show."""


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Run make_client tests over every backend, unless they mock httpx (respx) or build httpx clients themselves."""
    if "variant" not in metafunc.fixturenames:
        return
    if any("variant" in str(mark.args[0]) for mark in metafunc.definition.iter_markers("parametrize")):
        return  # the test names its own variants
    takes_variant = "variant" in metafunc.definition.function.__code__.co_varnames
    httpx_only = "router" in metafunc.fixturenames or takes_variant
    metafunc.parametrize("variant", HTTPX_VARIANTS if httpx_only else ALL_VARIANTS, indirect=True)


@pytest.fixture
def variant(request: pytest.FixtureRequest) -> str:
    """Which client (and HTTP library) a parametrized test is running against."""
    return str(request.param)


@pytest.fixture
def make_client(variant: str) -> Iterator[ClientFactory]:
    """Build a client of the current variant; defaults to a test key and production."""
    loop = asyncio.new_event_loop()
    made: list[Any] = []

    def factory(*args: Any, **kwargs: Any) -> AnimalStoreClient:
        if not args and "api_key" not in kwargs:
            kwargs["api_key"] = API_KEY
        if "-" in variant and "http_client" not in kwargs:
            kwargs.setdefault("backend", variant.split("-")[1])
        if variant.startswith("sync"):
            client: Any = AnimalStoreClient(*args, **kwargs)
        else:
            client = SyncView(AsyncAnimalStoreClient(*args, **kwargs), loop)
        made.append(client)
        return cast("AnimalStoreClient", client)

    yield factory
    for client in made:
        client.close()
    # As asyncio.run does: async generators left open get closed while the loop can still run them.
    loop.run_until_complete(loop.shutdown_asyncgens())
    loop.close()
