# Generated from _transports/stream_async.py by scripts/unasync.py: do not edit; regenerate with `python scripts/unasync.py`.
"""A library's response stream: `_transports.shared.StreamHead` with the body read in chunks (async and sync,
one generated from the other by scripts/unasync.py).

Each library's stream derives from `LibraryStream` and adds only how its library reads the headers, the
codings, the reason phrase and the body, which it hands to `LibraryStream._translated` with its failures.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TypeVar

from animalstore_client._transports.shared import StreamHead, Translations, translated

__all__ = ["LibraryStream"]

R = TypeVar("R")  # the library's own response object


class LibraryStream(StreamHead[R]):
    """A stream whose body is read in chunks, unless the library overrides `whole_body`."""

    __slots__ = ()

    def whole_body(self) -> bytes | None:
        """None: the body is read in chunks (``iter_raw``)."""
        return None

    def _translated(
        self, chunks: Iterator[bytes], failures: tuple[type[BaseException], ...], table: Translations
    ) -> Iterator[bytes]:
        """The library's ``chunks``, its ``failures`` translated by ``table``; closed at the end or when cut short.

        No context is set around each chunk: one is set a call, around the send (docs/architecture.md).
        """
        try:
            for chunk in chunks:
                yield chunk
        except failures as exc:
            raise translated(exc, self._request, table) from exc
        finally:
            close = getattr(chunks, "close", None)  # typed as an iterator; the libraries give a generator
            if close is not None:
                close()
