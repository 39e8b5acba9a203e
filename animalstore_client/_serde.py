"""The one cattrs converter: camelCase names, strict types, unknown enum values kept.

cattrs on its own turns ``"42"`` and ``42.9`` into ``42``, ``1`` into ``"1"``
and raises on an unknown enum value; a client that silently "fixes" what the
service sent hides a broken deployment, so the hooks here refuse the first
three and keep the last. Hooks are built once, on first use.
"""

from __future__ import annotations

import functools
import json
import re
from typing import Any, NamedTuple, TypeVar, cast

import attrs
import cattrs
from cattrs.gen import make_dict_structure_fn, make_dict_unstructure_fn, override

from ._exceptions import ClientValidationError
from ._models import KNOWN_STATUSES, ErrorBody, NewPet, Pet, PetStatus, pet_status_from_wire

T = TypeVar("T")

_MODELS: tuple[type[Any], ...] = (Pet, NewPet, ErrorBody)


class StructureError(Exception):
    """Data did not match a model; `problems` holds one line per fault."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("; ".join(problems))
        self.problems = problems


def camel(name: str) -> str:
    """``category_id`` -> ``categoryId``."""
    first, *rest = name.split("_")
    return first + "".join(word.capitalize() for word in rest)


def _describe(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _structure_int(value: object, _: type) -> int:
    # bool is an int subclass, and JSON true must not become 1.
    if type(value) is int or (isinstance(value, int) and not isinstance(value, bool)):
        return int(value)
    raise TypeError(f"expected an integer, got {_describe(value)}")


def _structure_str(value: object, _: type) -> str:
    if isinstance(value, str):
        return str(value)
    raise TypeError(f"expected a string, got {_describe(value)}")


def _structure_status(value: object, _: type) -> PetStatus:
    if isinstance(value, str):
        return pet_status_from_wire(value)
    raise TypeError(f"expected a string, got {_describe(value)}")


_UNKNOWN: Any = object()
# None maps to None so that an absent status needs no branch.
_STATUS_OR_NONE: dict[object, PetStatus | None] = {}
_STATUS_OR_NONE.update(KNOWN_STATUSES)
_STATUS_OR_NONE[None] = None


# Pets are built by setting their slots directly: attrs' frozen __init__
# goes through object.__setattr__ once per field, and that is a third of the
# cost of a page. The result is the same object (tests/test_models.py compares
# it field for field with Pet(...), and fails if Pet gains a field).
_new_object = object.__new__
if [field.name for field in attrs.fields(Pet)] != ["id", "name", "category_id", "status"]:
    raise ImportError("Pet's fields changed: _serde._fast_pets sets exactly id, name, category_id and status")
_SET_ID, _SET_NAME, _SET_CATEGORY_ID, _SET_STATUS = (getattr(Pet, field.name).__set__ for field in attrs.fields(Pet))


def _fast_pets(items: list[dict[str, object]]) -> list[Pet] | None:
    """Pets from well-formed items, or None to let the checked hooks explain the fault.

    This runs for every pet of every response, so it is the one place written
    for speed: each field is type-checked as it is read and the Pet built
    without its __init__ (see above). A missing field or an item that is not
    an object raises, a wrong type returns None, and either way the checked
    hooks take over to name every fault by its JSON path. A status that is
    not a known value is marked _UNKNOWN and resolved afterwards, so one new
    status from the service does not send a whole page down the checked path.
    """
    status_of = _STATUS_OR_NONE.get
    new, set_id, set_name, set_category_id, set_status = (
        _new_object,
        _SET_ID,
        _SET_NAME,
        _SET_CATEGORY_ID,
        _SET_STATUS,
    )
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


def _structure_pet(value: object, _: type = Pet) -> Pet:
    pets = _fast_pets([value])  # type: ignore[list-item]  # anything but a dict fails the fast path
    if pets is None:
        checked: Pet = _hooks().checked_pet(value, Pet)
        return checked
    return pets[0]


def _structure_pet_list(value: object, _: type = list) -> list[Pet]:
    # cattrs would iterate a dict's keys or a string's characters.
    if type(value) is not list:
        raise TypeError(f"expected a JSON array, got {_describe(value)}")
    pets = _fast_pets(value)  # pyright: ignore[reportUnknownArgumentType]
    if pets is None:
        checked: list[Pet] = _hooks().checked_list(value, list[Pet])
        return checked
    return pets


def _new_pet_to_dict(new_pet: NewPet) -> dict[str, Any]:
    data: dict[str, Any] = {"name": new_pet.name, "categoryId": new_pet.category_id}
    if new_pet.status is not None:
        data["status"] = new_pet.status._value_
    return data


class _Hooks(NamedTuple):
    converter: cattrs.Converter
    checked_pet: Any
    """The generated Pet hook: checks every field and names every fault."""
    checked_list: Any
    """The generated list[Pet] hook, calling checked_pet for each item."""


def _converter() -> cattrs.Converter:
    """The one converter."""
    return _hooks().converter


@functools.cache
def _hooks() -> _Hooks:
    """Build the converter on first use: generating its hooks is the costly part of importing."""
    converter = cattrs.Converter(detailed_validation=True)
    converter.register_structure_hook(int, _structure_int)
    converter.register_structure_hook(str, _structure_str)
    converter.register_structure_hook(PetStatus, _structure_status)
    # The plain string, not the member: to_dict() output must compare and dump as JSON.
    converter.register_unstructure_hook(PetStatus, lambda status: status._value_)
    for model in _MODELS:
        _register(converter, model)
    # The generated hooks check every field and explain every fault, at a cost
    # of several calls per field. Pets arrive by the hundred on every list
    # call, so well-formed ones take the fast paths above (the same rules,
    # written out) and only a faulty payload reaches the generated hooks.
    hooks = _Hooks(converter, converter.get_structure_hook(Pet), converter.get_structure_hook(list[Pet]))
    converter.register_structure_hook(Pet, _structure_pet)
    converter.register_structure_hook_func(lambda t: t == list[Pet], _structure_pet_list)
    converter.register_unstructure_hook(NewPet, _new_pet_to_dict)
    return hooks


def _register(converter: cattrs.Converter, cls: type[Any]) -> None:
    renames = {a.name: override(rename=camel(a.name)) for a in attrs.fields(cls) if camel(a.name) != a.name}
    structure = make_dict_structure_fn(cls, converter, **renames)  # type: ignore[arg-type]

    def structure_object(value: object, _: type) -> Any:
        if not isinstance(value, dict):
            raise TypeError(f"expected a JSON object, got {_describe(value)}")
        return structure(cast("dict[str, Any]", value), cls)

    converter.register_structure_hook(cls, structure_object)
    # None-valued optional fields are left out of the JSON rather than sent
    # as null: the interface marks them optional, not nullable.
    unstructure_overrides = {
        a.name: override(
            rename=camel(a.name) if camel(a.name) != a.name else None,
            omit_if_default=a.default is None,
        )
        for a in attrs.fields(cls)
    }
    converter.register_unstructure_hook(
        cls,
        make_dict_unstructure_fn(cls, converter, **unstructure_overrides),  # type: ignore[arg-type]
    )


# Python attribute names back to JSON names, for messages the user reads.
_JSON_NAMES = {a.name: camel(a.name) for cls in _MODELS for a in attrs.fields(cls)}
_PATH_SEGMENT = re.compile(r"\.([A-Za-z_][A-Za-z0-9_]*)")


def _json_path(path: str) -> str:
    return _PATH_SEGMENT.sub(lambda m: "." + _JSON_NAMES.get(m.group(1), m.group(1)), path)


def _format(exc: BaseException, type_: Any) -> str:
    if isinstance(exc, KeyError):
        return "required field missing"
    if isinstance(exc, (TypeError, ValueError)) and str(exc).startswith("expected "):
        return str(exc)
    return cattrs.v.format_exception(exc, type_)


def _problems(exc: Exception) -> list[str]:
    lines: list[str] = []
    for line in cattrs.transform_error(exc, path="$", format_exception=_format):
        message, _, path = line.rpartition(" @ ")
        lines.append(f"{_json_path(path)}: {message}" if message else line)
    return lines


def structure(data: object, cls: type[T]) -> T:
    """Turn JSON data into ``cls``; raises `StructureError` listing every fault."""
    try:
        # The two hot cases skip the converter's dispatch (and its building).
        if cls is Pet:
            return _structure_pet(data)  # type: ignore[return-value]
        if cls == list[Pet]:
            return _structure_pet_list(data)  # type: ignore[return-value]
        return _converter().structure(data, cls)
    except (cattrs.BaseValidationError, TypeError, ValueError) as exc:
        raise StructureError(_problems(exc)) from exc


def structure_argument(data: object, cls: type[T]) -> T:
    """`structure` for data a caller passed in: faults raise `ClientValidationError`."""
    try:
        return structure(data, cls)
    except StructureError as exc:
        name = getattr(cls, "__name__", str(cls))
        raise ClientValidationError(
            f"data is not a valid {name}: " + "; ".join(exc.problems),
            argument="data",
            rule=f"a JSON object matching {name}",
            value=data,
        ) from exc.__cause__


def unstructure(obj: object) -> dict[str, Any]:
    """A model as JSON-ready data with camelCase names."""
    if type(obj) is NewPet:  # every create_pet; skip building the converter
        return _new_pet_to_dict(obj)
    result: dict[str, Any] = _converter().unstructure(obj)
    return result


def _reject_constant(name: str) -> object:
    raise ValueError(f"{name} is not valid JSON")


# Built once: json.loads with any keyword argument builds a decoder per call.
_DECODER = json.JSONDecoder(parse_constant=_reject_constant)


def loads(content: bytes) -> object:
    """Parse JSON strictly: ``NaN`` and ``Infinity`` are refused, as RFC 8259 does."""
    # The same decoding of bytes as json.loads (UTF-8, -16 or -32, BOM allowed).
    return _DECODER.decode(content.decode(json.detect_encoding(content), "surrogatepass"))


def dumps(data: object) -> bytes:
    """Serialize JSON compactly; ``NaN`` is refused rather than sent."""
    return json.dumps(data, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode()
