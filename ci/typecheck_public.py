"""Every public name of the documented modules (ci/docs_api.py's list) has a type an editor
can use: mypy must not see a public function or class as ``Any`` or as an untyped
``(*Any, **Any) -> Any`` (what an unannotated decorator leaves).

    python ci/typecheck_public.py        # part of ci/typecheck.sh; exit 1 with the names
"""

from __future__ import annotations

import importlib
import os
import re
import sys
import tempfile

from docs_api import MODULES, public_names
from mypy import api

UNTYPED = ("Any", "def (*Any, **Any) -> Any")


def main() -> int:
    names = [f"{m}.{n}" for m in MODULES for n in public_names(m)
             if callable(getattr(importlib.import_module(m), n))]
    lines = ["import " + ", ".join(MODULES)] + [f"reveal_type({n})" for n in names]
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "reveal_public.py")
        with open(path, "w") as f:
            f.write("\n".join(lines) + "\n")
        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        os.environ["MYPYPATH"] = root
        out, err, _ = api.run(["--follow-imports=silent", "--ignore-missing-imports",
                               "--no-incremental", "--config-file=", path])
    revealed = {int(m[1]): m[2] for m in re.finditer(r":(\d+): note: Revealed type is \"(.*)\"",
                                                      out)}
    bad = [f"{names[i - 2]}: {revealed.get(i, 'not found')}" for i in range(2, len(names) + 2)
           if revealed.get(i, "Any") in UNTYPED]
    for line in bad:
        print("typecheck: untyped public name", line)
    if bad:
        print("typecheck: annotate it (a decorator keeps fn's signature when typed as "
              "`(fn: F) -> F`); an xad.NAME that mypy cannot see at all comes from a module "
              "xad/__init__.py does not star-import (tests/test_typing_exports.py)")
    print(f"typecheck: {len(names) - len(bad)}/{len(names)} public callables typed")
    return 1 if bad or err else 0


if __name__ == "__main__":
    sys.exit(main())
