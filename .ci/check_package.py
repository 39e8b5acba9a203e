"""Check the built wheel and sdist hold what they should (run by .ci/run after ``python -m build``)."""

from __future__ import annotations

import sys
import tarfile
import zipfile
from pathlib import Path

dist = Path(sys.argv[1] if len(sys.argv) > 1 else "dist")
[wheel] = dist.glob("*.whl")
[sdist] = dist.glob("*.tar.gz")

names = zipfile.ZipFile(wheel).namelist()
stray = [n for n in names if not n.startswith(("animalstore_client/", "animalstore_client-"))]
assert not stray, f"the wheel holds files outside the package: {stray}"
assert "animalstore_client/py.typed" in names, "the wheel lacks py.typed"
assert "animalstore_client/testing/__main__.py" in names, "the wheel lacks the testing kit"
assert not any("/tests/" in n or n.startswith("tests/") for n in names), "the wheel holds tests"

with tarfile.open(sdist) as archive:
    members = {m.split("/", 1)[1] for m in archive.getnames() if "/" in m}
needed_in_sdist = (
    "CHANGELOG.md",
    "README.md",
    "pyproject.toml",
    "tests/test_client.py",
    "docs/usage.md",
    "examples/quickstart.py",
    "scripts/unasync.py",
    "scripts/api_snapshot.py",
    "api/1.1.0.json",
)
for needed in needed_in_sdist:
    assert needed in members, f"the sdist lacks {needed}"
print(f"ok: {wheel.name} ({len(names)} files, package only), {sdist.name} (with tests, docs and changelog)")
