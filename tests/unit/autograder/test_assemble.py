"""The assembler's answer bodies: a solution may name a ``qkv`` component, whose body is pasted into the stub with
the names it takes from its own module qualified by the notebook's alias for that module."""

from __future__ import annotations

import ast
import builtins
import textwrap
import types

import pytest

from autograder import assemble
from course import notebooks as nbs
from course.section import section, sections
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


def _reads(tree: ast.AST) -> set[str]:
    """The names a piece of code reads and does not bind itself (nor takes from the builtins)."""
    loads = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    return loads - assemble._bound_names(tree) - set(dir(builtins))


def _parse_cell(source: str) -> ast.AST:
    """A notebook cell's Python, its IPython lines (``%magic``, ``!command``) left out."""
    return ast.parse("\n".join("" if line.lstrip()[:1] in ("%", "!") else line for line in source.splitlines()))


@pytest.mark.parametrize("slug", [s.slug for s in sections()])
def test_each_hidden_block_reads_only_the_notebooks_names_and_the_builtins(slug):
    """When graded, each hidden block runs in a namespace of its own (autograder.sandboxed.guard.run_hidden): the
    notebook's names and the builtins, not what another hidden block bound, which the in-process tests would not
    notice."""
    sec = section(slug)
    notebook, blocks = set(), {}
    for cell in sec.read().cells:
        if cell.cell_type != "code":
            continue
        notebook |= assemble._bound_names(_parse_cell(cell.source))
        if nbs.role(cell) == "test":
            blocks[nbs.grade_id(cell)] = assemble.hidden_tests(sec, nbs.grade_id(cell))
    for grade, block in blocks.items():
        if block is not None:
            missing = _reads(ast.parse(block)) - notebook
            assert not missing, f"{sec.hidden_test(grade)} reads {sorted(missing)}, which the notebook does not bind"


def test_the_reads_of_a_block_are_what_it_does_not_bind():
    tree = ast.parse("import math as _m\n_x = [i for i in range(3)]\nchecks.check_true(_m.pi > answer(_x), 'w')")
    assert _reads(tree) == {"checks", "answer"}


def test_a_hidden_test_gets_its_helpers_where_it_imports_them_and_only_then():
    """``from _common import ...`` in a hidden test is replaced by the section's ``_common.py``, ``from _shared import
    ...`` by the course's ``autograder/sections/_shared.py`` (the statement a linter can read, the text the sandbox
    runs); a hidden test that imports neither gets none of them."""
    for slug, grade, helpers in (
        ("transformer", "test_TransformerDecoderBlock", section("transformer").hidden_common),
        ("queries-keys-values", "test_attention_pooling", section("queries-keys-values").shared_helpers),
    ):
        sec = section(slug)
        text_of_helpers = helpers.read_text(encoding="utf-8").strip("\n")
        importing = sec.hidden_test(grade).read_text(encoding="utf-8")
        statement = f"from {helpers.stem} import"
        assert statement in importing, (slug, grade)
        text = assemble.hidden_tests(sec, grade)
        imports = [n.module for n in ast.parse(text).body if isinstance(n, ast.ImportFrom)]
        assert text_of_helpers in text and helpers.stem not in imports  # still one piece of Python
    sec = section("queries-keys-values")
    plain = sec.hidden_test("test_averaging_similarity").read_text(encoding="utf-8")
    assert "from _common import" not in plain and "from _shared import" not in plain
    assert "def _device_probe" not in assemble.hidden_tests(sec, "test_averaging_similarity")
    assert not sec.hidden_common.exists()  # its only helpers were the course's probes
