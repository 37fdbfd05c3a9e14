"""Release hygiene: one version number, every extra in the README's one table, py.typed
shipped, the changelog present."""

import importlib.metadata
import re
import tomllib
from pathlib import Path

import xad

ROOT = Path(__file__).resolve().parent.parent


def test_version_is_written_once_and_read_by_the_build():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "version" not in project["project"]
    assert project["project"]["dynamic"] == ["version"]
    assert project["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "xad.__version__"}
    assert re.fullmatch(r"\d+\.\d+\.\d+([ab]|rc)?\d*", xad.__version__)
    try:
        installed = importlib.metadata.version("xad")
    except importlib.metadata.PackageNotFoundError:
        return
    assert installed == xad.__version__


def test_every_extra_is_in_the_readme_table():
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"]
    readme = (ROOT / "README.md").read_text()
    table = readme[readme.index("[start:extras]"):readme.index("[end:extras]")]
    rows = [line.split("|")[1] for line in table.splitlines() if line.startswith("| `")]
    listed = {name for cell in rows for name in re.findall(r"`([a-z]+)`", cell)}
    missing = set(extras) - listed - {"ctk"}  # ctk: in the cupy row's text
    assert not missing, f"extras missing from the README's table: {sorted(missing)}"
    assert {"cupy", "mpi", "torch", "jax", "fast", "docs", "test"} <= set(extras)


def test_typed_package_and_changelog():
    assert (ROOT / "xad" / "py.typed").exists()
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "py.typed" in project["tool"]["setuptools"]["package-data"]["xad"]
    assert "## Unreleased" in (ROOT / "CHANGELOG.md").read_text()
