"""``python -m animalstore_client.testing``: serve a FakeAnimalStore over HTTP on 127.0.0.1."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from animalstore_client._core.exceptions import AnimalStoreError

from ._messages import reject_constant
from ._server import make_server
from ._store import FakeAnimalStore


def _fail(message: str) -> int:
    """Print ``message`` as one line on stderr (a path or a JSON error may hold newlines) and return 2."""
    text = " ".join(message.split())
    print(f"error: {text[:500]}", file=sys.stderr)
    return 2


def _load_pets(path: str) -> list[object] | str:
    """The pets in the file at ``path``, or why there are none to load."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, ValueError) as exc:  # ValueError: not UTF-8
        return f"--pets {path}: {exc}"
    try:
        loaded = json.loads(text, parse_constant=reject_constant)
    except RecursionError:
        return f"--pets {path}: not valid JSON: it is nested too deeply"
    except ValueError as exc:
        return f"--pets {path}: not valid JSON: {exc}"
    if not isinstance(loaded, list):
        return f"--pets {path}: must hold a JSON array of pets, got {type(loaded).__name__}"
    return loaded  # pyright: ignore[reportUnknownVariableType]


def main(argv: list[str] | None = None) -> int:
    """Parse the options, print the base URL and key, and serve until interrupted."""
    parser = argparse.ArgumentParser(
        prog="python -m animalstore_client.testing",
        description="Serve an in-memory animal store on 127.0.0.1 for tests and demos.",
    )
    parser.add_argument("--port", type=int, default=8080, help="TCP port; 0 picks a free one (default 8080)")
    parser.add_argument(
        "--api-key", action="append", dest="api_keys", metavar="KEY", help="accepted key (repeatable; default test-key)"
    )
    parser.add_argument("--pets", metavar="FILE", help="seed the store from a JSON array of pets")
    parser.add_argument(
        "--control",
        action="store_true",
        help="answer the control API under /_fake/ (reset, seed, faults, recorded requests)",
    )
    parser.add_argument("--quiet", action="store_true", help="do not log requests to stderr")
    args = parser.parse_args(argv)
    if not 0 <= args.port <= 65535:
        parser.error(f"--port must be from 0 to 65535, got {args.port}")
    pets: list[object] = []
    if args.pets is not None:
        loaded = _load_pets(args.pets)
        if isinstance(loaded, str):
            return _fail(loaded)
        pets = loaded
    try:
        store = FakeAnimalStore(api_keys=args.api_keys or ("test-key",), pets=pets)  # type: ignore[arg-type]
    except (AnimalStoreError, RecursionError) as exc:
        return _fail(f"--pets {args.pets}: {exc}" if args.pets is not None else str(exc))
    try:
        server = make_server(store, args.port, quiet=args.quiet, control=args.control)
    except OSError as exc:
        print(f"error: cannot listen on 127.0.0.1:{args.port}: {exc.strerror}", file=sys.stderr)
        return 1
    try:  # from here every exit closes the listening socket, a failed print (a closed stdout) too
        print(f"FakeAnimalStore serving at http://127.0.0.1:{server.server_address[1]}/v1", flush=True)
        print(f"API key: {store.api_key}", flush=True)
        if args.control:
            print(f"Control API: http://127.0.0.1:{server.server_address[1]}/_fake/", flush=True)
        print("Press Ctrl+C to stop.", flush=True)
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
