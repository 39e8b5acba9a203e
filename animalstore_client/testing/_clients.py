"""Kit-made clients: a `FakeAnimalStore`'s clients, in-process or over a loopback server, and the time they live in.

Every client is handed to the store through `Wiring`, the client's one hook
for the kit: its retries record their delays on the store's `KitClock`
instead of sleeping, and its retry budget counts in that clock.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable
from contextlib import ExitStack
from typing import TYPE_CHECKING, Any, TypeVar, cast, get_args

from animalstore_client._clients._generated.client_sync import AnimalStoreClient
from animalstore_client._clients.backends import AsyncBackendName, BackendName
from animalstore_client._clients.client_async import AsyncAnimalStoreClient
from animalstore_client._clients.shells import Wiring
from animalstore_client._core.exceptions import ClientValidationError

from ._messages import FAKE_BASE_URL

if TYPE_CHECKING:
    from ._store import FakeAnimalStore

__all__ = ["KitClock", "adopt", "async_client", "client"]

ClientT = TypeVar("ClientT", AnimalStoreClient, AsyncAnimalStoreClient)


class KitClock:
    """The time a store's kit-made clients live in, and the retry delays they took instead of sleeping.

    It starts at 0 and moves only by those delays and by `advance`.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._now = 0.0
        self._delays: list[float] = []

    def now(self) -> float:
        with self._lock:
            return self._now

    def slept(self, seconds: float) -> None:
        """What a kit-made client does instead of sleeping ``seconds`` before a retry."""
        with self._lock:
            self._delays.append(seconds)
            self._now += seconds

    def advance(self, seconds: float) -> None:
        if not isinstance(cast(object, seconds), (int, float)) or isinstance(seconds, bool) or not 0 <= seconds < 1e12:
            raise ClientValidationError(
                f"seconds must be a number from 0 to 1e12, got {seconds!r}",
                argument="seconds",
                rule="a number from 0 to 1e12",
                value=seconds,
            )
        with self._lock:
            self._now += float(seconds)

    def delays(self) -> list[float]:
        with self._lock:
            return list(self._delays)

    def clear_delays(self) -> None:
        """Forget the delays; the time stays, as clocks the clients read only move forward."""
        with self._lock:
            self._delays.clear()


def client(
    store: FakeAnimalStore, key: str, backend: object, options: dict[str, Any], clock: KitClock
) -> AnimalStoreClient:
    """`FakeAnimalStore.client`: in-process on httpx, else over a loopback server; ``clock`` takes the delays."""
    import httpx

    from animalstore_client._transports._generated.httpx_sync import HttpxTransport

    from ._transport import FakeTransport

    if _over_socket(backend, "httpx", get_args(BackendName), "client"):
        return _over_loopback(store, AnimalStoreClient, key, backend, options, clock, clock.slept)
    with ExitStack() as taken:  # a client that cannot be made (a bad option) leaves nothing open
        http_client = httpx.Client(transport=FakeTransport(store))
        taken.callback(http_client.close)
        made = AnimalStoreClient(key, base_url=FAKE_BASE_URL, http_client=http_client, **options)
        wiring = Wiring(lambda: HttpxTransport(httpx.Client(transport=FakeTransport(store))), clock.slept, clock.now)
        made._wire(wiring)  # noqa: SLF001  # pyright: ignore[reportPrivateUsage]  # the client's one hook for the kit
        taken.pop_all()  # made: the client holds them now
    return made


def async_client(
    store: FakeAnimalStore, key: str, backend: object, options: dict[str, Any], clock: KitClock
) -> AsyncAnimalStoreClient:
    """`FakeAnimalStore.async_client`: in-process on httpx, else over a loopback server."""
    import httpx

    from animalstore_client._transports.httpx_async import AsyncHttpxTransport

    from ._transport import AsyncFakeTransport

    sleep = _async(clock.slept)
    if _over_socket(backend, "httpx", get_args(AsyncBackendName), "async_client"):
        return _over_loopback(store, AsyncAnimalStoreClient, key, backend, options, clock, sleep)
    # An in-process httpx.AsyncClient holds no socket and no thread: one left by a client that cannot be
    # made (a bad option) is only garbage (and aclose() would need an event loop).
    made = AsyncAnimalStoreClient(
        key, base_url=FAKE_BASE_URL, http_client=httpx.AsyncClient(transport=AsyncFakeTransport(store)), **options
    )
    wiring = Wiring(
        lambda: AsyncHttpxTransport(httpx.AsyncClient(transport=AsyncFakeTransport(store))), sleep, clock.now
    )
    made._wire(wiring)  # noqa: SLF001  # pyright: ignore[reportPrivateUsage]  # the client's one hook for the kit
    return made


def adopt(made: ClientT, clock: KitClock) -> ClientT:
    """`FakeAnimalStore.adopt`: a client built over `FakeAnimalStore.serve`, wired to ``clock`` as the kit's own."""
    if isinstance(made, AsyncAnimalStoreClient):
        made._wire(Wiring(None, _async(clock.slept), clock.now))  # noqa: SLF001  # pyright: ignore[reportPrivateUsage]
    elif isinstance(cast(object, made), AnimalStoreClient):
        made._wire(Wiring(None, clock.slept, clock.now))  # noqa: SLF001  # pyright: ignore[reportPrivateUsage]
    else:
        raise ClientValidationError(
            f"client must be an AnimalStoreClient or an AsyncAnimalStoreClient, got {type(made).__name__}",
            argument="client",
            rule="an AnimalStoreClient or AsyncAnimalStoreClient",
            value=made,
        )
    return made


def _async(slept: Callable[[float], None]) -> Callable[[float], Any]:
    """``slept`` as the coroutine function an async client awaits instead of sleeping."""

    async def sleep(seconds: float) -> None:
        import anyio  # as the in-process transport does: asyncio and trio alike

        slept(seconds)
        # Instead of the wait, a turn for the other tasks: concurrent calls interleave at each backoff.
        await anyio.sleep(0)

    return sleep


def _over_socket(backend: object, in_process: str, over_socket: tuple[str, ...], method: str) -> bool:
    """Whether a kit client on ``backend`` needs a real socket; a name no library of the client has is refused.

    ``over_socket`` is every backend of the client (its ``backend=`` type's names): all but ``in_process``.
    """
    if backend is None or backend == in_process:
        return False
    over_socket = tuple(name for name in over_socket if name != in_process)
    if isinstance(backend, str) and backend in over_socket:
        return True
    names = [repr(name) for name in over_socket]
    others = names[0] if len(names) == 1 else ", ".join(names[:-1]) + f" or {names[-1]}"
    raise ClientValidationError(
        f"backend for store.{method}() must be {in_process!r} (in-process, the default) or {others} "
        f"(over a loopback server the store starts), got {backend!r}",
        argument="backend",
        rule=f"{in_process!r} or {others}",
        value=backend,
    )


def _over_loopback(
    store: FakeAnimalStore,
    cls: type[ClientT],
    key: str,
    backend: Any,
    options: dict[str, Any],
    clock: KitClock,
    sleep: Callable[[float], Any],
) -> ClientT:
    """A kit client on a library that needs a socket: over a server the store runs for it alone.

    The server starts first (the client is made with its URL), so a client
    that cannot be made (its library not installed, a bad option) stops it
    before the error goes on: no thread is left for the interpreter to wait
    on at exit.
    """
    server = ExitStack()
    with ExitStack() as on_error:
        on_error.callback(server.close)
        url = server.enter_context(store.serve())
        made = cls(key, base_url=url, backend=backend, **options)
        weakref.finalize(made, server.close)  # a client never closed still stops its server
        made._wire(Wiring(None, sleep, clock.now, server.close))  # pyright: ignore[reportPrivateUsage]
        on_error.pop_all()  # made: the client stops the server when it closes
    return made
