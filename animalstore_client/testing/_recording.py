"""The fake store's bounded record of the requests it received: redacted, weighed, the oldest dropped first.

Its state is behind its own lock; `FakeAnimalStore.requests` and
`FakeAnimalStore.dropped_requests` read it.
"""

from __future__ import annotations

import json
import threading
from collections import deque
from collections.abc import Mapping

from ._messages import MAX_BODY_BYTES, RecordedRequest, reject_constant

__all__ = ["MAX_RECORDED_BYTES", "MAX_RECORDED_REQUESTS", "Recording"]

MAX_RECORDED_REQUESTS = 10_000
"""The most requests `FakeAnimalStore.requests` keeps; past it the oldest is dropped first.

Enough for a test that counts every attempt of a thousand calls in an
outage, or of an import of several thousand pets; `FakeAnimalStore.dropped_requests`
says how many were dropped.
"""
MAX_RECORDED_BYTES = 32 * 1024 * 1024
"""The most bytes (32 MiB) the kept requests may weigh; past it the oldest are dropped first (the newest stays).

A request weighs the bytes of its path, query string, header names and
values, plus 1,024 bytes for the request and 160 for each header field and
query value; a JSON body (only a request with an accepted key has one
parsed) weighs its bytes plus 48 for each ``,``, ``:``, ``{`` and ``[`` in
them. That is about what Python spends holding them, so this bounds the
memory the recording takes whatever arrives: 1 MiB of ``[{},{},...]``
parses into 24 MiB of objects, and weighs 33 MiB.
"""
_RECORD_OVERHEAD = 1024
"""Bytes a recorded request weighs beside its contents (the record, its dicts, its request id)."""
_FIELD_OVERHEAD = 160
"""Bytes each header field and each query value of a recorded request weighs beside its characters."""
_JSON_OVERHEAD = 48
"""Bytes each ``,``, ``:``, ``{`` and ``[`` of a parsed JSON body weighs: roughly one Python object each."""


class Recording:
    """The requests kept, oldest first, within `MAX_RECORDED_REQUESTS` and `MAX_RECORDED_BYTES`."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._requests: deque[RecordedRequest] = deque()
        self._weights: deque[int] = deque()  # each kept request's weight, as MAX_RECORDED_BYTES counts it
        self._bytes = 0
        self._dropped = 0

    def __len__(self) -> int:
        with self._lock:
            return len(self._requests)

    def requests(self) -> list[RecordedRequest]:
        """A snapshot of the kept requests, oldest first."""
        with self._lock:
            return list(self._requests)

    def dropped(self) -> int:
        """How many requests were dropped to stay within the bounds since the last `clear`."""
        with self._lock:
            return self._dropped

    def clear(self) -> None:
        with self._lock:
            self._requests.clear()
            self._weights.clear()
            self._bytes = 0
            self._dropped = 0

    def record(
        self,
        method: str,
        path: str,
        raw_query: str,
        query: dict[str, list[str]],
        headers: Mapping[str, str],
        body: bytes,
        request_id: str,
        *,
        parse_body: bool,
    ) -> None:
        """Keep a request, its key redacted; its body is parsed as JSON only with ``parse_body``."""
        shown = {
            name: ("Bearer [redacted]" if value.startswith("Bearer ") else "[redacted]")
            if name == "authorization"
            else value
            for name, value in headers.items()
        }
        data = None
        weight = _RECORD_OVERHEAD + len(path) + len(raw_query)
        weight += sum(len(name) + len(value) + _FIELD_OVERHEAD for name, value in shown.items())
        weight += _FIELD_OVERHEAD * sum(len(values) for values in query.values())
        if parse_body and body and len(body) <= MAX_BODY_BYTES:
            try:
                data = json.loads(body, parse_constant=reject_constant)
            except (ValueError, RecursionError):
                data = None
            else:
                separators = body.count(b",") + body.count(b":") + body.count(b"{") + body.count(b"[")
                weight += len(body) + _JSON_OVERHEAD * separators
        with self._lock:
            self._requests.append(RecordedRequest(method, path, query, shown, data, request_id))
            self._weights.append(weight)
            self._bytes += weight
            while len(self._requests) > MAX_RECORDED_REQUESTS or (
                self._bytes > MAX_RECORDED_BYTES and len(self._requests) > 1
            ):
                self._requests.popleft()
                self._bytes -= self._weights.popleft()
                self._dropped += 1
