"""A library's response stream: `_transports.shared.StreamHead` with the body read in chunks (async and sync,
one generated from the other by scripts/unasync.py).

Each library's stream derives from `AsyncLibraryStream` and adds only how its library reads the headers, the
codings, the reason phrase and the body, which it hands to `AsyncLibraryStream._translated` with its failures.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import TypeVar

from animalstore_client._transports.shared import StreamHead, Translations, translated

__all__ = ["AsyncLibraryStream"]

R = TypeVar("R")  # the library's own response object


class AsyncLibraryStream(StreamHead[R]):
    """A stream whose body is read in chunks, unless the library overrides `whole_body`."""

    __slots__ = ()

    async def whole_body(self) -> bytes | None:
        """None: the body is read in chunks (``aiter_raw``)."""
        return None

    async def _translated(
        self, chunks: AsyncIterator[bytes], failures: tuple[type[BaseException], ...], table: Translations
    ) -> AsyncIterator[bytes]:
        """The library's ``chunks``, its ``failures`` translated by ``table``; closed at the end or when cut short.

        No context is set around each chunk: one is set a call, around the send (docs/architecture.md).
        """
        try:
            async for chunk in chunks:
                yield chunk
        except failures as exc:
            raise translated(exc, self._request, table) from exc
        finally:
            close = getattr(chunks, "aclose", None)  # typed as an iterator; the libraries give a generator
            if close is not None:
                await close()
