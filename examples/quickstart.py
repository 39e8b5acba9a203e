"""List, create and fetch pets with the animal store SDK.

With ANIMALSTORE_API_KEY set this talks to the real service (production
unless ANIMALSTORE_ENVIRONMENT or ANIMALSTORE_BASE_URL says otherwise).
Without it, it runs offline against a small in-memory store served through
httpx.MockTransport, and says so on its first line.

    python examples/quickstart.py
"""

from __future__ import annotations

import json
import os
import warnings

import httpx

from animalstore_client import AnimalStoreClient, PetStatus


def offline_client() -> AnimalStoreClient:
    """A client wired to an in-memory store, for trying the SDK with no key and no network."""
    pets: list[dict[str, object]] = [
        {"id": 1, "name": "Biscuit", "categoryId": 1, "status": "available"},
        {"id": 2, "name": "Mochi", "categoryId": 2, "status": "sold"},
    ]

    def handle(request: httpx.Request) -> httpx.Response:
        if request.method == "GET" and request.url.path == "/v1/pets":
            status = request.url.params.get("status")
            limit = int(request.url.params.get("limit", "20"))
            return httpx.Response(200, json=[p for p in pets if status in (None, p["status"])][:limit])
        if request.method == "POST" and request.url.path == "/v1/pets":
            pet = {"id": len(pets) + 1, **json.loads(request.content)}
            pets.append(pet)
            return httpx.Response(201, json=pet)
        if request.method == "GET" and request.url.path.startswith("/v1/pets/"):
            wanted = int(request.url.path.rsplit("/", 1)[1])
            for pet in pets:
                if pet["id"] == wanted:
                    return httpx.Response(200, json=pet)
        return httpx.Response(404, json={"code": "not_found", "message": "No such pet", "status": 404})

    return AnimalStoreClient("offline-demo-key", http_client=httpx.Client(transport=httpx.MockTransport(handle)))


def main() -> None:
    """Run the tour."""
    if os.environ.get("ANIMALSTORE_API_KEY"):
        client = AnimalStoreClient()
        print(f"Using the animal store at {client.base_url} (key from ANIMALSTORE_API_KEY).")
    else:
        client = offline_client()
        print("No ANIMALSTORE_API_KEY set: running offline against an in-memory demo store.")

    with client:
        # Keyword arguments are checked before anything is sent: limit=500 would
        # raise ClientValidationError here instead of reaching the service.
        for pet in client.list_pets(limit=10, status=PetStatus.AVAILABLE):
            print(f"available: #{pet.id} {pet.name}")

        created = client.create_pet(name="Pepper", category_id=1, status="pending")
        print(f"created:   #{created.id} {created.name} ({created.status})")

        # get_pet is deprecated (removed on 2030-12-05); show the warning once.
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            fetched = client.get_pet(created.id)
        print(f"fetched:   #{fetched.id} {fetched.name}")
        for warning in caught:
            print(f"warning:   {warning.category.__name__}: {warning.message}")


if __name__ == "__main__":
    main()
