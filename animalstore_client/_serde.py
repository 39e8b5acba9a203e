"""The one cattrs converter: camelCase names, strict types, unknown enum values kept.

cattrs on its own turns ``"42"`` and ``42.9`` into ``42``, ``1`` into ``"1"``
and raises on an unknown enum value; a client that silently "fixes" what the
service sent hides a broken deployment, so the hooks here refuse the first
three and keep the last. Hooks are built once, at import.
"""

from __future__ import annotations

import json
import re
from typing import Any, TypeVar, cast

import attrs
import cattrs
from cattrs.gen import make_dict_structure_fn, make_dict_unstructure_fn, override

from ._exceptions import ClientValidationError
from ._models import ErrorBody, NewPet, Pet, PetStatus, pet_status_from_wire

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


converter = cattrs.Converter(detailed_validation=True)
converter.register_structure_hook(int, _structure_int)
converter.register_structure_hook(str, _structure_str)
converter.register_structure_hook(PetStatus, _structure_status)
# The plain string, not the member: to_dict() output must compare and dump as JSON.
converter.register_unstructure_hook(PetStatus, lambda status: status._value_)


def _register(cls: type[Any]) -> None:
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


for _model in _MODELS:
    _register(_model)


_structure_list_items = converter.get_structure_hook(list[Pet])


def _structure_pet_list(value: object, _: type) -> list[Pet]:
    # cattrs would iterate a dict's keys or a string's characters.
    if not isinstance(value, list):
        raise TypeError(f"expected a JSON array, got {_describe(value)}")
    result: list[Pet] = _structure_list_items(value, list[Pet])
    return result


converter.register_structure_hook_func(lambda t: t == list[Pet], _structure_pet_list)

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
        return converter.structure(data, cls)
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
    result: dict[str, Any] = converter.unstructure(obj)
    return result


def _reject_constant(name: str) -> object:
    raise ValueError(f"{name} is not valid JSON")


def loads(content: bytes) -> object:
    """Parse JSON strictly: ``NaN`` and ``Infinity`` are refused, as RFC 8259 does."""
    return json.loads(content, parse_constant=_reject_constant)


def dumps(data: object) -> bytes:
    """Serialize JSON compactly; ``NaN`` is refused rather than sent."""
    return json.dumps(data, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode()
