"""Every default of the clients, in one place: tests and docs import them from here (or the package).

Nothing here imports the rest of the package, so every layer may use it: the
transports read `DEFAULT_LIMITS` without reaching up to the client layer.
"""

from __future__ import annotations

import httpx

__all__ = [
    "DEFAULT_LIMITS",
    "DEFAULT_MAX_RESPONSE_BYTES",
    "DEFAULT_MAX_RETRIES",
    "DEFAULT_TIMEOUT",
    "DEFAULT_TOTAL_TIMEOUT",
    "HTTPX_DEFAULT_TIMEOUT",
    "MAX_RESPONSE_HEADERS",
    "MAX_RESPONSE_HEADER_BYTES",
]

DEFAULT_TIMEOUT = httpx.Timeout(30.0, connect=5.0)
"""30 s to read, write or wait for a pooled connection; 5 s to connect."""
DEFAULT_MAX_RETRIES = 2
"""Retries after the first attempt."""
DEFAULT_TOTAL_TIMEOUT = 120.0
"""Seconds one call may take in all: every attempt, sleep and body (the total default of Google's API clients)."""
DEFAULT_MAX_RESPONSE_BYTES = 10 * 1024 * 1024
"""The largest response body read, after content decoding: 10 MiB, some thousand times a full page of pets."""
DEFAULT_LIMITS = httpx.Limits(max_connections=1000, max_keepalive_connections=100)
"""Connection pool limits: enough that hundreds of concurrent async calls queue
briefly instead of running into ``PoolTimeout``; idle keep-alive bounded."""

MAX_RESPONSE_HEADERS = 99
"""The most header fields an answer may carry, on every backend: below every library's own (hyper, under
pyreqwest, refuses a 101st); real services send about 30."""
MAX_RESPONSE_HEADER_BYTES = 64 * 1024
"""The most bytes an answer's header fields may hold in all (names and values), on every backend."""

HTTPX_DEFAULT_TIMEOUT = httpx.Timeout(5.0)
"""httpx's own default: a caller's httpx client with it gets `DEFAULT_TIMEOUT` instead (shorter than this API needs)."""
