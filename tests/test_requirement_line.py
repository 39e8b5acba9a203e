"""The requirement lines README.md and docs/index.md show install the SDK today: PEP 508 direct references.

The package is on no index yet, so ``animalstore-client[aiohttp]`` alone does
not resolve; ``animalstore-client[aiohttp] @ file:///...`` (a checkout) or
``@ git+https://...@v1.1.0`` (a tag) does, in ``pyproject.toml`` and in
``requirements.txt``. The slow test installs a throwaway project declaring
this checkout that way, and a requirements.txt with the same line, with pip,
into a fresh virtual environment; pip takes the other packages from the
package index as a user's install would.
"""

from __future__ import annotations

import importlib.metadata
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.version import Version

import animalstore_client

from .conftest import sample

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", ROOT / "docs" / "index.md"]
# A quoted or bare requirement naming the SDK by URL, as the pages write it.
_LINE = re.compile(r"animalstore-client(?:\[[\w,]+\])? @ [^\s\"',]+")

PYPROJECT = """\
[build-system]
requires = ["hatchling"]
build-backend = "hatchling.build"

[project]
name = "pet-shop"
version = "0.1.0"
dependencies = ["{requirement}"]

[tool.hatch.metadata]
allow-direct-references = true
"""


def _documented(page: Path) -> list[str]:
    return _LINE.findall(page.read_text(encoding="utf-8"))


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_the_pages_show_direct_references_that_parse(page: Path) -> None:
    """The page shows a file:// and a git+https:// line with the [aiohttp] extra, each a PEP 508 direct reference."""
    requirements = [Requirement(line) for line in _documented(page)]
    with_extra = {r.url.split(":", 1)[0] for r in requirements if r.url and r.extras == {"aiohttp"}}
    assert with_extra == {"file", "git+https"}, requirements
    for requirement in requirements:
        assert requirement.name == "animalstore-client"
        assert requirement.extras <= {"aiohttp", "otel"}
        # An absolute local path, or the placeholder git host: no real hosting address is promised.
        assert requirement.url is not None
        assert requirement.url.startswith(("file:///", "git+https://example.invalid/")), requirement


def _run(command: list[str], env: dict[str, str] | None = None, cwd: Path | None = None) -> str:
    """Run ``command`` within 10 minutes; its output, or a failure showing it."""
    result = subprocess.run(command, capture_output=True, text=True, timeout=600, check=False, env=env, cwd=cwd)
    assert result.returncode == 0, f"{command}:\n{result.stdout}\n{result.stderr}"
    return result.stdout


@pytest.mark.slow
def test_a_project_declaring_the_sdk_by_file_url_installs_it(tmp_path: Path) -> None:
    """One pip install of a project whose pyproject.toml needs ``animalstore-client[aiohttp] @ file://<checkout>`` and
    of a requirements.txt with the same line accepts both; the fresh environment imports the SDK and aiohttp. The
    everyday tier installs by the requirements.txt alone (`sample`)."""
    requirement = f"animalstore-client[aiohttp] @ {ROOT.as_uri()}"
    project = tmp_path / "pet-shop"
    (project / "pet_shop").mkdir(parents=True)
    (project / "pet_shop" / "__init__.py").write_text("", encoding="utf-8")
    (project / "pyproject.toml").write_text(PYPROJECT.format(requirement=requirement), encoding="utf-8")
    (tmp_path / "requirements.txt").write_text(requirement + "\n", encoding="utf-8")
    venv = tmp_path / "venv"
    python = str(venv / ("Scripts" if os.name == "nt" else "bin") / "python")
    # This environment's pip installs into the fresh one (--python, pip 22.3 and later): ensurepip putting a second
    # pip there cost a quarter of the test. Without such a pip here, the fresh environment gets its own.
    try:
        here = Version(importlib.metadata.version("pip")) >= Version("22.3")
    except importlib.metadata.PackageNotFoundError:
        here = False
    _run([sys.executable, "-m", "venv", *(["--without-pip"] if here else []), str(venv)])
    pip = [sys.executable, "-m", "pip", "--python", python] if here else [python, "-m", "pip"]
    # The variables of this run (a virtualenv's, a PYTHONPATH) must not leak into the fresh one.
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    # One resolution holds both lines: the same URL twice is one requirement, so the SDK is built once, and a
    # line either file spelled wrongly fails the install. --no-compile: the imports below need no bytecode.
    # --no-cache-dir: pip keeps the wheel it built from a directory whose name looks like name-version (a checkout
    # in .../animalstore-client), keyed by the URL alone, and would install that one after the version changed.
    install = ["install", "--quiet", "--disable-pip-version-check", "--no-compile", "--no-cache-dir"]
    # The everyday tier installs by requirements.txt alone: the project is a second build in an environment of its
    # own (a quarter of the test's CPU).
    declared = {"requirements.txt": ["-r", str(tmp_path / "requirements.txt")], "pyproject.toml": [str(project)]}
    forms = sample(list(declared))
    _run([*pip, *install, *(argument for form in forms for argument in declared[form])], env=env, cwd=tmp_path)
    modules = ["aiohttp", "animalstore_client", *(["pet_shop"] if "pyproject.toml" in forms else [])]
    code = f"import {', '.join(modules)}; print(animalstore_client.__version__); print(animalstore_client.__file__)"
    version, location = _run([python, "-c", code], env=env, cwd=tmp_path).split()
    assert version == animalstore_client.__version__
    assert Path(location).is_relative_to(venv), location  # installed, not this checkout on a path
    shown = _run([*pip, "show", "animalstore-client"], env=env, cwd=tmp_path)
    assert f"Version: {animalstore_client.__version__}" in shown
