"""What each private reach of the SDK buys: the same calls with it, and with the public route instead.

    python benchmarks/private_reaches.py           # 5 rounds; nginx for the pool reach (apt-get install -y nginx)
    python benchmarks/private_reaches.py --quick --server fake  # tiny counts, no nginx (the CI smoke test)

docs/architecture.md lists every reach of the SDK into a library's private
names (or around a class's ``__init__``) and the figure this prints for it:
one kept for speed must buy more than 5 % on a call, or it goes. Each reach is
switched off by putting its public route in its place, and the two are timed
in interleaved batches of the same calls (the median over rounds of the
within-round ratio, so drift cancels out):

- ``copy_request`` (``object.__new__(httpx.Request)`` and a ``__dict__``
  copy) against building the request with ``httpx.Request(...)``: a
  ``list_pets(limit=100)`` over an ``httpx.MockTransport``;
- ``_core.models._fast_pets`` (``object.__new__(Pet)`` and attrs' slot setters)
  against cattrs' checked hooks: the same call;
- ``finished_response``/``headers_from_library`` (httpx ``Response._content``,
  ``Headers._list``) against ``httpx.Response(status, headers=..., content=...)``:
  ``with_raw_response.list_pets`` on the default backend against nginx (a
  typed call makes no response at all; a mock transport's is made already).

(The ``"is_readable"`` answer by ``poll()`` measured here until 1.2.0 is
gone: the SDK's own pool asks it once per call, not of every idle
connection, and its asyncio stream answers from its own buffer.)
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import statistics
import sys
import time
from collections.abc import Callable, Generator
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))

from animalstore_client import (
    AnimalStoreClient,
)
from animalstore_client._core import httpx_private as _httpx_private
from animalstore_client._core import models as _models
from animalstore_client._core import operations as _operations
from animalstore_client._transports.pool._generated import httpcore_sync as _httpcore_sync

BASE = "https://bench.animalstore.example/v1"
KEY = "bench-key"
PETS = [{"id": i, "name": f"pet-{i}", "categoryId": i % 7, "status": "available"} for i in range(1, 101)]
BODY = json.dumps(PETS).encode()


def _handler(request: httpx.Request) -> httpx.Response:
    return httpx.Response(200, content=BODY, headers={"Content-Type": "application/json"})


def _public_copy(template: httpx.Request, extensions: dict[str, Any]) -> httpx.Request:
    return httpx.Request(template.method, template.url, headers=template.headers, extensions=extensions)


def _public_response(
    status_code: int, headers: httpx.Headers, content: bytes, request: httpx.Request, extensions: dict[str, Any]
) -> httpx.Response:
    return httpx.Response(status_code, headers=headers, content=content, request=request, extensions=extensions)


def _public_headers(pairs: Any) -> httpx.Headers:
    return httpx.Headers(list(pairs))


def _no_fast_path(items: Any) -> None:
    return None


@contextlib.contextmanager
def _replaced(owner: object, name: str, value: object) -> Generator[None, None, None]:
    original = getattr(owner, name)
    setattr(owner, name, value)
    try:
        yield
    finally:
        setattr(owner, name, original)


def _ratio(on: Callable[[], float], off: Callable[[], float], rounds: int) -> tuple[float, float, float]:
    """Median over rounds of off/on seconds, with the medians of each: how much slower the public route is."""
    ons: list[float] = []
    offs: list[float] = []
    on()
    off()  # warm up both
    for _ in range(rounds):
        gc.collect()
        ons.append(on())
        gc.collect()
        offs.append(off())
    return (
        statistics.median(b / a for a, b in zip(ons, offs, strict=True)),
        statistics.median(ons),
        statistics.median(offs),
    )


def _timed(calls: int, call: Callable[[], object]) -> float:
    started = time.perf_counter()
    for _ in range(calls):
        call()
    return (time.perf_counter() - started) / calls


def cpu_reaches(calls: int, rounds: int) -> list[tuple[str, float, float, float]]:
    """The reaches a mock transport shows: per-call time with each, and with its public route."""
    client = AnimalStoreClient(KEY, base_url=BASE, http_client=httpx.Client(transport=httpx.MockTransport(_handler)))
    typed = lambda: client.list_pets(limit=100)  # noqa: E731
    results: list[tuple[str, float, float, float]] = []

    def off_copy() -> float:
        with _replaced(_operations, "copy_request", _public_copy):
            return _timed(calls, typed)

    results.append(
        ("copy_request: typed list_pets(limit=100)", *_ratio(lambda: _timed(calls, typed), off_copy, rounds))
    )

    def off_fast() -> float:
        with _replaced(_models, "_fast_pets", _no_fast_path):
            return _timed(calls, typed)

    results.append(("_fast_pets: typed list_pets(limit=100)", *_ratio(lambda: _timed(calls, typed), off_fast, rounds)))

    client.close()
    return results


def response_reach(calls: int, rounds: int, base_url: str) -> tuple[str, float, float, float]:
    """Response._content / Headers._list: a raw list_pets on the default backend, which makes the response."""
    client = AnimalStoreClient(KEY, base_url=base_url)
    raw = lambda: client.with_raw_response.list_pets(limit=100)  # noqa: E731

    def off() -> float:
        with (
            _replaced(_httpx_private, "finished_response", _public_response),
            _replaced(_httpcore_sync, "headers_from_library", _public_headers),
        ):
            return _timed(calls, raw)

    try:
        return ("Response._content / Headers._list: raw list_pets", *_ratio(lambda: _timed(calls, raw), off, rounds))
    finally:
        client.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="tiny counts: figures only")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument(
        "--server", choices=["nginx", "fake"], default="nginx", help="fake: the SDK's fake store (no nginx)"
    )
    args = parser.parse_args()
    calls, rounds = (5, 1) if args.quick else (300, args.rounds)  # quick: each reach on and off, once
    rows = cpu_reaches(calls, rounds)
    from concurrency import fake_server, nginx  # the servers benchmarks/concurrency.py measures against

    try:
        with nginx() if args.server == "nginx" else fake_server() as (base_url, _cpu):
            rows.append(response_reach(calls, rounds, base_url))
    except (AssertionError, FileNotFoundError) as exc:  # no nginx here
        print(f"nginx is not installed ({type(exc).__name__}): the reaches that need a server are not measured")
    print(f"{'reach (public route in its place)':55} {'with':>9} {'without':>9} {'gain':>7}")
    for name, ratio, on, off in rows:
        verdict = "" if args.quick else ("keep" if ratio > 1.05 else "under 5 %: remove")
        print(f"{name:55} {on * 1e6:7.0f}us {off * 1e6:7.0f}us {(ratio - 1) * 100:6.1f}% {verdict}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
