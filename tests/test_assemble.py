"""The assembler's answer bodies: a solution may name a ``qkv`` component, whose body is pasted into the stub with
the names it takes from its own module qualified by the notebook's alias for that module."""

from __future__ import annotations

import textwrap
import types

import pytest

from autograder import assemble
from qkv import attention


def _answers(**names) -> types.ModuleType:
    module = types.ModuleType("solutions_fake")
    module.__file__ = "solutions/fake.py"
    vars(module).update(names)
    return module


def test_a_components_own_names_are_qualified_and_imports_are_not():
    answers = _answers(ref=attention, DotProductAttention=attention.DotProductAttention)
    body = assemble.component_body(attention.DotProductAttention.forward, answers)
    assert "ref.masked_softmax(scores, valid_lens)" in body
    assert "math.sqrt(d)" in body and "torch.bmm(" in body, "imported modules keep their names"
    assert "ref.math" not in body and "ref.torch" not in body
    compile(
        "def forward(self, queries, keys, values, valid_lens=None):\n" + textwrap.indent(body, "    "), "<b>", "exec"
    )


def test_parameters_and_locals_that_shadow_module_names_are_left_alone():
    source = "def f(masked_softmax, x):\n    valid_mask = x\n    return masked_softmax(valid_mask)\n"
    namespace: dict = {}
    exec(compile(source, str(attention.__file__), "exec"), vars(attention) | namespace, namespace)
    fn = namespace["f"]
    fn.__module__ = attention.__name__
    import inspect

    original = inspect.getsource
    try:
        inspect.getsource = lambda obj: source
        body = assemble.component_body(fn, _answers(ref=attention))
    finally:
        inspect.getsource = original
    assert "ref." not in body, body


def test_a_component_whose_module_has_no_alias_in_the_solutions_is_refused_clearly():
    answers = _answers(DotProductAttention=attention.DotProductAttention)
    with pytest.raises(assemble.AssemblyError, match=r"masked_softmax.*from qkv import attention as ref"):
        assemble.component_body(attention.DotProductAttention.forward, answers)


def test_a_solution_written_out_is_pasted_as_it_is():
    def square(x):
        return x * x  # (n,)

    answers = _answers(square=square)
    square.__module__ = answers.__name__
    assert assemble.component_body(square, answers) == "return x * x  # (n,)"
