"""``python -m animalstore_client.testing``: serve a FakeAnimalStore over HTTP on 127.0.0.1."""

from __future__ import annotations

import argparse
import sys

from ._server import make_server
from ._store import FakeAnimalStore


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
    parser.add_argument("--quiet", action="store_true", help="do not log requests to stderr")
    args = parser.parse_args(argv)
    if not 0 <= args.port <= 65535:
        parser.error(f"--port must be from 0 to 65535, got {args.port}")
    store = FakeAnimalStore(api_keys=args.api_keys or ("test-key",))
    try:
        server = make_server(store, args.port, quiet=args.quiet)
    except OSError as exc:
        print(f"error: cannot listen on 127.0.0.1:{args.port}: {exc.strerror}", file=sys.stderr)
        return 1
    print(f"FakeAnimalStore serving at http://127.0.0.1:{server.server_address[1]}/v1", flush=True)
    print(f"API key: {store.api_key}", flush=True)
    print("Press Ctrl+C to stop.", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
