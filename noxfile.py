"""The unit and end-to-end suite on every supported CPython: ``nox`` (CI runs it; see .ci/run).

Each session installs the package and tests/requirements.txt into a fresh
virtual environment of that Python and runs pytest without the Prism
contract tests (Node.js-bound, the same on every Python), the stress tier
(``slow``: thousands of calls from many threads, run once by the README's
command) and the benchmark smoke tests. A Python that is not installed fails the run, naming itself,
rather than being skipped.
"""

from __future__ import annotations

import nox

nox.options.error_on_missing_interpreters = True
nox.options.reuse_venv = "yes"
nox.options.sessions = ["tests"]

PYTHONS = ["3.10", "3.11", "3.12", "3.13"]


@nox.session(python=PYTHONS)
def tests(session: nox.Session) -> None:
    """pytest on one Python: everything but the contract tests, the slow stress tier and the benchmark smoke tests."""
    session.install("-q", "-e", ".", "-r", "tests/requirements.txt")
    session.run(
        "python",
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        "-m",
        "not contract and not slow",
        "--ignore",
        "tests/test_benchmarks.py",
        *session.posargs,
    )
