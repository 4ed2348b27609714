"""The book's Sphinx extensions (book/_ext), loaded from their files as Sphinx loads them, for their tests."""

from __future__ import annotations

import importlib.util
from types import ModuleType

from course import notebooks as nbs


def load(name: str) -> ModuleType:
    """The module ``book/_ext/<name>.py``, freshly executed."""
    spec = importlib.util.spec_from_file_location(name, nbs.ROOT / "book" / "_ext" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
