"""Run every failure kind on each client/library pair named under the real sentry-sdk; print what its events held.

``python -m tests.sentry_probe <variant> [<variant> ...]`` (tests/test_guarantees.py runs it in a process of its
own: sentry-sdk patches the standard library once installed). Sentry is initialised with its default options
(``include_local_variables=True``) and a transport that keeps each event in memory: nothing leaves the
machine. Each pair prints a line: the pair, then a JSON report of its failures run, the events captured,
the events with frame locals, and how many times the key occurs in all of them.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import sentry_sdk
from sentry_sdk.envelope import Envelope
from sentry_sdk.transport import Transport

from tests.conftest import ClientFactory, SyncView
from tests.test_guarantees import FAILURES, OPERATIONS, SECRET, _fail


class _Kept(Transport):
    """A sentry transport that keeps each envelope's text instead of sending it."""

    envelopes: list[str] = []  # noqa: RUF012  # one process, one list

    def capture_envelope(self, envelope: Envelope) -> None:
        self.envelopes.append(envelope.serialize().decode("utf-8", "replace"))


def main(variant: str) -> None:
    import asyncio

    from animalstore_client import AnimalStoreClient, AsyncAnimalStoreClient

    _Kept.envelopes.clear()
    loop = asyncio.new_event_loop()
    made: list[Any] = []

    def factory(*args: Any, **kwargs: Any) -> Any:
        if "-" in variant:
            kwargs.setdefault("backend", variant.split("-")[1])
        client: Any = (
            AnimalStoreClient(*args, **kwargs)
            if variant.startswith("sync")
            else SyncView(AsyncAnimalStoreClient(*args, **kwargs), loop)
        )
        made.append(client)
        return client

    make_client: ClientFactory = factory
    failures = 0
    for kind in FAILURES:
        for operation in OPERATIONS:
            exc = _fail(kind, make_client, variant, operation)
            failures += 1
            sentry_sdk.capture_exception(exc)
    sentry_sdk.flush(timeout=10)
    for client in made:
        client.close()
    loop.close()
    events = [text for text in _Kept.envelopes if '"exception"' in text]
    report = {
        "failures": failures,
        "events": len(events),
        "with_locals": sum('"vars"' in text for text in events),
        # Not from the command line: sentry sends sys.argv with every event.
        "key_found": sum(text.count(SECRET) for text in _Kept.envelopes),
    }
    print(variant, json.dumps(report))


if __name__ == "__main__":
    sentry_sdk.init(dsn="https://public@127.0.0.1:9/1", transport=_Kept)
    for name in sys.argv[1:]:
        main(name)
