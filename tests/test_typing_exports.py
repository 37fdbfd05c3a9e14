"""Type checkers see every operation at the top level: mypy cannot evaluate ``xad.ops``'s
computed ``__all__``, so ``xad/__init__.py`` star-imports each ops module too. A module
star-imported by ``xad/ops/__init__.py`` but not by ``xad/__init__.py`` would leave its
operations invisible to editors (``ci/typecheck.sh`` would report them as untyped)."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_top_level_star_imports_every_ops_module():
    ops = set(re.findall(r"^from \.(\w+) import \*", (ROOT / "xad/ops/__init__.py").read_text(),
                         re.MULTILINE))
    top = set(re.findall(r"^from \.ops\.(\w+) import \*", (ROOT / "xad/__init__.py").read_text(),
                         re.MULTILINE))
    assert ops, "xad/ops/__init__.py star-imports no module (test out of date)"
    missing = sorted(ops - top)
    assert not missing, (f"add `from .ops.{missing[0]} import *  # noqa: F403` to xad/__init__.py "
                         f"(beside the others) for: {missing}")
