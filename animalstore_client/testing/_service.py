"""The fake store's operations, declared once: each one's route, handler and state, as the interface says.

`ROUTES` at the bottom is the table the store routes by (``_routes`` derives
404, 405 and ``Allow`` from it); a handler is a `Service` method, and the
state an operation keeps is `Service`'s, behind its lock. Adding an
operation touches this file only. No faults, no recording, no I/O:
`FakeAnimalStore` decides what to inject and records what came.
"""

from __future__ import annotations

import itertools
import re
import threading
import uuid
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any

from animalstore_client._core.exceptions import ClientValidationError
from animalstore_client._core.models import Pet, PetStatus
from animalstore_client._core.validation import INT64_MAX, INT64_MIN, LIMIT_MAX, LIMIT_MIN

from ._messages import BadRequest, FakeResponse, describe, error_response, is_int64, json_object, ok
from ._routes import Call, Route, Routes

__all__ = ["ROUTES", "Service"]

SUNSET = "Thu, 05 Dec 2030 00:00:00 GMT"
"""RFC 8594 ``Sunset`` of ``GET /pets/{petId}``."""
# RFC 9745 wants the date the deprecation took effect; the interface gives
# none, so the fake states the start of 2026, before this SDK's first release.
DEPRECATION = "@1767225600"
_STATUSES = [member.value for member in PetStatus]
_DIGITS = re.compile(r"[0-9]+")
_SIGNED = re.compile(r"-?[0-9]{1,19}")
_LIST_PARAMETERS = ("limit", "status")


class Service:
    """The store's state and the operations' handlers: answers a request as the service would."""

    def __init__(self, api_keys: tuple[str, ...]) -> None:
        self._api_keys = api_keys
        self._lock = threading.Lock()
        self._pets: dict[int, Pet] = {}
        self._ids = itertools.count(1)

    def __len__(self) -> int:
        with self._lock:
            return len(self._pets)

    def add_pets(self, pets: Iterable[Pet | Mapping[str, Any]]) -> None:
        """Store ``pets`` (an existing id is replaced), all checked first; later ids continue after the highest."""
        checked = [item if isinstance(item, Pet) else Pet.from_dict(item) for item in pets]
        for index, pet in enumerate(checked):
            for field, value in (("id", pet.id), ("categoryId", pet.category_id)):
                if not is_int64(value):
                    raise ClientValidationError(
                        f"pets[{index}].{field} must be an integer within int64, got {value!r:.40}",
                        argument="pets",
                        rule="ids and categoryIds within int64",
                        value=value,
                    )
        with self._lock:
            for pet in checked:
                self._pets[pet.id] = pet
            self._ids = itertools.count(max(self._pets, default=0) + 1)

    def clear(self) -> None:
        """No pets; ids start at 1 again."""
        with self._lock:
            self._pets.clear()
            self._ids = itertools.count(1)

    def pets(self) -> list[Pet]:
        """A snapshot of the pets, by id."""
        with self._lock:
            return [self._pets[pet_id] for pet_id in sorted(self._pets)]

    def authorized(self, headers: Mapping[str, str]) -> bool:
        """Whether ``headers`` (lower-case names) carry ``Authorization: Bearer <an accepted key>``.

        Any other request is answered 401 whatever its body, so the store
        neither parses nor keeps the body of one.
        """
        scheme, _, key = headers.get("authorization", "").partition(" ")
        return scheme == "Bearer" and key in self._api_keys

    def answer(
        self, method: str, path: str, query: dict[str, list[str]], headers: Mapping[str, str], body: bytes
    ) -> FakeResponse:
        """The service's answer to a request (``headers`` with lower-case names): what `ROUTES` routes it to."""
        return ROUTES.answer(self, method, path, Call({}, query, headers, body), refusal=self._refusal(headers))

    def _refusal(self, headers: Mapping[str, str]) -> FakeResponse | None:
        """The 401 for a request without an accepted key, or None."""
        if self.authorized(headers):
            return None
        authorization = headers.get("authorization", "")
        scheme, _, key = authorization.partition(" ")
        reason = (
            "missing"
            if not authorization
            else "not of the form 'Bearer <API_KEY>'"
            if scheme != "Bearer" or not key
            else "not valid"
        )
        return error_response(
            401, "unauthorized", f"The Authorization header is {reason}.", {"WWW-Authenticate": "Bearer"}
        )

    # --- the operations: each one's handler, declared in ROUTES below --------------------------

    def list_pets(self, call: Call) -> FakeResponse:
        query = call.query
        unknown = [name for name in query if name not in _LIST_PARAMETERS]
        if unknown:
            # Strict, so a misspelt parameter (limt=5) fails a test instead of being ignored.
            raise BadRequest(
                400,
                "invalid_parameter",
                f"Unknown query parameter {unknown[0][:40]!r}; GET /pets takes {' and '.join(_LIST_PARAMETERS)}.",
            )
        limit = 20
        if "limit" in query:
            values = query["limit"]
            raw = values[0]
            # The length check first: int() of thousands of digits raises.
            if len(values) > 1 or not _DIGITS.fullmatch(raw) or len(raw) > 3 or not LIMIT_MIN <= int(raw) <= LIMIT_MAX:
                raise BadRequest(
                    400, "invalid_parameter", f"limit: must be an integer from 1 to 100, got {', '.join(values)[:40]!r}"
                )
            limit = int(raw)
        wanted: str | None = None
        if "status" in query:
            values = query["status"]
            if len(values) > 1 or values[0] not in _STATUSES:
                raise BadRequest(
                    400,
                    "invalid_parameter",
                    f"status: must be one of {', '.join(_STATUSES)}, got {', '.join(values)!r}",
                )
            wanted = values[0]
        with self._lock:
            chosen = [p for _, p in sorted(self._pets.items()) if wanted is None or p.status == wanted][:limit]
        return ok(200, [pet.to_dict() for pet in chosen])

    def create_pet(self, call: Call) -> FakeResponse:
        data = json_object(call.headers, call.body)
        problems: list[str] = []
        name = data.get("name")
        if "name" not in data:
            problems.append("name: required")
        elif not isinstance(name, str):
            problems.append(f"name: must be a string, got {describe(name)}")
        category_id = data.get("categoryId")
        if "categoryId" not in data:
            problems.append("categoryId: required")
        elif not is_int64(category_id):
            problems.append(f"categoryId: must be an integer within int64, got {describe(category_id)}")
        status = data.get("status")
        if "status" in data and status not in _STATUSES:
            problems.append(f"status: must be one of {', '.join(_STATUSES)}, got {describe(status)}")
        if problems:
            raise BadRequest(400, "invalid_body", "; ".join(problems))
        with self._lock:
            pet_id = next(self._ids)
            if pet_id > INT64_MAX:
                # Only a seeded pet with the largest id leads here; an id past int64 would break every client.
                raise BadRequest(507, "insufficient_storage", f"No id is left: ids are int64 and {INT64_MAX} is taken.")
            pet = Pet(
                id=pet_id,
                name=str(name),
                category_id=int(category_id),  # type: ignore[arg-type]  # checked by _is_int64
                status=PetStatus(status) if status is not None else None,
            )
            self._pets[pet.id] = pet
        return ok(201, pet.to_dict())

    def get_pet(self, call: Call) -> FakeResponse:
        raw_id = call.params["petId"]
        if not _SIGNED.fullmatch(raw_id) or not INT64_MIN <= int(raw_id) <= INT64_MAX:
            raise BadRequest(400, "invalid_parameter", f"petId: must be an integer within int64, got {raw_id[:40]!r}")
        with self._lock:
            pet = self._pets.get(int(raw_id))
        if pet is None:
            return error_response(404, "not_found", f"No pet with id {int(raw_id)}.")
        return ok(200, pet.to_dict())

    def send_message(self, call: Call) -> FakeResponse:
        data = json_object(call.headers, call.body)
        message = data.get("message")
        if not isinstance(message, str):
            problem = "required" if "message" not in data else f"must be a string, got {describe(message)}"
            raise BadRequest(400, "invalid_body", f"message: {problem}")
        reply = {
            "id": f"msg_{uuid.uuid4().hex[:16]}",
            "message": message,
            "status": "queued",
            "createdAt": datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z"),
        }
        return ok(202, reply)


ROUTES: Routes[Service] = Routes(
    Route("GET", "/pets", Service.list_pets),
    Route("POST", "/pets", Service.create_pet),
    Route("GET", "/pets/{petId}", Service.get_pet, headers={"Deprecation": DEPRECATION, "Sunset": SUNSET}),
    Route("POST", "/messages", Service.send_message),
)
"""The operations the store serves: a new one is a handler above, any state it keeps, and a line here."""
