"""The unit and end-to-end suite on every supported CPython: ``nox`` (CI runs it; see .ci/run).

Each session installs the package and tests/requirements.txt into a fresh
virtual environment of that Python and runs pytest without the Prism
contract tests (Node.js-bound, the same on every Python), the stress tier
(``slow``: thousands of calls from many threads), the client/library pairs
of httpx2 and pyreqwest (new in 1.2.0) and the checks of the pages and tools
(``ONCE``), all of which the README's command runs once, on 3.11. A Python
that is not installed fails the run, naming itself, rather than being skipped.
"""

from __future__ import annotations

import re
from pathlib import Path

import nox
import tomllib

nox.options.error_on_missing_interpreters = True
nox.options.reuse_venv = "yes"
nox.options.sessions = ["tests"]

PYTHONS = ["3.10", "3.11", "3.12", "3.13"]

# The `minimum` session installs the lowest version pyproject.toml declares of each library the SDK
# calls (its dependencies and every extra: a new library's extra is tested at its floor with no edit
# here), over the test requirements; and the oldest OpenTelemetry SDK the tests' checks run on.
NOT_AT_MINIMUM = {
    # The test tools (pydantic, under FastAPI and schemathesis) need a newer one than the SDK does.
    "typing_extensions",
    # The httpx2 pairs run once, on 3.11 with the README's command (marker ``httpx2``), not in this session.
    "httpx2",
    "httpcore2",
}
TEST_MINIMUM = ["opentelemetry-sdk==1.30.0", "opentelemetry-instrumentation-httpx==0.51b0"]


def _minimum() -> list[str]:
    """``name==lowest`` for every declared requirement with a lower bound, but those in NOT_AT_MINIMUM."""
    project = tomllib.loads(Path("pyproject.toml").read_text(encoding="utf-8"))["project"]
    declared = [*project["dependencies"], *(r for extra in project["optional-dependencies"].values() for r in extra)]
    pins: list[str] = []
    for requirement in declared:
        match = re.match(r"\s*([A-Za-z0-9_.-]+)\s*(?:\[[^]]*])?\s*[^;]*?>=\s*([0-9][^,;\s]*)", requirement)
        if match and match[1] not in NOT_AT_MINIMUM:
            pins.append(f"{match[1]}=={match[2]}")
    return [*pins, *TEST_MINIMUM]


MINIMUM = _minimum()
# Two pytest-xdist workers, not pyproject's four: .ci/run runs two sessions side by side on the two cores, and the
# package's checks beside them. Three took as long (5 minutes a session), each worker's start costing 10 CPU-s.
PYTEST = ["python", "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "2"]
# What the sessions leave out (pytest markers): the Prism contract (Node.js-bound, the same on every Python), the
# stress tier, and the pairs of the libraries new in 1.2.0 (tests/conftest.py's RUN_ONCE), which the README's
# command runs on 3.11. The minimum session runs pyreqwest's pairs at its floor; httpx2 has none older than its pin.
ON_OTHER_PYTHONS = "not contract and not slow and not httpx2 and not pyreqwest"
AT_MINIMUM = "not contract and not slow and not httpx2"
# Checks of the pages and the tools, which no Python or library version changes: the docs' examples and the
# example scripts (type-checked with the 3.10 rules whatever runs them), the table of backends and extras, mypy
# and pyright over the tests, the built reference, the generated code, the benchmark smoke tests and the public
# API check (griffe, which needs Python 3.11). The README's command runs them once.
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
]


def _not_once() -> list[str]:
    """pytest's options leaving out the modules in ONCE."""
    return [f"--ignore=tests/{name}.py" for name in ONCE]


def _own_temp(session: nox.Session) -> list[str]:
    """A pytest temporary directory of the session's own: CI runs two sessions at once (.ci/run)."""
    return [f"--basetemp={session.create_tmp()}/pytest"]


@nox.session(python=PYTHONS)
def tests(session: nox.Session) -> None:
    """pytest on one Python: all but the contract tests, the slow tier, the new libraries' pairs and the checks
    that run once (ONCE)."""
    session.install("-q", "-e", ".", "-r", "tests/requirements.txt")
    session.run(*PYTEST, "-m", ON_OTHER_PYTHONS, *_own_temp(session), *_not_once(), *session.posargs)


@nox.session(python="3.11")
def minimum(session: nox.Session) -> None:
    """pytest with the oldest versions of every library the package declares (the OpenTelemetry API too)."""
    session.install("-q", "-e", ".", "-r", "tests/requirements.txt")
    # Installed over the pins: pip reports tools that want newer ones; none of them runs here.
    session.install("-q", *MINIMUM)
    versions = "import httpx, httpcore, aiohttp, urllib3, pyreqwest; print(httpx.__version__, httpcore.__version__)"
    session.run("python", "-c", versions)
    session.run(*PYTEST, "-m", AT_MINIMUM, *_own_temp(session), *_not_once(), *session.posargs)
