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
bases. It is griffe's own JSON format (``griffe.json_decoder`` reads it back),
with three choices made for a file kept in the repository:

- Annotations, defaults and values are stored as source text (``"int | None"``),
  not as griffe's expression trees: they read as the code does, and a diff
  between two snapshots shows the API change and nothing else.
- No line numbers, file paths or docstrings: they change with every edit and
  are not part of the API; with them, two snapshots would differ on every line.
  ``check`` reports the source file and line of each finding from HEAD instead.
- Members are sorted by name; parameters keep their order (it is API).
- An instance attribute's value (what ``__init__`` assigns to it) and dunder
  attributes such as ``__slots__`` are left out: how a class is built, not API.

Two things griffe does not see are added here, narrowly. attrs classes
(``Pet``, ``NewPet``, ...) get the ``__init__`` attrs writes (their fields in
order, with their defaults), so removing a field or making one required is
reported as for any constructor. Bases private to the package (``_JSONModel``)
are left out: their public members are listed on the class itself, so moving
code between private bases is no change to users.

How ``check`` decides. It compares HEAD with the snapshot of the highest
version under ``api/`` (versions compared as numbers; no git tags or history
are used), which may be HEAD's own version once that release is cut. Every
breaking change griffe's ``find_breaking_changes`` finds is reported with its
public path, what changed and where HEAD defines it: a removed public name,
member or parameter, a parameter moved, made required, changed in kind or in
default, a required parameter added, a removed public base class. griffe does
not compare attributes; for a ``Literal`` alias (``BackendName``) this script
does: a member added (a new backend) is compatible, a member removed breaks
code that passes it, and an alias that is no longer a plain ``Literal[...]`` is
reported, since it can no longer be compared. Findings fail the check (exit 1)
unless HEAD's major version is greater than the snapshot's; then they are
listed as allowed. A HEAD version lower than the latest snapshot's fails too.
Not seen: a narrowed annotation (griffe does not judge types), a change of
behaviour, and classes reached only through an attribute (the
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
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import griffe

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "animalstore_client"
PUBLIC_MODULES = (PACKAGE, f"{PACKAGE}.testing")
FORMAT = 1
"""The snapshot format: bumped if what this script writes changes, so an old snapshot is not misread."""

ATTRS_CLASSES = frozenset(
    {"attrs.define", "attrs.frozen", "attrs.mutable", "attr.define", "attr.frozen", "attr.mutable", "attr.s"}
)
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


@dataclass
class Built:
    """A package's public API as a snapshot document, and where HEAD defines each public path."""

    document: dict[str, Any]
    locations: dict[str, str]


class _Builder:
    def __init__(self, package_dir: Path) -> None:
        self.package_dir = package_dir
        self.locations: dict[str, str] = {}

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
        return {
            "kind": "class",
            "name": name,
            "labels": sorted(class_.labels),
            "bases": bases,
            "members": dict(sorted(members.items())),
        }


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
    builder = _Builder(package_dir)
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
    return Built(document, builder.locations)


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


def _with_defaults(obj: dict[str, Any]) -> Any:
    # The snapshot leaves out line numbers; griffe's decoder expects the key.
    if obj.get("kind") in {"class", "function", "attribute", "alias", "type alias"}:
        obj.setdefault("lineno", None)
    return griffe.json_decoder(obj)


def decode(text: str, source: str) -> tuple[str, griffe.Module]:
    """A snapshot's version and its API as griffe objects."""
    document: object = json.loads(text, object_hook=_with_defaults)
    fields = cast("dict[str, object]", document) if isinstance(document, dict) else {}
    api = fields.get("api")
    if fields.get("format") != FORMAT or not isinstance(api, griffe.Module):
        raise SnapshotError(f"{source} is not a snapshot of format {FORMAT} (made by another version of this script?)")
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


def _change(breakage: griffe.Breakage) -> tuple[str, str]:
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
    elif isinstance(breakage, griffe.ClassRemovedBaseBreakage):
        change = f"[{', '.join(map(str, old))}] -> [{', '.join(map(str, new))}]"
    elif isinstance(breakage, (griffe.ObjectChangedKindBreakage, griffe.ReturnChangedTypeBreakage)):
        change = f"{old} -> {new}"
    if isinstance(parameter, griffe.Parameter):
        path = f"{path}({parameter.name})"
    return path, change


def _literal_members(value: str | None) -> list[str] | None:
    """The members of ``Literal[...]`` as source text, or None if the value is not one."""
    if value is None:
        return None
    try:
        node = ast.parse(value, mode="eval").body
    except SyntaxError:
        return None
    if not isinstance(node, ast.Subscript):
        return None
    name = node.value
    if not (
        (isinstance(name, ast.Name) and name.id == "Literal")
        or (isinstance(name, ast.Attribute) and name.attr == "Literal")
    ):
        return None
    elements = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
    return [ast.unparse(element) for element in elements]


def _attributes(obj: griffe.Object | griffe.Alias) -> Iterator[griffe.Attribute]:
    if isinstance(obj, griffe.Attribute):
        yield obj
    elif isinstance(obj, (griffe.Module, griffe.Class)):
        for member in obj.members.values():
            yield from _attributes(member)


def literal_findings(old: griffe.Module, new: griffe.Module) -> Iterator[tuple[griffe.Object, str, str]]:
    """Literal aliases that lost a member (griffe compares no attributes)."""
    for attribute in _attributes(old):
        old_members = _literal_members(_text(attribute.value))
        if old_members is None:
            continue
        relative = attribute.path[len(old.path) + 1 :]
        try:
            counterpart = new[relative]
        except KeyError:
            continue  # reported by griffe as removed
        if not isinstance(counterpart, griffe.Attribute):
            continue  # reported by griffe as a change of kind
        new_members = _literal_members(_text(counterpart.value))
        if new_members is None:
            yield attribute, "Literal alias is no longer a Literal[...]", f"{attribute.value} -> {counterpart.value}"
            continue
        removed = [member for member in old_members if member not in new_members]
        if removed:
            yield attribute, "Literal member was removed", ", ".join(removed)


def find_breaking_changes(old: griffe.Module, built: Built) -> list[Finding]:
    """Every breaking change from the snapshot ``old`` to the package ``built``."""
    _, new = decode(render(built.document), "HEAD")

    def where(path: str) -> str | None:
        # A removed object is placed at its parent in HEAD.
        while path and path not in built.locations:
            path = path.rpartition(".")[0]
        return built.locations.get(path)

    findings: list[Finding] = []
    for breakage in griffe.find_breaking_changes(old, new):
        path, change = _change(breakage)
        # str(breakage) is its kind's text: "Parameter was removed".
        findings.append(Finding(path, str(breakage), change, where(breakage.obj.path)))
    for attribute, kind, change in literal_findings(old, new):
        findings.append(Finding(attribute.path, kind, change, where(attribute.path)))
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
    if not findings:
        print(f"API check: {against}: no breaking change")
        return 0
    for finding in findings:
        print(finding)
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
