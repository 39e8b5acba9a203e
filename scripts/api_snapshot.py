"""Keep each release's public API as a snapshot under ``api/``, and fail on a change that breaks it.

    python scripts/api_snapshot.py dump    # write api/<__version__>.json (when a release is cut)
    python scripts/api_snapshot.py check   # exit 1 on a breaking change since the latest snapshot (CI runs this)

``dump`` refuses to rewrite a snapshot with a different API (``__version__``
not bumped yet?) or to write one older than the latest, unless given ``--force``.
Both take ``--package-dir DIR``, the directory that holds ``animalstore_client/``
(default: this checkout), so an old release's tree can be snapshotted with this
script (``git worktree add /tmp/old <commit>``, then ``dump --package-dir /tmp/old``),
and ``--api-dir DIR`` for the snapshots (default: ``api/``). The package is read
by griffe from its source, never imported. The version is ``__version__`` in
``animalstore_client/_version.py``, read as text.

What a snapshot holds: the names in ``animalstore_client.__all__`` and
``animalstore_client.testing.__all__``, each as the object it names (the class,
function or constant, wherever it is defined), and for each class its public
members (no leading underscore; dunders such as ``__init__`` count), inherited
ones included, since users call them on the public class whichever base holds
them. Functions keep their parameters (name, kind, annotation, default) and
return annotation; attributes their annotation and value; classes their public
bases; each object griffe's labels, which hold a function's kind (``async``,
``classmethod``, ``staticmethod``; griffe reads a property as an attribute
labelled ``property``, ``writable`` with a setter, ``cached`` for a
``cached_property``). It is griffe's own JSON format (``griffe.json_decoder``
reads it back), with three choices made for a file kept in the repository:

- Annotations, defaults and values are stored as source text (``"int | None"``),
  not as griffe's expression trees: they read as the code does, and a diff
  between two snapshots shows the API change and nothing else.
- No line numbers, file paths or docstrings: they change with every edit and
  are not part of the API; with them, two snapshots would differ on every line.
  ``check`` reports the source file and line of each finding from HEAD instead.
- Members are sorted by name; parameters keep their order (it is API).
- An instance attribute's value (what ``__init__`` assigns to it) and dunder
  attributes such as ``__slots__`` are left out: how a class is built, not API.

What griffe does not see is added here, narrowly. attrs classes (``Pet``,
``NewPet``, ...) get the ``__init__`` attrs writes (their fields in order, with
their defaults), so removing a field or making one required is reported as for
any constructor. Bases private to the package (``_JSONModel``) are left out:
their public members are listed on the class itself, so moving code between
private bases is no change to users. Since format 2, two facts per class, each
written only where it applies (so in format 2 a class without it is none):
``"protocol": {"runtime_checkable": ...}`` for a ``typing.Protocol`` (Protocol
among its own bases), and ``"attrs": {"frozen", "hashable", "slots", "eq",
"order"}`` for an attrs class, worked out from its decorator with attrs' own
rules (see ``attrs_facts``; tests/test_api_snapshot.py holds them to what attrs
builds). The snapshots of 1.1.0 to 1.3.0 were given these facts from their
release commits' trees; the rest of each file was left as committed.

How ``check`` decides. It compares HEAD with the snapshot of the highest
version under ``api/`` (versions compared as numbers; no git tags or history
are used), which may be HEAD's own version once that release is cut. Every
breaking change is reported with its public path, what changed and where HEAD
defines it. griffe's ``find_breaking_changes`` finds a removed public name,
member or parameter (an enum member included), a parameter moved, made
required, changed in kind or in default, a required parameter added. griffe
compares no values, bases, annotations, kinds or class facts; this script does:

- Bases. Each public base a class had in the snapshot must still be among its
  ancestors in HEAD (through any base, private ones included, by the name as
  written or the class's own name): ``APITimeoutError(APIConnectionError)`` ->
  ``(APIError)`` is reported as a replaced base, a dropped ``ValueError`` as a
  removed one. A new base, or an old one reached through a new class between,
  is compatible.
- Values. The value of every attribute the snapshot records (exported
  constants such as ``testing.FAKE_BASE_URL``, enum members such as
  ``PetStatus.AVAILABLE``, class attributes) must be the same source text once
  normalised (one quoting and spacing; arithmetic on number literals computed,
  so ``10 * 1024 * 1024`` is ``10485760`` but ``30`` is not ``30.0``). Not
  compared: ``__version__``, instance attributes' values, attrs fields'
  defaults (compared as their ``__init__`` parameters'), and the ``DEFAULT_*``
  constants (``DEFAULT_MAX_RETRIES``): a default of the SDK's behaviour, whose
  change code that reads it survives; tests/test_defaults.py is its pin, and
  the CHANGELOG says what changed.
- Aliases. A ``Literal[...]`` alias (``BackendName``) and a ``TypeAlias``
  union (``HTTPClient``) say what callers pass: a member added (a new backend)
  is compatible, a member removed breaks code that passes it; an alias that is
  no longer a plain ``Literal[...]`` is reported, since it can no longer be
  compared.
- Kinds. A function or method made ``async``, or no longer ``async``; a
  method's kind changed between method, ``classmethod`` and ``staticmethod``
  (reported once: the receiver, ``self`` or ``cls``, is not compared as a
  parameter of a method whose kind changed); a property made a method (griffe's
  "different kind of object", written ``property -> method``); a property that
  lost its setter or deleter.
- Protocols users implement. Every public ``typing.Protocol`` (``Middleware``,
  ``CallNext``, ...) is taken to be one users write classes for as well as
  call, so what may only widen or only narrow for a caller may not change at
  all: any change to a member's parameter or return annotation (once
  normalised, as below) is reported, and so is an optional parameter added to
  a member, a member added, a runtime_checkable decorator removed, and a class
  that stops being, or becomes, a Protocol.
- attrs classes. Made mutable or made frozen (fields set, or no longer
  settable), no longer hashable, given ``__slots__``, ``==`` changed between
  value and identity, ordering lost, no longer an attrs class
  (``attrs.evolve`` fails): one finding per class, named by its main change
  (``@attrs.frozen`` -> ``@attrs.define`` is "no longer frozen", and says
  instances no longer hash).
- Facts an old snapshot lacks. A format 1 snapshot records no class facts:
  each is unknown, and no finding is made of it; whether a class is a Protocol
  is then taken from HEAD. Labels are in every format.
- Annotations, as sets of union members. An annotation is parsed and
  normalised: ``Optional[X]`` is ``X | None``, ``Union[A, B]`` is ``A | B``,
  ``Literal[a, b]`` is ``Literal[a] | Literal[b]``, ``typing.`` is dropped, and
  members are unordered (also inside ``list[...]`` and other generics). A
  parameter's annotation may widen: compatible when its new members include
  all the old ones (``int`` -> ``int | None``). A return's, or an attribute's
  (users read it; what they pass goes through ``__init__``, whose parameters
  are checked), may narrow: compatible when its new members are among the old
  ones (``Pet | None`` -> ``Pet``). An annotation added where there was none is
  compatible, one removed is compatible for a parameter and breaking for a
  return. So for callers a parameter narrowed or a return widened breaks. On
  a Protocol's member any change breaks (above). Anything else is reported as
  breaking, the sound side of what text can tell: ``list[Pet]`` -> ``Pet``,
  ``int`` -> ``str``, also ``list`` -> ``Sequence`` for a parameter, and an
  alias written in place of the union it stands for (the rule compares text,
  it does not expand aliases or know subclasses). Such a change, even one a
  maintainer has found compatible by hand, needs a major version or an
  ``accepted-breaks.json`` entry with its reason.

Findings fail the check (exit 1) unless HEAD's major version is greater than
the snapshot's; then they are listed as allowed. A break made on purpose in a
minor release (a refusal that closes a security hole, say) is accepted when
``api/accepted-breaks.json`` names it under the snapshot it breaks against:
``{"1.2.0": {"<finding's first line>": "why, and what users do instead"}}`` (the line's trailing
``(old -> new)`` may be left out, so that a type alias's later, unrelated members do not stale the entry);
each is printed with its reason, and an entry no finding matches fails the
check, so the list cannot outlive what it excuses. A HEAD version lower than the
latest snapshot's fails too. Not seen: a change of behaviour no declaration
shows (what a function does, what it raises), an attribute made a read-only
property, ``abstractmethod`` added to a class users subclass, a base lost
through a private base (the snapshot holds public bases only), Protocols and
classes not in ``__all__`` (the optional libraries' Protocols that
``HTTPClient`` names) or reached only through an attribute (the
``with_raw_response`` views, which scripts/codegen.py writes from the same
declarations as the clients' methods).

Cutting a release: set ``__version__`` in ``animalstore_client/_version.py``,
date the CHANGELOG section, run ``python scripts/api_snapshot.py dump`` and
commit ``api/<version>.json`` with them (docs/architecture.md).
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import sys
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import griffe

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "animalstore_client"
PUBLIC_MODULES = (PACKAGE, f"{PACKAGE}.testing")
FORMAT = 2
"""The snapshot format: bumped if what this script writes changes, so an old snapshot is not misread.

Format 2 added the classes' ``protocol`` and ``attrs`` facts; a format 1 snapshot is still read, its facts unknown.
"""
READABLE_FORMATS = frozenset({1, FORMAT})
EXTRA = "api_snapshot"
"""The namespace of griffe's ``Object.extra`` where a decoded class keeps its facts (and the module its format)."""

# attrs' own defaults for what each class decorator makes: the new API (attrs.define and the like) writes slotted
# classes without ordering and honours a __hash__ the class defines; attr.s writes dict classes that order.
_NEW_ATTRS = {"slots": True, "eq": True, "order": False, "auto_detect": True}
_OLD_ATTRS = {"slots": False, "eq": True, "order": None, "auto_detect": False}  # order None: as eq
ATTRS_DEFAULTS: dict[str, dict[str, bool | None]] = {
    "attrs.define": {**_NEW_ATTRS, "frozen": False},
    "attrs.mutable": {**_NEW_ATTRS, "frozen": False},
    "attrs.frozen": {**_NEW_ATTRS, "frozen": True},
    "attr.define": {**_NEW_ATTRS, "frozen": False},
    "attr.mutable": {**_NEW_ATTRS, "frozen": False},
    "attr.frozen": {**_NEW_ATTRS, "frozen": True},
    "attr.s": {**_OLD_ATTRS, "frozen": False},
    "attr.attrs": {**_OLD_ATTRS, "frozen": False},
    "attr.attributes": {**_OLD_ATTRS, "frozen": False},
}
ATTRS_CLASSES = frozenset(ATTRS_DEFAULTS)
ATTRS_FIELDS = frozenset({"attrs.field", "attr.field", "attr.ib"})
VERSION = re.compile(r"(\d+(?:\.\d+)*)(?:(a|b|rc)(\d+))?")


class SnapshotError(Exception):
    """Something that stops the script, said in one sentence."""


# Versions ---------------------------------------------------------------------------------------


def read_version(package_dir: Path) -> str:
    """``__version__`` from ``_version.py``'s text (the package is not imported)."""
    path = package_dir / PACKAGE / "_version.py"
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise SnapshotError(f"cannot read {path}: {exc}") from exc
    for node in tree.body:
        if (
            isinstance(node, ast.Assign)
            and any(isinstance(target, ast.Name) and target.id == "__version__" for target in node.targets)
            and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, str)
        ):
            return node.value.value
    raise SnapshotError(f"{path} sets no __version__ = '...'")


def version_key(version: str) -> tuple[tuple[int, ...], int, int]:
    """Order versions as numbers: 1.10.0 > 1.9.0, 1.2.0rc1 < 1.2.0."""
    match = VERSION.fullmatch(version)
    if match is None:
        raise SnapshotError(f"version {version!r} is not of the form 1.2.3 (or 1.2.3rc1)")
    release = tuple(int(part) for part in match[1].split("."))
    release += (0,) * (3 - len(release))
    pre = ("a", "b", "rc").index(match[2]) if match[2] else 3
    return release, pre, int(match[3] or 0)


def major(version: str) -> int:
    return version_key(version)[0][0]


def snapshots(api_dir: Path) -> dict[str, Path]:
    """The snapshots under ``api_dir`` by version; files not named ``<version>.json`` are ignored."""
    found: dict[str, Path] = {}
    for path in api_dir.glob("*.json") if api_dir.is_dir() else ():
        if VERSION.fullmatch(path.stem):
            found[path.stem] = path
    return found


def latest_snapshot(api_dir: Path) -> tuple[str, Path]:
    found = snapshots(api_dir)
    if not found:
        raise SnapshotError(
            f"no snapshot in {api_dir}: run `python scripts/api_snapshot.py dump` on the last release's tree"
        )
    version = max(found, key=version_key)
    return version, found[version]


# The snapshot -----------------------------------------------------------------------------------


def _text(value: object) -> str | None:
    """An annotation, default or value as source text (griffe keeps expressions or strings)."""
    return None if value is None else str(value)


def _is_dunder(name: str) -> bool:
    return name.startswith("__") and name.endswith("__")


def _is_private(name: str) -> bool:
    return name.startswith("_") and not _is_dunder(name)


def _resolve(obj: griffe.Object | griffe.Alias) -> griffe.Object | griffe.Alias:
    """The object an alias points to, or the alias itself when its target is outside the package."""
    if isinstance(obj, griffe.Alias):
        try:
            return obj.final_target
        except (griffe.AliasResolutionError, griffe.CyclicAliasError):
            return obj
    return obj


def _decorator_path(decorator: griffe.Decorator) -> str:
    value = decorator.value
    if isinstance(value, str):
        return value
    if isinstance(value, griffe.ExprCall):
        value = value.function
    return value.canonical_path


def _call_arguments(value: object) -> dict[str, object] | None:
    """The keyword arguments of an ``attrs.field(...)`` call, or None if the value is not one."""
    if not isinstance(value, griffe.ExprCall):
        return None
    if value.function.canonical_path not in ATTRS_FIELDS:
        return None
    return {arg.name: arg.value for arg in value.arguments if isinstance(arg, griffe.ExprKeyword)}


def _attrs_parameter(field: griffe.Attribute, kw_only: bool) -> dict[str, Any] | None:
    """The ``__init__`` parameter attrs makes of a field (None for a ClassVar or an ``init=False`` field)."""
    annotation = _text(field.annotation)
    if annotation is None or re.match(r"(typing\.)?ClassVar\b", annotation):
        return None
    arguments = _call_arguments(field.value)
    default: str | None
    if arguments is None:  # `name: str = "x"`, or no value: required
        default, arguments = _text(field.value), {}
    elif "default" in arguments:
        default = _text(arguments["default"])
    elif "factory" in arguments:
        default = f"<factory {arguments['factory']}>"
    else:
        default = None
    if str(arguments.get("init")) == "False":
        return None
    name = str(arguments.get("alias", "")).strip("'\"") or field.name.lstrip("_")
    kind = "keyword-only" if kw_only or str(arguments.get("kw_only")) == "True" else "positional or keyword"
    return {"name": name, "kind": kind, "annotation": annotation, "default": default}


def _attrs_init(class_: griffe.Class) -> dict[str, Any] | None:
    """The ``__init__`` attrs writes for a class it decorates (None if it is no attrs class)."""
    decorators = [d for d in class_.decorators if _decorator_path(d) in ATTRS_CLASSES]
    if not decorators:
        return None
    kw_only = any(
        isinstance(arg, griffe.ExprKeyword) and arg.name == "kw_only" and str(arg.value) == "True"
        for decorator in decorators
        if isinstance(decorator.value, griffe.ExprCall)
        for arg in decorator.value.arguments
    )
    parameters: list[dict[str, Any]] = [
        {"name": "self", "kind": "positional or keyword", "annotation": None, "default": None}
    ]
    for base in class_.resolved_bases:
        base_init = _attrs_init(base) if isinstance(base, griffe.Class) else None
        if base_init is not None:
            parameters.extend(base_init["parameters"][1:])
    for member in class_.members.values():
        if isinstance(member, griffe.Attribute) and (parameter := _attrs_parameter(member, kw_only)) is not None:
            parameters.append(parameter)
    return {"kind": "function", "name": "__init__", "labels": ["attrs"], "parameters": parameters, "returns": None}


_LITERAL_FLAGS: dict[str, bool | None] = {"True": True, "False": False, "None": None}
_ATTRS_OPTIONS = frozenset({"frozen", "slots", "eq", "order", "cmp", "hash", "unsafe_hash", "auto_detect"})


def _attrs_options(class_: griffe.Class, decorator: griffe.Decorator) -> dict[str, bool | None]:
    """The decorator's options ``attrs_facts`` reads; one that is not a literal True, False or None stops the dump."""
    if not isinstance(decorator.value, griffe.ExprCall):
        return {}
    options: dict[str, bool | None] = {}
    for argument in decorator.value.arguments:
        if not isinstance(argument, griffe.ExprKeyword) or argument.name not in _ATTRS_OPTIONS:
            continue
        text = str(argument.value)
        if text not in _LITERAL_FLAGS:
            raise SnapshotError(
                f"{class_.path}: the attrs option {argument.name}={text} is not a literal True, False or None, "
                "which this script cannot judge: write it as one"
            )
        options[argument.name] = _LITERAL_FLAGS[text]
    return options


def attrs_facts(class_: griffe.Class) -> dict[str, bool] | None:
    """What users may do with an attrs class's instances, as attrs makes them (None if it is no attrs class).

    ``frozen``: setting a field raises (attrs makes a subclass of a frozen class frozen too). ``hashable``:
    ``hash()`` works, by attrs' rules: ``unsafe_hash=True`` hashes; ``unsafe_hash=False`` leaves the base's
    ``__hash__``, which a slotted class with ``eq`` loses; otherwise a ``__hash__`` the class defines (the new
    API detects it), else id-based without ``eq``, else only when frozen. ``slots``, ``eq``, ``order``: the
    decorator's options or attrs' defaults (``tests/test_api_snapshot.py`` checks these rules against attrs).
    """
    decorators = [d for d in class_.decorators if _decorator_path(d) in ATTRS_CLASSES]
    if not decorators:
        return None
    decorator = decorators[0]
    defaults = ATTRS_DEFAULTS[_decorator_path(decorator)]
    options = {**defaults, **_attrs_options(class_, decorator)}
    if options.get("cmp") is not None:  # the old spelling of eq and order together
        options["eq"] = options["order"] = options["cmp"]
    eq = options["eq"] is not False
    order = eq if options["order"] is None else bool(options["order"])
    slots = bool(options["slots"])
    inherited = [
        facts
        for base in class_.resolved_bases
        if isinstance(base, griffe.Class) and (facts := attrs_facts(base)) is not None
    ]
    frozen = bool(options["frozen"]) or any(facts["frozen"] for facts in inherited)
    hash_option = options.get("unsafe_hash", options.get("hash"))
    own_hash = class_.members.get("__hash__")
    hashable: bool
    if hash_option is True:
        hashable = True
    elif hash_option is False:
        hashable = not (eq and slots)
    elif options["auto_detect"] and own_hash is not None and not own_hash.is_alias:
        hashable = not (isinstance(own_hash, griffe.Attribute) and str(own_hash.value) == "None")
    elif not eq:
        hashable = all(facts["hashable"] for facts in inherited)
    else:
        hashable = frozen
    return {"frozen": frozen, "hashable": hashable, "slots": slots, "eq": eq, "order": order}


def protocol_facts(class_: griffe.Class) -> dict[str, bool] | None:
    """``{"runtime_checkable": ...}`` for a ``typing.Protocol`` (Protocol among its own bases), else None.

    A class that merely inherits from a Protocol is an implementation of it, not a Protocol (PEP 544).
    """
    for base in class_.bases:
        node = _parse(str(base))
        if isinstance(node, ast.Subscript):  # Protocol[T]
            node = node.value
        if node is not None and _typing_name(node) == "Protocol":
            checkable = any(_decorator_path(d).rsplit(".", 1)[-1] == "runtime_checkable" for d in class_.decorators)
            return {"runtime_checkable": checkable}
    return None


@dataclass
class Built:
    """A package's public API as a snapshot document, and where HEAD defines each public path."""

    document: dict[str, Any]
    locations: dict[str, str]
    ancestors: dict[str, frozenset[str]]
    """Each public class's ancestors in HEAD, private ones' bases included, as ``_base_text`` gives them."""


def _ancestors(class_: griffe.Class, seen: set[str]) -> set[str]:
    """The bases of ``class_`` and of every base it inherits from in the package, each as written and by name."""
    names = {_base_text(str(base)) for base in class_.bases}
    for base in class_.resolved_bases:
        if isinstance(base, griffe.Class) and base.path not in seen:
            seen.add(base.path)
            names.add(base.name)
            names |= _ancestors(base, seen)
    return names


class _Builder:
    def __init__(self, package_dir: Path) -> None:
        self.package_dir = package_dir
        self.locations: dict[str, str] = {}
        self.ancestors: dict[str, frozenset[str]] = {}

    def _locate(self, path: str, obj: griffe.Object | griffe.Alias) -> None:
        try:
            filepath = obj.filepath
        except (griffe.AliasResolutionError, griffe.CyclicAliasError, AttributeError):
            return
        if not isinstance(filepath, Path):
            return
        try:
            relative = filepath.resolve().relative_to(self.package_dir.resolve()).as_posix()
        except ValueError:
            relative = str(filepath)
        # A module is its file; what was removed from it is reported there.
        self.locations[path] = relative if obj.lineno is None or obj.is_module else f"{relative}:{obj.lineno}"

    def module(self, module: griffe.Module, path: str) -> dict[str, Any]:
        exports = sorted(str(name) for name in module.exports or ())
        if not exports:
            raise SnapshotError(f"{module.path} has no __all__: the snapshot lists what __all__ exports")
        members: dict[str, Any] = {}
        for name in exports:
            if name not in module.members:
                raise SnapshotError(f"{module.path}.__all__ names {name!r}, which the module does not define")
            members[name] = self.object(module.members[name], name, f"{path}.{name}")
        self._locate(path, module)
        return {"kind": "module", "name": module.name, "exports": exports, "members": members}

    def object(self, obj: griffe.Object | griffe.Alias, name: str, path: str) -> dict[str, Any]:
        target = _resolve(obj)
        self._locate(path, target)
        if isinstance(target, griffe.Alias):  # defined outside the package: kept as the name it re-exports
            return {"kind": "alias", "name": name, "target_path": target.target_path}
        if isinstance(target, griffe.Class):
            return self.class_(target, name, path)
        if isinstance(target, griffe.Function):
            return self.function(target, name)
        if isinstance(target, griffe.Attribute):
            # An instance attribute's value is whatever __init__ assigns (`self.request = request`): no API.
            instance_only = "instance-attribute" in target.labels and "class-attribute" not in target.labels
            return {
                "kind": "attribute",
                "name": name,
                "labels": sorted(target.labels),
                "annotation": _text(target.annotation),
                "value": None if instance_only else _text(target.value),
            }
        if isinstance(target, griffe.TypeAlias):
            return {"kind": "type alias", "name": name, "value": _text(target.value), "type_parameters": []}
        raise SnapshotError(f"{path}: a {type(target).__name__} is not snapshotted")

    def function(self, function: griffe.Function, name: str) -> dict[str, Any]:
        parameters: list[dict[str, Any]] = [
            {
                "name": parameter.name,
                "kind": str(parameter.kind),  # a StrEnum: its value, "keyword-only"
                "annotation": _text(parameter.annotation),
                "default": _text(parameter.default),
            }
            for parameter in function.parameters
        ]
        return {
            "kind": "function",
            "name": name,
            "labels": sorted(function.labels),
            "parameters": parameters,
            "returns": _text(function.returns),
        }

    def class_(self, class_: griffe.Class, name: str, path: str) -> dict[str, Any]:
        bases = [str(base) for base in class_.bases if not _is_private(str(base).rsplit(".", 1)[-1])]
        self.ancestors[path] = frozenset(_ancestors(class_, {class_.path}))
        members: dict[str, Any] = {}
        for member_name, member in class_.all_members.items():
            if _is_private(member_name):
                continue
            target = _resolve(member)
            if isinstance(target, griffe.Alias):  # inherited from outside the package
                continue
            if _is_dunder(member_name) and not isinstance(target, griffe.Function):
                continue  # like __slots__: how the class is built, not what users call
            members[member_name] = self.object(target, member_name, f"{path}.{member_name}")
        if "__init__" not in members and (init := _attrs_init(class_)) is not None:
            members["__init__"] = init
            self._locate(f"{path}.__init__", class_)
        document: dict[str, Any] = {"kind": "class", "name": name, "labels": sorted(class_.labels), "bases": bases}
        # Written only where they apply: in format 2, a class without "protocol" is no Protocol.
        if (protocol := protocol_facts(class_)) is not None:
            document["protocol"] = protocol
        if (facts := attrs_facts(class_)) is not None:
            document["attrs"] = facts
        document["members"] = dict(sorted(members.items()))
        return document


def load_package(package_dir: Path) -> griffe.Module:
    if not (package_dir / PACKAGE / "__init__.py").is_file():
        raise SnapshotError(f"{package_dir} holds no {PACKAGE}/__init__.py")
    package = griffe.load(
        PACKAGE,
        search_paths=[package_dir],
        try_relative_path=False,
        allow_inspection=False,
        store_source=False,
        resolve_aliases=True,
        resolve_external=False,
    )
    assert isinstance(package, griffe.Module)
    return package


def build(package_dir: Path) -> Built:
    """The snapshot document of the package under ``package_dir``, as ``dump`` writes it."""
    package = load_package(package_dir)
    # Locations are relative to the folder griffe read the files from (package_dir, unless a caller's load_package
    # gave a module it loaded before from a copy of the same files: tests/test_api_snapshot.py's does).
    assert isinstance(package.filepath, Path)
    builder = _Builder(package.filepath.parent.parent)
    api = builder.module(package, PACKAGE)
    for dotted in PUBLIC_MODULES[1:]:
        name = dotted.rsplit(".", 1)[-1]
        submodule = package.members[name]
        assert isinstance(submodule, griffe.Module)
        api["members"][name] = builder.module(submodule, dotted)
    document = {
        "format": FORMAT,
        "package": PACKAGE,
        "version": read_version(package_dir),
        "made_by": "scripts/api_snapshot.py dump",
        "api": api,
    }
    return Built(document, builder.locations, builder.ancestors)


def _flat(value: object) -> bool:
    """Written on one line: a parameter or attribute (only scalars and short lists), a short list of scalars."""
    if isinstance(value, dict):
        items = cast("dict[str, object]", value).values()
        return all(not isinstance(item, dict) and _flat(item) for item in items)
    if isinstance(value, list):
        scalars = all(not isinstance(item, (dict, list)) for item in cast("list[object]", value))
        return scalars and len(json.dumps(value)) <= 100
    return True


def _render(value: object, level: int) -> str:
    if _flat(value):
        return json.dumps(value, ensure_ascii=False)
    pad = "  " * (level + 1)
    if isinstance(value, dict):
        pairs = cast("dict[str, object]", value).items()
        items = [f"{pad}{json.dumps(key)}: {_render(item, level + 1)}" for key, item in pairs]
        brackets = "{}"
    else:
        items = [pad + _render(item, level + 1) for item in cast("list[object]", value)]
        brackets = "[]"
    return f"{brackets[0]}\n" + ",\n".join(items) + f"\n{'  ' * level}{brackets[1]}"


def render(document: Mapping[str, Any]) -> str:
    """The snapshot as JSON: one line per parameter and attribute, so a diff shows each change on its line."""
    return _render(dict(document), 0) + "\n"


CLASS_FACTS = ("protocol", "attrs")


def _with_defaults(obj: dict[str, Any]) -> Any:
    # The snapshot leaves out line numbers; griffe's decoder expects the key.
    if obj.get("kind") in {"class", "function", "attribute", "alias", "type alias"}:
        obj.setdefault("lineno", None)
    # griffe's decoder drops keys it does not know: a class's facts are kept in its `extra`.
    facts = {key: obj.pop(key) for key in CLASS_FACTS if key in obj} if obj.get("kind") == "class" else {}
    decoded = griffe.json_decoder(obj)
    if isinstance(decoded, griffe.Class):
        decoded.extra[EXTRA].update(facts)
    return decoded


def decode(text: str, source: str) -> tuple[str, griffe.Module]:
    """A snapshot's version and its API as griffe objects (the format in the module's ``extra[EXTRA]``)."""
    document: object = json.loads(text, object_hook=_with_defaults)
    fields = cast("dict[str, object]", document) if isinstance(document, dict) else {}
    api = fields.get("api")
    if fields.get("format") not in READABLE_FORMATS or not isinstance(api, griffe.Module):
        raise SnapshotError(f"{source} is not a snapshot of format {FORMAT} (made by another version of this script?)")
    api.extra[EXTRA]["format"] = fields["format"]
    return str(fields["version"]), api


# The check --------------------------------------------------------------------------------------


@dataclass
class Finding:
    """A breaking change: the public path, what changed, and where HEAD defines it."""

    path: str
    kind: str
    change: str
    location: str | None

    def __str__(self) -> str:
        text = f"{self.path}: {self.kind}"
        if self.change:
            text += f": {self.change}"
        if self.location:
            text += f"\n    at {self.location}"
        return text


# What this script judges itself, so griffe's own verdicts on them are not reported twice.
_JUDGED_HERE = (griffe.ClassRemovedBaseBreakage, griffe.ReturnChangedTypeBreakage)


def _describe(obj: object, kind: object) -> str:
    """An object's kind as users see it: ``property`` and ``classmethod`` rather than griffe's attribute, function."""
    if isinstance(obj, griffe.Attribute) and "property" in obj.labels:
        return "property"
    if isinstance(obj, griffe.Function):
        return function_kind(obj)
    return str(kind)


def _change(breakage: griffe.Breakage, old_root: griffe.Module) -> tuple[str, str]:
    """The path griffe's breakage is about (``func(param)`` for a parameter) and what changed."""
    old: Any = breakage.old_value
    new: Any = breakage.new_value
    path = breakage.obj.path
    parameter = new if isinstance(breakage, griffe.ParameterAddedRequiredBreakage) else old
    change = ""
    if isinstance(breakage, griffe.ParameterMovedBreakage):
        change = breakage.details
    elif isinstance(breakage, griffe.ParameterChangedKindBreakage):
        change = f"{old.kind} -> {new.kind}"
    elif isinstance(breakage, griffe.ParameterChangedDefaultBreakage):
        change = f"{old.default} -> {new.default}"
    elif isinstance(breakage, griffe.ObjectChangedKindBreakage):
        try:
            before: object = old_root[path.removeprefix(f"{old_root.path}.")]
        except KeyError:
            before = None
        change = f"{_describe(before, old)} -> {_describe(breakage.obj, new)}"
    if isinstance(parameter, griffe.Parameter):
        path = f"{path}({parameter.name})"
    return path, change


# Source text, normalised ---------------------------------------------------------------------------

_TYPING_MODULES = frozenset({"typing", "typing_extensions"})
_FOLDABLE: dict[type[ast.operator], Callable[[float, float], float]] = {
    ast.Add: lambda left, right: left + right,
    ast.Sub: lambda left, right: left - right,
    ast.Mult: lambda left, right: left * right,
    ast.Div: lambda left, right: left / right,
    ast.FloorDiv: lambda left, right: left // right,
    ast.Mod: lambda left, right: left % right,
    ast.Pow: lambda left, right: left**right,
}


def _parse(text: str) -> ast.expr | None:
    try:
        return ast.parse(text.strip(), mode="eval").body
    except SyntaxError:
        return None


def _number(node: ast.expr) -> int | float | None:
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        return cast("int | float", node.value)
    return None


class _Fold(ast.NodeTransformer):
    """Number arithmetic computed: ``10 * 1024 * 1024`` is ``10485760``; ``30`` stays apart from ``30.0``."""

    def visit_BinOp(self, node: ast.BinOp) -> ast.expr:
        self.generic_visit(node)
        operation = _FOLDABLE.get(type(node.op))
        left, right = _number(node.left), _number(node.right)
        if operation is None or left is None or right is None or (isinstance(node.op, ast.Pow) and abs(right) > 64):
            return node
        try:
            return ast.copy_location(ast.Constant(operation(left, right)), node)
        except ArithmeticError:
            return node

    def visit_UnaryOp(self, node: ast.UnaryOp) -> ast.expr:
        self.generic_visit(node)
        value = _number(node.operand)
        if value is None or not isinstance(node.op, (ast.USub, ast.UAdd)):
            return node
        return ast.copy_location(ast.Constant(-value if isinstance(node.op, ast.USub) else value), node)


def _value(text: str) -> str:
    """A value as normalised source text: one quoting and spacing, number arithmetic computed."""
    node = _parse(text)
    return text.strip() if node is None else ast.unparse(_Fold().visit(node))


def _base_text(text: str) -> str:
    node = _parse(text)
    return text.strip() if node is None else ast.unparse(node)


def _typing_name(node: ast.expr) -> str | None:
    """``Union`` for ``Union``, ``typing.Union`` or ``typing_extensions.Union``; None for other names."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in _TYPING_MODULES:
        return node.attr
    return None


def _arguments(node: ast.Subscript) -> list[ast.expr]:
    return list(node.slice.elts) if isinstance(node.slice, ast.Tuple) else [node.slice]


def _union_parts(node: ast.expr) -> list[ast.expr] | None:
    """The parts of a union (``A | B``, ``Union[A, B]``, ``Optional[A]``), or None if ``node`` is no union."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        return [node.left, node.right]
    if isinstance(node, ast.Subscript):
        head = _typing_name(node.value)
        if head == "Union":
            return _arguments(node)
        if head == "Optional":
            return [*_arguments(node), ast.Constant(None)]
    return None


def _members(node: ast.expr) -> frozenset[str]:
    """The members of an annotation read as a union: ``Optional[X]`` is ``{X, None}``, ``Literal[a, b]`` is
    ``{Literal[a], Literal[b]}``, anything else is one member."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):  # a quoted annotation
        inner = _parse(node.value)
        return frozenset({node.value.strip()}) if inner is None else _members(inner)
    parts = _union_parts(node)
    if parts is not None:
        return frozenset[str]().union(*(_members(part) for part in parts))
    if isinstance(node, ast.Subscript) and _typing_name(node.value) == "Literal":
        return frozenset(f"Literal[{ast.unparse(argument)}]" for argument in _arguments(node))
    return frozenset({_canonical(node)})


def _canonical(node: ast.expr) -> str:
    """An annotation as text, its unions (at any depth) sorted and written with ``|``, ``typing.`` dropped."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        inner = _parse(node.value)
        return node.value.strip() if inner is None else _canonical(inner)
    literal = isinstance(node, ast.Subscript) and _typing_name(node.value) == "Literal"
    if _union_parts(node) is not None or (literal and len(_arguments(cast("ast.Subscript", node))) > 1):
        return " | ".join(sorted(_members(node)))
    if isinstance(node, ast.Subscript) and not literal:
        return f"{_canonical(node.value)}[{', '.join(_canonical(argument) for argument in _arguments(node))}]"
    if isinstance(node, ast.List):
        return f"[{', '.join(_canonical(element) for element in node.elts)}]"
    return node.attr if isinstance(node, ast.Attribute) and _typing_name(node) is not None else ast.unparse(node)


def annotation_members(text: str) -> frozenset[str]:
    """An annotation's union members as normalised source text (see the module's docstring)."""
    node = _parse(text)
    return frozenset({text.strip()}) if node is None else _members(node)


def annotation_change(old: object, new: object, *, accepted: bool) -> str | None:
    """What changed in an annotation, or None when the change is compatible.

    ``accepted``: the annotation says what the caller passes (a parameter), which
    may widen; otherwise what the caller receives (a return, an attribute), which
    may narrow.
    """
    if old is None:
        return None  # nothing was promised
    if new is None:
        return None if accepted else f"{old} -> no annotation"
    before, after = annotation_members(str(old)), annotation_members(str(new))
    if before == after or (after >= before if accepted else after <= before):
        return None
    return f"{old} -> {new}"


# Comparing what griffe does not ---------------------------------------------------------------------


def _pairs(old: griffe.Object, new: griffe.Object) -> Iterator[tuple[griffe.Object, griffe.Object]]:
    """Each member of ``old`` with its namesake of the same kind in ``new``, at any depth.

    A member missing from ``new`` or of another kind is left out: griffe reports it.
    """
    for name, old_member in old.members.items():
        new_member = new.members.get(name)
        if old_member.is_alias or new_member is None or new_member.is_alias:
            continue
        old_object, new_object = cast("griffe.Object", old_member), cast("griffe.Object", new_member)
        if type(old_object) is not type(new_object):
            continue
        yield old_object, new_object
        if old_object.is_module or old_object.is_class:
            yield from _pairs(old_object, new_object)


def _literal_members(value: str | None) -> list[str] | None:
    """The members of ``Literal[...]`` as source text, or None if the value is not one."""
    node = None if value is None else _parse(value)
    if not isinstance(node, ast.Subscript):
        return None
    head = node.value
    if not (isinstance(head, ast.Name) and head.id == "Literal") and not (
        isinstance(head, ast.Attribute) and head.attr == "Literal"
    ):
        return None
    return [ast.unparse(argument) for argument in _arguments(node)]


def _attrs_fields(class_: griffe.Object) -> bool:
    """Whether the class's attribute values are attrs field defaults (its ``__init__`` is the one attrs writes)."""
    init = class_.members.get("__init__")
    return init is not None and not init.is_alias and "attrs" in cast("griffe.Object", init).labels


def _writable(attribute: griffe.Attribute) -> bool:
    # A functools.cached_property may be assigned to (it is an instance attribute once computed).
    return "writable" in attribute.labels or "cached" in attribute.labels


def _property_findings(old: griffe.Attribute, new: griffe.Attribute) -> Iterator[tuple[str, str, str]]:
    """A property's setter or deleter lost (griffe reads a property as an attribute labelled ``property``)."""
    if "property" in old.labels and "property" in new.labels:
        if _writable(old) and not _writable(new):
            yield old.path, "Property lost its setter", "assigning to it now raises AttributeError"
        if "deletable" in old.labels and "deletable" not in new.labels:
            yield old.path, "Property lost its deleter", "deleting it now raises AttributeError"


def _attribute_findings(
    old: griffe.Attribute, new: griffe.Attribute, parent: griffe.Object, *, implemented: bool
) -> Iterator[tuple[str, str, str]]:
    if implemented:
        if (change := _any_annotation_change(old.annotation, new.annotation)) is not None:
            yield old.path, "Attribute annotation was changed on a Protocol users implement", change + _IMPLEMENTERS
    elif (change := annotation_change(old.annotation, new.annotation, accepted=False)) is not None:
        yield old.path, "Attribute annotation was changed", change
    if old.value is None or (parent.is_module and old.name == "__version__"):
        return  # an instance attribute's value is none of the API; the version changes every release
    if parent.is_module and old.name.startswith("DEFAULT_"):
        # A default of the SDK's behaviour (DEFAULT_MAX_RETRIES): code that reads it keeps working with the new
        # value. Changing one is a behaviour change that tests/test_defaults.py pins and the CHANGELOG records,
        # not a break of the API: a changed default fails its pin alone.
        return
    if parent.is_class and _attrs_fields(parent):
        return  # a field default: compared as its __init__ parameter's default
    old_value, new_value = str(old.value), None if new.value is None else str(new.value)
    old_literal = _literal_members(old_value)
    if old_literal is not None:
        new_literal = _literal_members(new_value)
        if new_literal is None:
            yield old.path, "Literal alias is no longer a Literal[...]", f"{old_value} -> {new_value}"
        elif removed := [member for member in old_literal if member not in new_literal]:
            yield old.path, "Literal member was removed", ", ".join(removed)
        return
    if str(old.annotation) == "TypeAlias" and str(new.annotation) == "TypeAlias" and new_value is not None:
        # A type alias, like a Literal alias, says what callers pass: it may gain members, not lose one.
        removed = sorted(annotation_members(old_value) - annotation_members(new_value))
        for member in removed:  # one finding each, so that each can be accepted on its own
            yield old.path, "Type alias lost a member", f"{member} ({old_value} -> {new_value})"
        return
    if new_value is None or _value(old_value) != _value(new_value):
        yield old.path, "Attribute value was changed", f"{old_value} -> {new_value}"


_IMPLEMENTERS = " (classes written to satisfy the Protocol no longer match it)"


def _any_annotation_change(old: object, new: object) -> str | None:
    """Any change to an annotation, unions compared as sets (``Optional[X]`` is ``X | None``), or None."""
    if old is None and new is None:
        return None
    if old is not None and new is not None and annotation_members(str(old)) == annotation_members(str(new)):
        return None
    return f"{old} -> {new}"


def _function_findings(
    old: griffe.Function, new: griffe.Function, *, implemented: bool
) -> Iterator[tuple[str, str, str]]:
    """Annotations (and, on a Protocol users implement, an optional parameter added)."""
    new_parameters = {parameter.name: parameter for parameter in new.parameters}
    for parameter in old.parameters:
        counterpart = new_parameters.get(parameter.name)
        if counterpart is None:
            continue  # reported by griffe as removed
        where = f"{old.path}({parameter.name})"
        if implemented:
            # Users write the method and call it: what it accepts may neither widen nor narrow.
            if (change := _any_annotation_change(parameter.annotation, counterpart.annotation)) is not None:
                kind = "Parameter annotation was changed on a Protocol users implement"
                yield where, kind, change + _IMPLEMENTERS
        elif (change := annotation_change(parameter.annotation, counterpart.annotation, accepted=True)) is not None:
            yield where, "Parameter annotation was changed", change
    if implemented:
        old_names = {parameter.name for parameter in old.parameters}
        for parameter in new.parameters:
            if parameter.name not in old_names and not parameter.required:  # a required one: griffe's finding
                kind = "Parameter was added to a Protocol member users implement"
                yield f"{old.path}({parameter.name})", kind, "the methods users wrote do not accept it"
        if (change := _any_annotation_change(old.returns, new.returns)) is not None:
            yield old.path, "Return annotation was changed on a Protocol users implement", change + _IMPLEMENTERS
    elif (change := annotation_change(old.returns, new.returns, accepted=False)) is not None:
        yield old.path, "Return annotation was changed", change


_KINDS = ("property", "classmethod", "staticmethod")


def function_kind(function: griffe.Function) -> str:
    """``property``, ``classmethod``, ``staticmethod``, ``method`` (in a class) or ``function``: griffe's labels."""
    kind = next((kind for kind in _KINDS if kind in function.labels), None)
    if kind is not None:
        return kind
    return "method" if function.parent is not None and function.parent.is_class else "function"


def _kind_findings(old: griffe.Function, new: griffe.Function) -> Iterator[tuple[str, str, str]]:
    """A function made async or sync, a method's kind changed (classmethod, staticmethod, method)."""
    what = "Method" if old.parent is not None and old.parent.is_class else "Function"
    was_async, is_async = "async" in old.labels, "async" in new.labels
    if is_async and not was_async:
        yield old.path, f"{what} was made async", "def -> async def: callers must now await it"
    elif was_async and not is_async:
        yield old.path, f"{what} is no longer async", "async def -> def: callers that await its result now fail"
    old_kind, new_kind = function_kind(old), function_kind(new)
    if old_kind != new_kind:
        yield old.path, "Method kind was changed", f"{old_kind} -> {new_kind}: code that uses it as a {old_kind} fails"


def _facts(class_: griffe.Object) -> Mapping[str, Any]:
    return class_.extra[EXTRA]


def _lost(old: Mapping[str, Any], new: Mapping[str, Any], fact: str) -> bool:
    """The fact held in the snapshot and no longer does (a fact either side does not record is unknown)."""
    return old.get(fact) is True and new.get(fact) is False


_ATTRS_BREAKS = (  # (fact, whether losing it (True) or gaining it (False) breaks, the finding's kind, what breaks)
    ("frozen", True, "attrs class is no longer frozen", "its instances can now be changed"),
    ("frozen", False, "attrs class was made frozen", "setting a field now raises FrozenInstanceError"),
    ("hashable", True, "attrs class is no longer hashable", "hash() of an instance, a set or dict key, now fails"),
    ("slots", False, "attrs class was given __slots__", "setting an attribute it does not declare now fails"),
    ("eq", True, "attrs class no longer compares by value", "== between instances now compares identity"),
    ("eq", False, "attrs class now compares by value", "== between instances no longer compares identity"),
    ("order", True, "attrs class no longer orders", "<, >, sorted() between instances now raise TypeError"),
)


def _class_findings(old: griffe.Class, new: griffe.Class, *, known: bool) -> Iterator[tuple[str, str, str]]:
    """Protocol-ness, members added to a Protocol, attrs behaviour. ``known``: the snapshot records the facts."""
    old_facts, new_facts = _facts(old), _facts(new)
    old_protocol, new_protocol = old_facts.get("protocol"), new_facts.get("protocol")
    if known:
        if old_protocol is not None and new_protocol is None:
            yield old.path, "Class is no longer a Protocol", "classes written to satisfy it no longer type-check"
        elif old_protocol is None and new_protocol is not None:
            yield old.path, "Class was made a Protocol", "it can no longer be instantiated"
        elif (
            old_protocol is not None
            and new_protocol is not None
            and _lost(old_protocol, new_protocol, "runtime_checkable")
        ):
            yield old.path, "Protocol is no longer runtime_checkable", "isinstance() against it now raises TypeError"
        old_attrs, new_attrs = old_facts.get("attrs"), new_facts.get("attrs")
        if old_attrs is not None and new_attrs is None:
            yield old.path, "Class is no longer an attrs class", "attrs.evolve(), attrs.fields() and the like now fail"
        elif old_attrs is not None and new_attrs is not None:
            breaks = [
                (kind, effect)
                for fact, losing, kind, effect in _ATTRS_BREAKS
                if (_lost(old_attrs, new_attrs, fact) if losing else _lost(new_attrs, old_attrs, fact))
            ]
            if breaks:  # one finding per class, led by the main change: @frozen -> @define is one edit
                yield old.path, breaks[0][0], "; ".join(effect for _, effect in breaks)
    if old_protocol if known else new_protocol:
        for name in sorted(new.members.keys() - old.members.keys()):
            kind = "Member was added to a Protocol users implement"
            yield f"{old.path}.{name}", kind, "the classes users wrote lack it"


def _implemented(old: griffe.Object | None, new: griffe.Object | None, *, known: bool) -> bool:
    """Whether ``old`` is a Protocol (users write classes that satisfy it); HEAD says where the snapshot cannot."""
    recorded = old if known else new
    return recorded is not None and recorded.is_class and _facts(recorded).get("protocol") is not None


def _base_findings(old: griffe.Class, new: griffe.Class, ancestors: frozenset[str]) -> Iterator[tuple[str, str, str]]:
    old_bases = [str(base) for base in old.bases]
    lost = [base for base in old_bases if _base_text(base) not in ancestors]
    if lost:
        new_bases = [str(base) for base in new.bases]
        gained = [base for base in new_bases if base not in old_bases]
        kind = "Base class was replaced" if gained else "Base class was removed"
        change = f"[{', '.join(old_bases)}] -> [{', '.join(new_bases)}]"
        yield old.path, kind, f"{change}: no longer a subclass of {', '.join(lost)}"


def value_findings(
    old: griffe.Module, new: griffe.Module, ancestors: Mapping[str, frozenset[str]]
) -> Iterator[tuple[str, str, str]]:
    """The breaking changes griffe does not judge: bases, values, Literal members, annotations, kinds, facts."""
    known = _facts(old).get("format", FORMAT) >= 2  # format 1 recorded no class facts: unknown, not changed
    for old_member, new_member in _pairs(old, new):
        implemented = _implemented(old_member.parent, new_member.parent, known=known)
        if isinstance(old_member, griffe.Class) and isinstance(new_member, griffe.Class):
            if old_member.path in ancestors:
                yield from _base_findings(old_member, new_member, ancestors[old_member.path])
            yield from _class_findings(old_member, new_member, known=known)
        elif isinstance(old_member, griffe.Function) and isinstance(new_member, griffe.Function):
            yield from _kind_findings(old_member, new_member)
            yield from _function_findings(old_member, new_member, implemented=implemented)
        elif isinstance(old_member, griffe.Attribute) and isinstance(new_member, griffe.Attribute):
            parent = old_member.parent
            assert parent is not None
            yield from _property_findings(old_member, new_member)
            yield from _attribute_findings(old_member, new_member, parent, implemented=implemented)
        elif isinstance(old_member, griffe.TypeAlias) and isinstance(new_member, griffe.TypeAlias):
            removed = sorted(annotation_members(str(old_member.value)) - annotation_members(str(new_member.value)))
            if removed:
                yield old_member.path, "Type alias lost a member", ", ".join(removed)


def _drop_receivers(old: griffe.Module, new: griffe.Module) -> None:
    """Drop ``self``/``cls`` from both sides of a method whose kind changed, before griffe compares parameters.

    A classmethod made a method (``cls`` -> ``self``), or a staticmethod made one, is reported once as a changed
    kind; without this, griffe would add the receiver's own "removed", "added" or "moved" findings.
    """
    for old_member, new_member in _pairs(old, new):
        if not (isinstance(old_member, griffe.Function) and isinstance(new_member, griffe.Function)):
            continue
        if function_kind(old_member) == function_kind(new_member):
            continue
        for function in (old_member, new_member):
            receiver = function_kind(function) in {"method", "classmethod", "property"}
            first = next(iter(function.parameters), None)
            if receiver and first is not None and first.name in {"self", "cls"} and not function.extra[EXTRA]:
                del function.parameters[0]
                function.extra[EXTRA]["receiver"] = first.name  # once: a second call must not drop a parameter


def find_breaking_changes(old: griffe.Module, built: Built) -> list[Finding]:
    """Every breaking change from the snapshot ``old`` to the package ``built``.

    ``old`` loses the receivers of the methods whose kind changed (``_drop_receivers``, once however often called).
    """
    _, new = decode(render(built.document), "HEAD")

    def where(path: str) -> str | None:
        # A removed object is placed at its parent in HEAD; a parameter at its function.
        path = path.partition("(")[0]
        while path and path not in built.locations:
            path = path.rpartition(".")[0]
        return built.locations.get(path)

    _drop_receivers(old, new)
    findings: list[Finding] = []
    for breakage in griffe.find_breaking_changes(old, new):
        if isinstance(breakage, _JUDGED_HERE):
            continue
        path, change = _change(breakage, old)
        # str(breakage) is its kind's text: "Parameter was removed".
        findings.append(Finding(path, str(breakage), change, where(breakage.obj.path)))
    for path, kind, change in value_findings(old, new, built.ancestors):
        findings.append(Finding(path, kind, change, where(path)))
    return findings


# Commands ---------------------------------------------------------------------------------------


def dump(package_dir: Path, api_dir: Path, *, force: bool = False) -> int:
    built = build(package_dir)
    version = built.document["version"]
    text = render(built.document)
    path = api_dir / f"{version}.json"
    # A dump run before __version__ is bumped would rewrite the last release's API with HEAD's.
    if not force and path.is_file() and path.read_text(encoding="utf-8") != text:
        raise SnapshotError(
            f"{path} already records {version}, and the package's API differs from it: set __version__ "
            "to the release being cut first (or pass --force to rewrite that release's snapshot)"
        )
    found = snapshots(api_dir)
    latest = max(found, key=version_key) if found else None
    if not force and latest is not None and version_key(version) < version_key(latest):
        raise SnapshotError(f"{version} is lower than the latest snapshot, {latest} (--force to write it anyway)")
    api_dir.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    print(f"wrote {path} ({PACKAGE} {version}, from {package_dir})")
    return 0


ACCEPTED = "accepted-breaks.json"


def accepted_key(finding: Finding, accepted: Mapping[str, str]) -> str | None:
    """The entry of ``accepted`` that names ``finding``, or ``None``.

    Named by the finding's first line, or by that line without its trailing
    ``(old -> new)``: a union that later gains an unrelated member (a new
    library's client) leaves the entry matching.
    """
    headline = str(finding).split("\n", 1)[0]
    short = f"{finding.path}: {finding.kind}: {finding.change.split(' (', 1)[0]}"
    return next((key for key in (headline, short) if key in accepted), None)


def accepted_breaks(api_dir: Path, version: str) -> dict[str, str]:
    """The breaks accepted on purpose since the ``version`` snapshot (``api/accepted-breaks.json``): finding, why."""
    path = api_dir / ACCEPTED
    if not path.is_file():
        return {}
    entries: dict[str, object] = json.loads(path.read_text(encoding="utf-8"))
    accepted = entries.get(version, {})
    reasons = cast("dict[object, object]", accepted) if isinstance(accepted, dict) else {}
    if reasons is not accepted or not all(isinstance(why, str) and why for why in reasons.values()):
        raise SnapshotError(f"{path}: {version!r} must map each finding's first line to its reason")
    return cast("dict[str, str]", reasons)


def check(package_dir: Path, api_dir: Path) -> int:
    head_version = read_version(package_dir)
    snapshot_version, snapshot_path = latest_snapshot(api_dir)
    if version_key(head_version) < version_key(snapshot_version):
        print(
            f"API check: HEAD's version {head_version} is lower than the latest snapshot's, "
            f"{snapshot_path.name} ({snapshot_version}): set __version__ in {PACKAGE}/_version.py "
            "to the release being prepared (at least the latest released one)",
            file=sys.stderr,
        )
        return 1
    recorded_version, old = decode(snapshot_path.read_text(encoding="utf-8"), str(snapshot_path))
    if recorded_version != snapshot_version:
        raise SnapshotError(f"{snapshot_path} says it is version {recorded_version}, not {snapshot_version}")
    findings = find_breaking_changes(old, build(package_dir))
    tree = "HEAD" if package_dir.resolve() == ROOT else str(package_dir)
    against = f"{PACKAGE} {head_version} ({tree}) against {snapshot_path.name}"
    accepted = accepted_breaks(api_dir, snapshot_version)
    unused = set(accepted)
    remaining: list[Finding] = []
    for finding in findings:
        key = accepted_key(finding, accepted)
        if key is not None:
            unused.discard(key)
            print(f"{finding}\n    accepted since {snapshot_version}: {accepted[key]}")
        else:
            remaining.append(finding)
            print(finding)
    if unused:
        for headline in sorted(unused):
            print(f"accepted-breaks.json names a break no longer found: {headline}", file=sys.stderr)
        return 1
    if not findings:  # an entry with nothing to excuse failed above: the list cannot go stale
        print(f"API check: {against}: no breaking change")
        return 0
    findings = remaining
    if not findings:
        print(f"API check: {against}: no breaking change but those accepted in {ACCEPTED}")
        return 0
    if major(head_version) > major(snapshot_version):
        print(
            f"API check: {against}: {len(findings)} breaking change(s), allowed: "
            f"the major version goes from {major(snapshot_version)} to {major(head_version)}"
        )
        return 0
    print(
        f"API check: {against}: {len(findings)} breaking change(s). Keep the old API working "
        "(deprecate it instead), or make this a new major version."
    )
    return 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("command", choices=["dump", "check"])
    parser.add_argument("--package-dir", type=Path, default=ROOT, help="the directory holding animalstore_client/")
    parser.add_argument("--api-dir", type=Path, default=ROOT / "api", help="where the snapshots are (api/)")
    parser.add_argument(
        "--force",
        action="store_true",
        help="dump: write over a different snapshot of the same version, or an older one",
    )
    args = parser.parse_args(argv)
    try:
        if args.command == "dump":
            return dump(args.package_dir, args.api_dir, force=args.force)
        return check(args.package_dir, args.api_dir)
    except SnapshotError as exc:
        print(f"api_snapshot: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
