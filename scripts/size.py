"""How big the SDK is, by the figures 2.0 holds it to: ``python scripts/size.py`` (``--check`` exits 1 past one).

- **Hand-written lines**: every line of the package's ``.py`` files outside ``testing/`` and the ``_generated/``
  folders (``scripts/unasync.py``'s), less the regions ``scripts/codegen.py`` writes into hand-written modules
  (``# <... > written by scripts/codegen.py`` to ``# </...>``): blank lines, comments and docstrings count.
- **The largest hand-written modules**, and how many are over `MAX_MODULE_LINES`.
- **Private reaches listed**: the rows of ``docs/architecture.md``'s "Private attributes the SDK relies on" table.
- **Package base classes under each public client**: the classes of its MRO defined in this package, but itself.

Repeated code between modules is not measured here: the ``duplicates`` tool of the team's machines does it
(``duplicates --repo animalstore_client``), and the release note says what it found.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "animalstore_client"
sys.path.insert(0, str(ROOT))

MAX_LINES = 11_500
MAX_MODULE_LINES = 500
MAX_REACHES = 10
MAX_BASES = 1

_REGION = re.compile(r"^\s*# <(?!/)[^>]*> written by scripts/codegen\.py")
_REGION_END = re.compile(r"^\s*# </")


def hand_written() -> dict[str, int]:
    """Each hand-written module's lines, the codegen regions left out, by path under the package."""
    sizes: dict[str, int] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE).parts
        if parts[0] == "testing" or "_generated" in parts:
            continue
        counted, inside = 0, False
        for line in path.read_text(encoding="utf-8").splitlines():
            if _REGION.match(line):
                inside = True
            elif inside and _REGION_END.match(line):
                inside = False
            elif not inside:
                counted += 1
        sizes["/".join(parts)] = counted
    return sizes


def reaches() -> list[str]:
    """The private reaches docs/architecture.md lists: its table's rows, by their first cell."""
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    section = text.split("## Private attributes the SDK relies on", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| ") and not line.startswith("| reach |")]
    return [row.split(" | ", 1)[0].removeprefix("| ") for row in rows]


def bases() -> dict[str, list[str]]:
    """The package's own classes under each public client (its MRO but itself, ``object`` and ``Generic``)."""
    import animalstore_client

    found: dict[str, list[str]] = {}
    for cls in (animalstore_client.AnimalStoreClient, animalstore_client.AsyncAnimalStoreClient):
        found[cls.__name__] = [
            f"{base.__module__}.{base.__qualname__}"
            for base in cls.__mro__[1:]
            if base.__module__.startswith("animalstore_client")
        ]
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n", 1)[0])
    parser.add_argument("--check", action="store_true", help="exit 1 when a figure is past its limit")
    args = parser.parse_args(argv)
    sizes = hand_written()
    total = sum(sizes.values())
    largest = sorted(sizes.items(), key=lambda item: -item[1])
    over = [(name, lines) for name, lines in largest if lines > MAX_MODULE_LINES]
    listed = reaches()
    under = bases()
    print(f"hand-written lines: {total:,} (at most {MAX_LINES:,}) in {len(sizes)} modules")
    print(f"modules over {MAX_MODULE_LINES} lines: {len(over)} (at most 0)")
    for name, lines in largest[:5]:
        print(f"  {lines:5d}  {name}")
    print(f"private reaches listed in docs/architecture.md: {len(listed)} (at most {MAX_REACHES})")
    for reach in listed:
        print(f"  {reach}")
    for client, names in under.items():
        print(f"package base classes under {client}: {len(names)} (at most {MAX_BASES}): {', '.join(names)}")
    failed = total > MAX_LINES or over or len(listed) > MAX_REACHES or any(len(n) > MAX_BASES for n in under.values())
    return 1 if args.check and failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
