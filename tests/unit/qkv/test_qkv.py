"""The package qkv: its docstring's table of modules names every module it ships."""

from __future__ import annotations

import pkgutil

import qkv


def test_the_module_table_lists_every_module():
    shipped = {f"qkv.{m.name}" for m in pkgutil.iter_modules(qkv.__path__)}
    assert {"qkv.vit", "qkv.recipes", "qkv.lm", "qkv.costlab", "qkv._validate"} <= shipped
    missing = sorted(name for name in shipped if f":mod:`{name}`" not in qkv.__doc__)
    assert not missing, f"qkv/__init__.py's table of sections and modules leaves out {missing}"
