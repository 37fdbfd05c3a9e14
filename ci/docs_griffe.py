"""A griffe extension for the docs site (mkdocs.yml loads it).

* xad's docstrings head their doctests ``Example:``; Google style spells the section
  ``Examples:``. Read as written, the doctest lines would render as Markdown text
  (``[0.1, 1]`` becoming a broken link); renamed on load, they render as code blocks.
* A module constant inspected at run time (``xad.pi``, ``xad.float32``) would show its
  type's docstring ("Convert a string or number to a floating point number"): the
  standard's constants get their own words, other such attributes none.
"""

from __future__ import annotations

import inspect
import re
from typing import Any

import griffe

_EXAMPLE = re.compile(r"^(\s*)Example:[ \t]*$", re.MULTILINE)


_CONSTANTS = {
    "e": "Euler's number, the base of natural logarithms (Array API constant).",
    "pi": "The ratio of a circle's circumference to its diameter (Array API constant).",
    "inf": "Positive infinity (Array API constant).",
    "nan": "Not a number (Array API constant).",
    "newaxis": "``None``: ``x[:, xad.newaxis]`` adds an axis (Array API constant).",
}


# what inspection reads as a constant's docstring: its type's
_TYPE_DOCS = {inspect.cleandoc(t.__doc__ or "") for t in (float, int, str, dict, list, bool,
                                                            type(None))} - {""}


class ExampleSections(griffe.Extension):
    """Rename each docstring's ``Example:`` section to ``Examples:``; give constants
    their own docstrings instead of their type's."""

    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is None:
            return
        obj.docstring.value = _EXAMPLE.sub(r"\1Examples:", obj.docstring.value)
        if obj.is_attribute and obj.docstring.value.strip() in _TYPE_DOCS:
            obj.docstring.value = _CONSTANTS.get(obj.name, "")
