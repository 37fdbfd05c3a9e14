"""The docs site's API reference: which names are public, and what renders them.

One definition of "public" serves three users:

* the MkDocs hook (``hooks:`` in mkdocs.yml): a page line ``<!-- api: xad.nn -->`` becomes
  one ``::: xad.nn.Linear`` entry (mkdocstrings) per public name, so a name added to xad
  appears on the site without editing a page;
* ``python ci/docs_api.py site``: after a build, lists every public name the site's
  ``objects.inv`` lacks (exit 1 if any), so a name that failed to render fails CI;
* ``tests/test_docs_api.py``: every documented module has its page and marker.

Public names of a module: its ``__all__`` when it has one; otherwise every name not
starting with ``_`` whose object was defined in xad (not a submodule, not an import from
another library), plus the module's plain constants (``xad.pi``).
"""

from __future__ import annotations

import importlib
import os
import sys
import types
import zlib

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)  # this checkout's xad, installed or not

# module -> the page (under docs/) that renders it
MODULES: dict[str, str] = {
    "xad": "api/xad.md",
    "xad.nn": "api/nn.md",
    "xad.nn.functional": "api/nn.functional.md",
    "xad.nn.init": "api/nn.init.md",
    "xad.nn.utils": "api/nn.utils.md",
    "xad.optim": "api/optim.md",
    "xad.optim.lr_scheduler": "api/optim.lr_scheduler.md",
    "xad.data": "api/data.md",
    "xad.amp": "api/amp.md",
    "xad.distributed": "api/distributed.md",
    "xad.distributions": "api/distributions.md",
    "xad.linalg": "api/linalg.md",
    "xad.fft": "api/fft.md",
    "xad.utils.gradcheck": "api/utils.md",
    "xad.utils.checkpoint": "api/utils.md",
    "xad.utils.anomaly": "api/utils.md",
    "xad.utils.serialization": "api/utils.md",
    "xad.viz": "api/viz.md",
    "xad.as_torch": "api/as_torch.md",
    "xad.torch_functions": "api/torch_functions.md",
    "xad.torch_linalg": "api/torch_linalg.md",
    "xad.torch_matrix_functions": "api/torch_matrix_functions.md",
    "xad.torch_out": "api/torch_out.md",
}

# the top-level page groups names by the module that defines them
SECTIONS: list[tuple[str, tuple[str, ...]]] = [
    ("Tensor", ("xad.tensor",)),
    ("Creating tensors", ("xad.factories", "xad.ops.creation")),
    ("Data types", ("xad.dtypes", "xad.ops.dtype_functions")),
    ("Backends and devices", ("xad.backend", "xad.context", "xad.ops.transfer")),
    ("Autograd", ("xad.autograd", "xad.grad_mode", "xad.function")),
    ("Transforms", ("xad.transforms",)),
    ("Compilation", ("xad.compile",)),
    ("Elementwise operations", ("xad.ops.elementwise", "xad.ops.elementwise_math",
                                "xad.ops.complex_parts", "xad.ops.inplace")),
    ("Reductions", ("xad.ops.reduce", "xad.ops.normalization")),
    ("Shapes and broadcasting", ("xad.ops.manipulation", "xad.ops.shape",
                                 "xad.ops.broadcast")),
    ("Indexing, selection and sorting", ("xad.ops.indexing", "xad.ops.select",
                                         "xad.ops.sorting")),
    ("Matrix products", ("xad.ops.linalg",)),
    ("Random numbers", ("xad.generator",)),
    ("Utilities", ("xad.utils",)),
    ("Defining operations", ("xad.ops",)),
]
OTHER = "Other names"
CONSTANTS = "Constants"


def _is_constant(obj: object) -> bool:
    return obj is None or isinstance(obj, int | float | str)


def public_names(module_name: str) -> list[str]:
    """The public names of ``module_name`` (see the module docstring), in a stable order."""
    mod = importlib.import_module(module_name)
    if hasattr(mod, "__all__"):
        return [n for n in mod.__all__ if not isinstance(getattr(mod, n), types.ModuleType)]
    names = []
    for name in sorted(vars(mod)):
        obj = getattr(mod, name)
        if name.startswith("_") or isinstance(obj, types.ModuleType):
            continue
        origin = getattr(obj, "__module__", None) if callable(obj) else None
        if _is_constant(obj) or (origin or "").startswith("xad") or _defined_here(mod, obj):
            names.append(name)
    return names


def _defined_here(mod: types.ModuleType, obj: object) -> bool:
    """A non-callable object (a DType, a registry dict) made in xad, not imported."""
    return not callable(obj) and type(obj).__module__.startswith("xad")


def _section(obj: object) -> str:
    if _is_constant(obj):
        return CONSTANTS
    origin = getattr(obj, "__module__", None) or type(obj).__module__
    for title, prefixes in SECTIONS:
        if any(origin == p or origin.startswith(p + ".") for p in prefixes):
            return title
    return OTHER


def entries(module_name: str, level: int = 2) -> str:
    """The Markdown that renders ``module_name``'s public names (one ``:::`` each), headed
    at ``level`` (the top-level ``xad`` in sections at ``level``, entries one below)."""
    mod = importlib.import_module(module_name)
    names = public_names(module_name)
    if module_name != "xad":
        return "\n".join(_entry(module_name, n, level) for n in names)
    groups: dict[str, list[str]] = {}
    for n in names:
        groups.setdefault(_section(getattr(mod, n)), []).append(n)
    order = [t for t, _ in SECTIONS] + [CONSTANTS, OTHER]
    out = []
    for title in order:
        if title in groups:
            out.append(f"{'#' * level} {title}\n")
            out.extend(_entry(module_name, n, level + 1) for n in groups[title])
    return "\n".join(out)


def _entry(module_name: str, name: str, level: int) -> str:
    return f"::: {identifier(module_name, name)}\n    options:\n      heading_level: {level}\n"


def identifier(module_name: str, name: str) -> str:
    """The identifier mkdocstrings renders for ``module.name``: that, unless ``name`` is
    also the name of a package that re-exports it (``xad.compile``, the function, and
    ``xad.compile``, the package), where the object's own path
    (``xad.compile.compiled.compile``) picks the function, not the package."""
    obj = getattr(importlib.import_module(module_name), name)
    path = f"{module_name}.{name}"
    if path in sys.modules and getattr(obj, "__module__", path) != path:
        return f"{obj.__module__}.{obj.__qualname__}"
    return path


def on_page_markdown(markdown: str, page, config, files) -> str:  # noqa: ANN001 (MkDocs hook)
    """MkDocs hook: expand each ``<!-- api: MODULE [LEVEL] -->`` line of a page."""
    lines: list[str] = []
    for line in markdown.splitlines():
        s = line.strip()
        if s.startswith("<!-- api:") and s.endswith("-->"):
            module_name, *level = s[len("<!-- api:"):-3].split()
            lines.append(entries(module_name, int(level[0]) if level else 2))
        else:
            lines.append(line)
    return "\n".join(lines) + "\n"


def inventory(site_dir: str) -> set[str]:
    """The object names in a built site's ``objects.inv`` (Sphinx inventory v2)."""
    with open(os.path.join(site_dir, "objects.inv"), "rb") as f:
        for _ in range(4):
            f.readline()
        body = zlib.decompress(f.read()).decode()
    return {line.split(" ", 1)[0] for line in body.splitlines() if line}


def missing(site_dir: str) -> list[str]:
    """Public names without a rendered entry in the built site."""
    have = inventory(site_dir)
    return [f"{m}.{n}" for m in MODULES for n in public_names(m) if identifier(m, n) not in have]


if __name__ == "__main__":
    lost = missing(sys.argv[1] if len(sys.argv) > 1 else "site")
    total = sum(len(public_names(m)) for m in MODULES)
    for name in lost:
        print("docs: no rendered API entry for", name)
    print(f"docs: {total - len(lost)}/{total} public names rendered")
    sys.exit(1 if lost else 0)
