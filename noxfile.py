"""The unit and end-to-end suite on every supported CPython: ``nox`` (CI runs it; see .ci/run).

``tests`` runs on 3.12 and 3.13 with the pinned test requirements;
``minimum`` runs on 3.11, the oldest Python, with the oldest version
pyproject.toml declares of each library: the two ends of the range, as a
user pinned to the oldest would have them. Each installs the package and
tests/requirements.txt into a fresh virtual environment of its Python and
runs pytest without what the README's command runs once, on 3.11: the Prism
contract tests (Node.js-bound, the same on every Python), the stress tier
(``slow``), the client/library pairs of the libraries that run once
(``RUN_ONCE`` in tests/conftest.py) and the checks of the pages and tools
(``ONCE``). ``newest`` runs the README's command, the whole suite, on 3.14,
the newest Python (from ``../shared/tools/get-python.sh 3.14`` in CI). A
Python that is not installed fails the run, naming itself, rather than being
skipped.
"""

from __future__ import annotations

import tempfile
import tomllib
from pathlib import Path

import nox
from packaging.requirements import Requirement

nox.options.error_on_missing_interpreters = True
nox.options.reuse_venv = "yes"
nox.options.sessions = ["tests", "minimum", "newest"]

PYTHONS = ["3.12", "3.13"]
OLDEST = "3.11"
NEWEST = "3.14"

NOT_AT_MINIMUM = {
    # The test tools (pydantic, under FastAPI and schemathesis) need a newer one than the SDK does.
    "typing_extensions",
    # httpx2 has no version older than its pin to hold it at; its pairs run once, on 3.11 (marker ``httpx2``).
    "httpx2",
    "httpcore2",
}
TEST_MINIMUM = ["opentelemetry-sdk==1.30.0", "opentelemetry-instrumentation-httpx==0.51b0"]


def _floors() -> list[str]:
    """``name==lowest`` (its environment marker kept) for every declared requirement with a lower bound, from
    pyproject.toml's dependencies and every extra (a new library's extra is held at its floor with no edit
    here), but those in NOT_AT_MINIMUM."""
    project = tomllib.loads(Path("pyproject.toml").read_text(encoding="utf-8"))["project"]
    declared = [*project["dependencies"], *(r for extra in project["optional-dependencies"].values() for r in extra)]
    pins: list[str] = []
    for line in declared:
        requirement = Requirement(line)
        lowest = [spec.version for spec in requirement.specifier if spec.operator == ">="]
        if lowest and requirement.name not in NOT_AT_MINIMUM:
            pins.append(f"{requirement.name}=={lowest[0]}" + (f"; {requirement.marker}" if requirement.marker else ""))
    return pins


FLOORS = _floors()

# pip compiles every module it installs (dask's, fastapi's, schemathesis'... that the sessions never import): 12 to
# 16 CPU-seconds of each environment's install. Python compiles what a session imports the first time it imports it
# instead (.ci/run lets it write the bytecode), once, a few seconds.
INSTALL = ["-q", "--no-compile"]
# One process per session, not pyproject's pytest-xdist workers: .ci/run runs the three sessions side by side
# on the two cores, so a session's own workers would only add their start (each collects the whole suite) and the
# load that stretches the timing tests' waits.
PYTEST = ["python", "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "0"]
# What the sessions leave out (pytest markers): the Prism contract (Node.js-bound, the same on every Python), the
# stress tier, and the pairs of the libraries that run once (tests/conftest.py's RUN_ONCE): httpx2 and pyreqwest,
# new in 1.2.0. The README's command runs them all on 3.11, and `newest` on 3.14; `minimum` runs pyreqwest's pairs
# at its floor (httpx2 has no older release than its pin).
# <libraries: run once> written by scripts/codegen.py from _core.libraries.LIBRARIES (runs_once)
RUN_ONCE_LIBRARIES = ["httpx2", "pyreqwest"]
# </libraries>
RUN_ONCE_MARKERS = ["contract", "slow", *RUN_ONCE_LIBRARIES]


def _leaving_out(*kept: str) -> str:
    """The marker expression leaving out RUN_ONCE_MARKERS, but ``kept``."""
    return " and ".join(f"not {marker}" for marker in RUN_ONCE_MARKERS if marker not in kept)


ON_OTHER_PYTHONS = _leaving_out()
AT_MINIMUM = _leaving_out("pyreqwest")
# Checks of the pages and the tools, which no Python or library version changes: the docs' examples and the
# example scripts (type-checked with the 3.11 rules whatever runs them), the table of backends and extras, mypy
# and pyright over the tests, the built reference, the generated code, the benchmark smoke tests and the public
# API check (griffe); and schemathesis' check of the fake store's answers against the
# interface document, their shapes, which no Python changes (tests/test_fake_server.py holds the fake's behaviour on
# every Python). The README's command runs them once.
ONCE = [
    "test_benchmarks",
    "test_docs_examples",
    "test_examples",
    "test_backends_table",
    "test_static_checks",
    "test_public_api",
    "test_codegen",
    "test_layers",
    "test_api_snapshot",
    "test_fidelity",
]


# The tests that repeat an input (the fuzzers' examples, rows, tasks, runs) run a quarter of it here, the fuzzers
# the same sequence's first (tests/conftest.py's scaled); the README's command runs them all.
SHARE = {"ANIMALSTORE_TEST_SHARE": "0.25"}


def _not_once() -> list[str]:
    """pytest's options leaving out the modules in ONCE."""
    return [f"--ignore=tests/{name}.py" for name in ONCE]


def _own_temp(session: nox.Session) -> list[str]:
    """A pytest temporary directory of the session's own (CI runs the sessions at once: .ci/run), outside the
    project, as pytest's own is: a test that runs a user's pytest in its ``tmp_path`` (tests/test_testing_kit.py)
    found this project's pyproject.toml above one under .nox/, and its workers with it (17 CPU-seconds a run, not 1)."""
    return [f"--basetemp={Path(tempfile.gettempdir()) / f'animalstore-nox-{session.name}'}"]


def _show_versions(session: nox.Session) -> None:
    """Print the version of each library the SDK calls, as installed in the session (absent ones say so)."""
    names = sorted({Requirement(pin).name for pin in FLOORS})
    code = (
        "import importlib.metadata as m\n"
        f"for name in {names!r}:\n"
        "    try: print(name, m.version(name))\n"
        "    except m.PackageNotFoundError: print(name, 'not installed here')\n"
    )
    session.run("python", "-c", code)


@nox.session(python=PYTHONS)
def tests(session: nox.Session) -> None:
    """pytest on one Python with the pinned test requirements: all but the contract tests, the slow tier, the pairs
    of the libraries that run once and the checks that run once (ONCE)."""
    session.install(*INSTALL, "-e", ".", "-r", "tests/requirements.txt")
    session.run(*PYTEST, "-m", ON_OTHER_PYTHONS, *_own_temp(session), *_not_once(), *session.posargs, env=SHARE)


@nox.session(python=NEWEST)
def newest(session: nox.Session) -> None:
    """The README's test command on the newest Python: the whole suite, every pair, with pyproject's workers."""
    session.install(*INSTALL, "-e", ".", "-r", "tests/requirements.txt")
    session.run("python", "-m", "pytest", "-p", "no:cacheprovider", *_own_temp(session), *session.posargs)


@nox.session(python=OLDEST)
def minimum(session: nox.Session) -> None:
    """pytest on the oldest Python with the oldest version of every library the package declares (the
    OpenTelemetry API too), each library's pairs included but httpx2's (it has no release older than its pin)."""
    session.install(*INSTALL, "-e", ".", "-r", "tests/requirements.txt")
    # Installed over the pins: pip reports tools that want newer ones; none of them runs here.
    session.install(*INSTALL, *FLOORS, *TEST_MINIMUM)
    _show_versions(session)
    session.run(*PYTEST, "-m", AT_MINIMUM, *_own_temp(session), *_not_once(), *session.posargs, env=SHARE)
