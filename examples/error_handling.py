"""Each typed error, and retries seen through the fake store's fault injection.

python examples/error_handling.py
"""

from __future__ import annotations

import logging
import os
import sys
import warnings

from animalstore_client import (
    AnimalStoreClient,
    APIConnectionError,
    APIStatusError,
    AuthenticationError,
    BadRequestError,
    ClientValidationError,
    InternalServerError,
    NotFoundError,
)
from animalstore_client.testing import FakeAnimalStore


def main() -> None:
    """Provoke each error in turn and show what the exception carries."""
    if os.environ.get("ANIMALSTORE_API_KEY"):
        print("ANIMALSTORE_API_KEY is set, but this example injects faults: running offline against a FakeAnimalStore.")
    else:
        print("No ANIMALSTORE_API_KEY set: running offline against a FakeAnimalStore.")
    store = FakeAnimalStore(pets=[{"id": 1, "name": "Biscuit", "categoryId": 1}])
    # Retries are logged at INFO on the "animalstore_client" logger.
    logging.basicConfig(stream=sys.stdout, level=logging.INFO, format="  log: %(message)s")
    logging.getLogger("httpx").setLevel(logging.WARNING)

    with store.client() as client:
        try:
            client.list_pets(limit=500)
        except ClientValidationError as exc:  # nothing was sent
            print(f"ClientValidationError: {exc} (argument={exc.argument!r})")

        try:
            store.client(api_key="not-the-key").list_pets()
        except AuthenticationError as exc:
            print(f"AuthenticationError: status={exc.status_code} code={exc.code!r}")

        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", DeprecationWarning)
                client.get_pet(12345)  # type: ignore[deprecated]  # shown on purpose
        except NotFoundError as exc:
            print(f"NotFoundError: {exc.message}")

        try:
            client.request("POST", "/pets", json={"name": "Rex"})  # categoryId missing
        except BadRequestError as exc:
            print(f"BadRequestError: {exc.message}")

        # Two 503s, then success: reads retry with backoff (0.5 s, then 1 s).
        store.fail_next(503, times=2)
        print(f"after two injected 503s: {len(client.list_pets())} pets listed")

        # A 5xx on create (a 503 too) is never retried: the pet may already be stored.
        store.fail_next(500)
        try:
            client.create_pet(name="Rex", category_id=1)
        except InternalServerError as exc:
            print(f"InternalServerError after {exc.attempts} attempt(s): {exc.code}")

        # A proxy's HTML page still gives the class of its status.
        store.fail_next(502, times=3, body="<html><h1>502 Bad Gateway</h1></html>")
        try:
            client.with_options(max_retries=2).list_pets()
        except APIStatusError as exc:
            print(f"{type(exc).__name__} after {exc.attempts} attempts, body starts {str(exc.body)[:20]!r}")

    try:
        with AnimalStoreClient("k", base_url="http://127.0.0.1:9/v1", max_retries=0) as offline:
            offline.list_pets()
    except APIConnectionError as exc:
        print(f"{type(exc).__name__}: nothing listens on port 9")


if __name__ == "__main__":
    main()
