"""The docs site covers every documented module: each has its API page, listed in the site's
navigation, with the marker that renders its public names (ci/docs_api.py). The rendered
result is checked after a build by ``python ci/docs_api.py site`` (part of ci/docs.sh)."""

import importlib
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "ci"))
import docs_api  # noqa: E402

REQUIRED = ["xad", "xad.nn", "xad.nn.functional", "xad.optim", "xad.data", "xad.amp",
            "xad.distributed", "xad.linalg", "xad.fft", "xad.viz"]


def test_every_required_module_is_documented():
    assert set(REQUIRED) <= set(docs_api.MODULES)
    assert any(m.startswith("xad.utils.") for m in docs_api.MODULES)


@pytest.mark.parametrize("module", list(docs_api.MODULES))
def test_module_page_renders_its_names(module):
    page = docs_api.MODULES[module]
    text = (ROOT / "docs" / page).read_text()
    assert f"<!-- api: {module}" in text, f"docs/{page} lacks the marker for {module}"
    assert f": {page}" in (ROOT / "mkdocs.yml").read_text(), f"{page} is not in the nav"
    names = docs_api.public_names(module)
    assert names, f"{module} has no public names"
    mod = importlib.import_module(module)
    assert all(hasattr(mod, n) for n in names)
    entries = docs_api.entries(module)
    assert all(f"::: {docs_api.identifier(module, n)}\n" in entries for n in names)


def test_top_level_names_are_grouped():
    entries = docs_api.entries("xad")
    for title in ("## Tensor", "## Transforms", "## Elementwise operations", "## Constants"):
        assert title in entries
    names = docs_api.public_names("xad")
    assert {"Tensor", "grad", "exp", "float32", "pi", "compile"} <= set(names)
    assert not {"numpy", "annotations", "engine", "graph"} & set(names)
