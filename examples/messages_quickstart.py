"""The getting-started POST /messages, through client.request.

The SDK has no method for it (it is an illustration in the interface
document), so client.request sends it with the same key, errors and retry
rules: as a POST it is retried only where the service cannot have acted.

    python examples/messages_quickstart.py
"""

from __future__ import annotations

import os

from animalstore_client import AnimalStoreClient
from animalstore_client.testing import FakeAnimalStore


def open_client() -> AnimalStoreClient:
    """The real service when a key is set, else an offline FakeAnimalStore."""
    if os.environ.get("ANIMALSTORE_API_KEY"):
        print("Using the animal store (key from ANIMALSTORE_API_KEY).")
        return AnimalStoreClient()
    print("No ANIMALSTORE_API_KEY set: running offline against a FakeAnimalStore.")
    return FakeAnimalStore().client()


def main() -> None:
    """Send one message and print the reply's fields."""
    with open_client() as client:
        response = client.request("POST", "/messages", json={"message": "Hello from the SDK"})
        reply = response.json()
        print(f"HTTP {response.status_code}")
        for field in ("id", "message", "status", "createdAt"):
            print(f"{field:>9}: {reply[field]}")


if __name__ == "__main__":
    main()
