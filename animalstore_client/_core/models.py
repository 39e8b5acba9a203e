"""The service's resources as frozen attrs classes, and what the converter must know of them.

Attributes are snake_case; ``_core.serde``'s converter gives them camelCase JSON names and strict types. What is
particular to these models is registered with it at the bottom: `MODELS`, the status hooks and the fast paths.
"""

from __future__ import annotations

import enum
from typing import Any, Literal, Self

import attrs

from animalstore_client._core.exceptions import ClientValidationError
from animalstore_client._core.serde import describe, register, structure_argument, structure_str, unstructure

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
        return unstructure(self)

    @classmethod
    def from_dict(cls, data: object) -> Self:
        """Build from JSON data; raises `ClientValidationError` naming each bad field."""
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


MODELS: tuple[type[_JSONModel], ...] = (Pet, NewPet, ErrorBody)
"""Every model, the one list the converter is given (tests/test_models.py fails on a model left out)."""


def _structure_status(value: object, _: type) -> PetStatus:
    # A value this SDK does not know is kept (see PetStatus), not refused as Enum would.
    return pet_status_from_wire(structure_str(value))


def _status_to_json(status: PetStatus) -> str:
    # The plain string, not the member: to_dict() output must compare and dump as JSON.
    return status._value_


_UNKNOWN: Any = object()
# None maps to None so that an absent status needs no branch.
_STATUS_OR_NONE: dict[object, PetStatus | None] = {None: None}
_STATUS_OR_NONE.update(KNOWN_STATUSES)


# Pets are built by setting their slots directly: attrs' frozen __init__ goes through object.__setattr__
# once per field, a third of the cost of a page (tests/test_models.py compares the result with Pet(...)).
_new_object = object.__new__
if [field.name for field in attrs.fields(Pet)] != ["id", "name", "category_id", "status"]:
    raise ImportError("Pet's fields changed: models._fast_pets sets exactly id, name, category_id and status")
_SETTERS = tuple(getattr(Pet, field.name).__set__ for field in attrs.fields(Pet))
_SET_ID, _SET_NAME, _SET_CATEGORY_ID, _SET_STATUS = _SETTERS


def _fast_pets(items: list[dict[str, object]]) -> list[Pet] | None:
    """Pets from well-formed items, or None to let the checked hooks name every fault by its JSON path.

    Each field is type-checked as it is read (the same rules as the hooks). A status that is not a known
    value is marked _UNKNOWN and resolved afterwards, so one new status does not send a whole page down the
    checked path.
    """
    status_of = _STATUS_OR_NONE.get
    new, (set_id, set_name, set_category_id, set_status) = _new_object, _SETTERS
    pets: list[Pet] = []
    append = pets.append
    unknown = False
    try:
        for item in items:
            id_, name, category_id = item["id"], item["name"], item["categoryId"]
            # __class__ rather than isinstance(): JSON true must not pass as 1.
            if id_.__class__ is not int or name.__class__ is not str or category_id.__class__ is not int:
                return None
            status = status_of(item.get("status"), _UNKNOWN)
            if status is _UNKNOWN:
                unknown = True
            pet = new(Pet)
            set_id(pet, id_)
            set_name(pet, name)
            set_category_id(pet, category_id)
            set_status(pet, status)
            append(pet)
    except (KeyError, TypeError, AttributeError):
        return None
    return _resolve_unknown(items, pets) if unknown else pets


def _resolve_unknown(items: list[dict[str, object]], pets: list[Pet]) -> list[Pet] | None:
    """Put a `PetStatus` holding each unknown status string in its pet; None if one is not a string."""
    for index, pet in enumerate(pets):
        if pet.status is _UNKNOWN:
            raw = items[index].get("status")
            if not isinstance(raw, str):
                return None  # the checked hooks say what is wrong with it
            pets[index] = Pet(pet.id, pet.name, pet.category_id, pet_status_from_wire(raw))
    return pets


def _structure_pet(value: object) -> Pet | None:
    pets = _fast_pets([value])  # type: ignore[list-item]  # anything but a dict fails the fast path
    return None if pets is None else pets[0]


def _structure_pet_list(value: object) -> list[Pet] | None:
    # cattrs would iterate a dict's keys or a string's characters.
    if type(value) is not list:
        raise TypeError(f"expected a JSON array, got {describe(value)}")
    return _fast_pets(value)  # pyright: ignore[reportUnknownArgumentType]


def _new_pet_to_dict(new_pet: NewPet) -> dict[str, Any]:
    data: dict[str, Any] = {"name": new_pet.name, "categoryId": new_pet.category_id}
    if new_pet.status is not None:
        data["status"] = new_pet.status._value_
    return data


register(
    MODELS,
    scalars={PetStatus: (_structure_status, _status_to_json)},
    fast_structure={Pet: _structure_pet, list[Pet]: _structure_pet_list},
    fast_unstructure={NewPet: _new_pet_to_dict},
)
