"""What reading a hostile server's text costs: each reader of server bytes on inputs built to be slow, at 8 and 64 KB.

    python benchmarks/server_text.py            # best of 5 runs of each reader, in milliseconds
    python benchmarks/server_text.py --quick    # one run each: the CI smoke test

Each reader must cost time linear in what it reads, and read a capped prefix
(``docs/limits-and-safety.md``): the service-notice reader (``Deprecation``,
``Sunset``, ``Link``: 1.4.0 took 0.17 s per 8 KB of ``<``), the URL
redaction of a server's text (1.4.0 scanned a run of letters once from each
of them), ``Retry-After``. Each line prints the milliseconds at 8 KB and at
64 KB, and their ratio: about 8 where linear and uncapped, about 1 where
capped, and about 64 where quadratic.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

from animalstore_client._core.deprecation import service_notice
from animalstore_client._core.retry import parse_retry_after
from animalstore_client._core.secrets import redact_text


def _notice(size: int) -> Callable[[], object]:
    raw = [(b"Deprecation", b"true"), (b"Link", b"<" * size)]
    return lambda: service_notice(raw)


def _notice_params(size: int) -> Callable[[], object]:
    raw = [(b"Sunset", b"Sat, 05 Dec 2030 00:00:00 GMT"), (b"Link", b"<x>" + b"; a=b" * (size // 5))]
    return lambda: service_notice(raw)


def _letters_at(size: int) -> Callable[[], object]:
    text = "a" * size + "@"
    return lambda: redact_text(text)


def _schemes(size: int) -> Callable[[], object]:
    text = "a://" * (size // 4) + "@"
    return lambda: redact_text(text)


def _separators(size: int) -> Callable[[], object]:
    text = "=" + "?a" * (size // 2)
    return lambda: redact_text(text)


def _retry_after(size: int) -> Callable[[], object]:
    text = "Sat, " * (size // 5)
    return lambda: parse_retry_after(text)


READERS: dict[str, Callable[[int], Callable[[], object]]] = {
    "service notice, a Link of '<'": _notice,
    "service notice, a Link of parameters": _notice_params,
    "redaction, letters then '@'": _letters_at,
    "redaction, 'a://' repeated": _schemes,
    "redaction, '?a' repeated after an '='": _separators,
    "Retry-After, a long value": _retry_after,
}


def _best(run: Callable[[], object], repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        started = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - started)
    return best * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="one run of each: the CI smoke test")
    args = parser.parse_args()
    repeats = 1 if args.quick else 5
    print(f"{'reader':40} {'8 KB ms':>9} {'64 KB ms':>9} {'ratio':>6}")
    for name, make in READERS.items():
        small = _best(make(8 * 1024), repeats)
        large = _best(make(64 * 1024), repeats)
        print(f"{name:40} {small:9.3f} {large:9.3f} {large / small if small else 0:6.1f}")


if __name__ == "__main__":
    main()
