"""The one cattrs converter: camelCase names, strict types, and JSON in and out.

cattrs on its own turns ``"42"`` and ``42.9`` into ``42`` and ``1`` into ``"1"``; a client that silently "fixes"
what the service sent hides a broken deployment, so the hooks here refuse them. ``_core.models`` registers its
models with `register`; the converter is built on first use: generating its hooks is the costly part.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar, cast

import attrs
import cattrs
from cattrs.gen import make_dict_structure_fn, make_dict_unstructure_fn, override

from animalstore_client._core.exceptions import ClientValidationError

T = TypeVar("T")
ScalarHooks = tuple[Callable[[Any, type[Any]], Any], Callable[[Any], Any]]
"""A type's (structure, unstructure) hooks: ``structure(value, type)`` and ``unstructure(obj)``."""

_MODELS: list[type[Any]] = []
"""The attrs classes the converter reads and writes as JSON objects, as `register` was given them."""
_SCALARS: dict[type[Any], ScalarHooks] = {}
_FAST_STRUCTURE: dict[object, Callable[[Any], Any]] = {}
_FAST_UNSTRUCTURE: dict[type[Any], Callable[[Any], dict[str, Any]]] = {}
# Python attribute names back to JSON names, for messages the user reads.
_JSON_NAMES: dict[str, str] = {}


class StructureError(Exception):
    """Data did not match a model; `problems` holds one line per fault."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("; ".join(problems))
        self.problems = problems


def camel(name: str) -> str:
    """``category_id`` -> ``categoryId``."""
    first, *rest = name.split("_")
    return first + "".join(word.capitalize() for word in rest)


def describe(value: object) -> str:
    """``value`` as a structure fault names it: its repr, cut at 60 characters."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _structure_int(value: object, _: type) -> int:
    # bool is an int subclass, and JSON true must not become 1.
    if type(value) is int or (isinstance(value, int) and not isinstance(value, bool)):
        return int(value)
    raise TypeError(f"expected an integer, got {describe(value)}")


def structure_str(value: object, _: type = str) -> str:
    """A JSON string as a str; anything else raises the fault the messages show."""
    if isinstance(value, str):
        return str(value)
    raise TypeError(f"expected a string, got {describe(value)}")


def register(
    models: Iterable[type[Any]],
    *,
    scalars: Mapping[type[Any], ScalarHooks],
    fast_structure: Mapping[object, Callable[[Any], Any]],
    fast_unstructure: Mapping[type[Any], Callable[[Any], dict[str, Any]]],
) -> None:
    """Teach the converter the models; ``_core.models`` calls it once, when it is imported.

    ``models`` are attrs classes, read and written as JSON objects. ``scalars`` maps a type to its `ScalarHooks`.
    ``fast_structure`` maps a type to a function `structure` tries first: it returns the object, or None to let the
    checked hooks name every fault. ``fast_unstructure`` maps a class to the function that writes it, so
    `unstructure` need not build the converter.
    """
    if _converter.cache_info().currsize:
        raise RuntimeError("register() after the converter was built: its hooks would not include these")
    for model in models:
        _MODELS.append(model)
        _JSON_NAMES.update({a.name: camel(a.name) for a in attrs.fields(model)})
    _SCALARS.update(scalars)
    _FAST_STRUCTURE.update(fast_structure)
    _FAST_UNSTRUCTURE.update(fast_unstructure)


@functools.cache
def _converter() -> cattrs.Converter:
    """The one converter, built on first use from what was registered."""
    converter = cattrs.Converter(detailed_validation=True)
    converter.register_structure_hook(int, _structure_int)
    converter.register_structure_hook(str, structure_str)
    for scalar, (structure_hook, unstructure_hook) in _SCALARS.items():
        converter.register_structure_hook(scalar, structure_hook)
        converter.register_unstructure_hook(scalar, unstructure_hook)
    for model in _MODELS:
        _register_model(converter, model)
    return converter


def _register_model(converter: cattrs.Converter, cls: type[Any]) -> None:
    renames = {a.name: override(rename=camel(a.name)) for a in attrs.fields(cls) if camel(a.name) != a.name}
    structure = make_dict_structure_fn(cls, converter, **renames)  # type: ignore[arg-type]

    def structure_object(value: object, _: type) -> Any:
        if not isinstance(value, dict):
            raise TypeError(f"expected a JSON object, got {describe(value)}")
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
    unstructure = make_dict_unstructure_fn(cls, converter, **unstructure_overrides)  # type: ignore[arg-type]
    converter.register_unstructure_hook(cls, unstructure)


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
        # The hot cases (a page of pets) skip the converter's dispatch, and its building.
        fast = _FAST_STRUCTURE.get(cls)
        if fast is not None:
            built: T | None = fast(data)
            if built is not None:
                return built
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
    fast = _FAST_UNSTRUCTURE.get(type(obj))
    if fast is not None:  # every create_pet: no converter to build
        return fast(obj)
    return cast("dict[str, Any]", _converter().unstructure(obj))


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
