"""The installed wheel's public types are complete, with no optional library and with all of them (run by .ci/run).

    python .ci/verify_types.py --bare VENV --full VENV

For each virtual environment (the wheel installed in it; ``--bare`` with
none of the optional libraries, ``--full`` with all of them), with the
pyright next to this interpreter (the pinned one of .ci/requirements.txt):

- ``pyright --verifytypes animalstore_client --ignoreexternal`` must read a
  completeness score of 100 %, for the package installed in that
  environment (not this checkout);
- and without ``--ignoreexternal``, no symbol of the package may have a type
  that is ``Unknown``. ``--ignoreexternal`` rightly forgives httpx's own
  gaps, but it forgives a class imported by name from a library that is not
  installed too (``from opentelemetry.trace import TracerProvider``), which
  a user's strict pyright reports all the same.

pyright takes the environment from the ``python`` on ``PATH``:
``--verifytypes`` ignores ``--pythonpath`` (1.1.414, which then finds no
package). It runs in an empty directory, so that neither this checkout's
source nor its configuration is what it reads.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

PACKAGE = "animalstore_client"
ROOT = Path(__file__).resolve().parent.parent
# The module each extra that adds no HTTP library installs, which its requirement does not name
# (opentelemetry-api installs ``opentelemetry``). An extra declared without an entry here stops the check.
_OTHER_EXTRAS_MODULES = {"otel": "opentelemetry"}
_UNKNOWN = re.compile(r"\bUnknown\b")


def _declarations() -> Any:
    """``_core/libraries.py`` of this checkout, loaded alone as ``scripts/codegen.py`` loads it: this script runs
    in the development environment, not in the environments it checks."""
    spec = importlib.util.spec_from_file_location("libraries_declaration", ROOT / PACKAGE / "_core" / "libraries.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # attrs resolves the class's annotations through it
    spec.loader.exec_module(module)
    return module


def optional_modules() -> tuple[str, ...]:
    """The optional libraries' top-level modules, from the declarations: none in the bare environment, all in the
    full one (each library an extra installs, and what the other extras install)."""
    declarations = _declarations()
    unknown = [extra.name for extra in declarations.OTHER_EXTRAS if extra.name not in _OTHER_EXTRAS_MODULES]
    if unknown:
        raise SystemExit(
            f".ci/verify_types.py: which module does the extra {', '.join(unknown)} install? Add it to "
            "_OTHER_EXTRAS_MODULES"
        )
    return (
        *(library.name for library in declarations.LIBRARIES if library.extra is not None),
        *(_OTHER_EXTRAS_MODULES[extra.name] for extra in declarations.OTHER_EXTRAS),
    )


def _python(venv: Path) -> Path:
    return venv / "bin" / "python"


def _missing(venv: Path, modules: tuple[str, ...]) -> list[str]:
    """Which of ``modules`` the environment's interpreter cannot import."""
    script = (
        "import importlib.util, sys; print(' '.join(m for m in sys.argv[1:] if importlib.util.find_spec(m) is None))"
    )
    result = subprocess.run(
        [str(_python(venv)), "-c", script, *modules], capture_output=True, text=True, check=True, timeout=60
    )
    return result.stdout.split()


def _verifytypes(venv: Path, *, ignore_external: bool) -> dict[str, Any]:
    pyright = Path(sys.executable).parent / "pyright"
    command = [str(pyright), "--verifytypes", PACKAGE, "--outputjson"]
    if ignore_external:
        command.append("--ignoreexternal")
    env = {**os.environ, "PATH": f"{venv.resolve() / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}"}
    env.pop("PYTHONPATH", None)
    with tempfile.TemporaryDirectory() as empty:
        # pyright exits 1 when it finds a gap; the report says what it found either way.
        result = subprocess.run(command, capture_output=True, text=True, check=False, cwd=empty, env=env, timeout=600)
    try:
        report: dict[str, Any] = json.loads(result.stdout)
    except json.JSONDecodeError:
        raise SystemExit(f"pyright --verifytypes gave no report:\n{result.stdout}\n{result.stderr}") from None
    completeness: dict[str, Any] = report["typeCompleteness"]
    return completeness


def check(venv: Path, kind: str, optional: tuple[str, ...]) -> list[str]:
    """The problems of one environment's installed package; none when its types are complete.

    ``optional`` are the optional libraries' modules (`optional_modules`).
    """
    problems: list[str] = []
    missing = _missing(venv, optional)
    if kind == "bare" and len(missing) != len(optional):
        present = sorted(set(optional) - set(missing))
        return [f"{venv}: optional libraries installed in the bare environment: {', '.join(present)}"]
    if kind == "full" and missing:
        return [f"{venv}: optional libraries missing from the full environment: {', '.join(missing)}"]

    report = _verifytypes(venv, ignore_external=True)
    root = str(report.get("packageRootDirectory", ""))
    if "site-packages" not in root:
        return [f"{venv}: pyright did not read the installed package (package directory {root!r})"]
    score = float(report["completenessScore"])
    for symbol in report["symbols"]:
        for diagnostic in symbol.get("diagnostics", []):
            if diagnostic.get("severity") == "error":
                problems.append(f"{symbol['name']}: {diagnostic['message']}")
    if score < 1:
        problems.insert(0, f"completeness score {score:.1%}, not 100 %")

    for symbol in _verifytypes(venv, ignore_external=False)["symbols"]:
        if not str(symbol["name"]).startswith(f"{PACKAGE}."):
            continue
        for diagnostic in symbol.get("diagnostics", []):
            if _UNKNOWN.search(diagnostic["message"]):
                problems.append(
                    f"{symbol['name']}: an Unknown type (read without --ignoreexternal): {diagnostic['message']}"
                )
    if not problems:
        print(f"ok: {PACKAGE} in {venv} ({kind}): type completeness 100 %, no Unknown type ({root})")
    return [f"{venv} ({kind}): {problem}" for problem in problems]


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").strip().splitlines()[0])
    parser.add_argument(
        "--bare", type=Path, required=True, help="an environment with the wheel and no optional library"
    )
    parser.add_argument(
        "--full", type=Path, required=True, help="an environment with the wheel and every optional library"
    )
    arguments = parser.parse_args()
    optional = optional_modules()
    problems = check(arguments.bare, "bare", optional) + check(arguments.full, "full", optional)
    for problem in problems:
        print(problem.replace("\xa0", " "), file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
