"""A griffe extension for the docs site (mkdocs.yml loads it): xad's docstrings head their
doctests ``Example:``; Google style spells the section ``Examples:``. Read as written, the
doctest lines would render as Markdown text (``[0.1, 1]`` becoming a broken link); renamed
on load, they render as Python code blocks."""

from __future__ import annotations

import re
from typing import Any

import griffe

_EXAMPLE = re.compile(r"^(\s*)Example:[ \t]*$", re.MULTILINE)


class ExampleSections(griffe.Extension):
    """Rename each docstring's ``Example:`` section to ``Examples:``."""

    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = _EXAMPLE.sub(r"\1Examples:", obj.docstring.value)
