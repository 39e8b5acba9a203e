"""The service's resources as frozen attrs classes.

Attributes are snake_case; the JSON names (camelCase) and every conversion
rule live in the one converter in ``_serde``, not here.
"""

from __future__ import annotations

import enum
from typing import Any, Literal

import attrs
from typing_extensions import Self

__all__ = ["ErrorBody", "NewPet", "Pet", "PetStatus", "PetStatusLiteral"]

PetStatusLiteral = Literal["available", "pending", "sold"]
"""The wire values of `PetStatus`, accepted wherever a status is: ``status="available"``.

A misspelt value (``"availble"``) is then a type error in mypy and pyright,
not only a `ClientValidationError` at run time.
"""


class PetStatus(str, enum.Enum):
    """An animal's availability.

    A value the SDK does not know yet (the service may add one) is kept rather
    than rejected: it arrives as a `PetStatus` whose value is the new string,
    so ``pet.status == "adopted"`` holds and ``pet.status in PetStatus`` does
    not. Arguments sent to the service must be one of the members below.
    """

    AVAILABLE = "available"
    """The wire value ``"available"``."""
    PENDING = "pending"
    """The wire value ``"pending"``."""
    SOLD = "sold"
    """The wire value ``"sold"``."""

    def __str__(self) -> str:
        # str-mixin enums print as "PetStatus.SOLD" before 3.12; the wire
        # value is what users compare and print.
        return self.value

    def __reduce_ex__(self, protocol: Any) -> tuple[Any, ...]:
        # The default reduce calls PetStatus(value), which refuses an
        # unknown value; this keeps unknown values picklable too.
        return (pet_status_from_wire, (self._value_,))

    @property
    def is_known(self) -> bool:
        """Whether this is one of the members this SDK version knows."""
        return self._value_ in KNOWN_STATUSES


KNOWN_STATUSES: dict[str, PetStatus] = {member.value: member for member in PetStatus}
"""The members this SDK version knows, by wire value."""


def _status(value: PetStatus | PetStatusLiteral | None) -> PetStatus | None:
    """A model's ``status``: a member (known or kept from the service) as it is, a wire value as its member."""
    if value is None or isinstance(value, PetStatus):
        return value
    member = KNOWN_STATUSES.get(value) if isinstance(value, str) else None  # pyright: ignore[reportUnnecessaryIsInstance]
    if member is None:
        from ._exceptions import ClientValidationError

        values = ", ".join(repr(m.value) for m in PetStatus)
        raise ClientValidationError(
            f"status must be a PetStatus or one of {values}, got {value!r}"[:300],
            argument="status",
            rule=f"a PetStatus or one of {values}",
            value=value,
        )
    return member


def pet_status_from_wire(value: str) -> PetStatus:
    """The member for ``value``, or a new `PetStatus` holding an unknown value."""
    member = KNOWN_STATUSES.get(value)
    if member is not None:
        return member
    # Made around Enum's __new__, which refuses a value it does not know: a str of the PetStatus
    # class with Enum's documented _value_ and _name_ set (checked below, when this module is imported).
    unknown = str.__new__(PetStatus, value)
    unknown._value_ = value
    unknown._name_ = value.upper()
    return unknown


def _check_unknown_status() -> None:
    """Fail loudly, naming it, if an unknown status made as above no longer behaves as a PetStatus."""
    made = pet_status_from_wire("adopted")
    if (
        type(made) is not PetStatus
        or str(made) != "adopted"
        or getattr(made, "value", None) != "adopted"
        or made.is_known
    ):
        raise ImportError(
            "animalstore_client keeps a status it does not know as a PetStatus made with str.__new__ and Enum's "
            "_value_ and _name_; this Python's enum no longer allows it: install a newer animalstore-client"
        )


_check_unknown_status()


class _JSONModel:
    """``to_dict`` and ``from_dict`` for the models, through the one converter."""

    __slots__ = ()

    def to_dict(self) -> dict[str, Any]:
        """This object as JSON-ready data with the service's (camelCase) names."""
        from ._serde import unstructure

        return unstructure(self)

    @classmethod
    def from_dict(cls, data: object) -> Self:
        """Build from JSON data; raises `ClientValidationError` naming each bad field."""
        from ._serde import structure_argument

        return structure_argument(data, cls)


@attrs.frozen
class NewPet(_JSONModel):
    """The request body of `create_pet`.

    ```python
    NewPet(name="Rex", category_id=3).to_dict()
    # {'name': 'Rex', 'categoryId': 3}
    ```
    """

    name: str
    category_id: int
    status: PetStatus | None = attrs.field(default=None, converter=_status)


@attrs.frozen
class Pet(_JSONModel):
    """An animal as the service returns it.

    ```python
    pet = Pet.from_dict({"id": 1, "name": "Rex", "categoryId": 3, "status": "sold"})
    assert pet.category_id == 3 and pet.status is PetStatus.SOLD
    ```
    """

    id: int
    name: str
    category_id: int
    status: PetStatus | None = attrs.field(default=None, converter=_status)


@attrs.frozen
class ErrorBody(_JSONModel):
    """The service's Error object, carried by every error response.

    ```python
    ErrorBody.from_dict({"code": "not_found", "message": "No pet 7", "status": 404})
    ```
    """

    code: str
    message: str
    status: int
