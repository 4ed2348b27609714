"""autograder/operators.py: each operator rewrites exactly the places it names, one mutant per place, and every
section's generated mutants compile and differ from the solved cell."""

from __future__ import annotations

import ast
import textwrap

import pytest

from autograder import operators
from course.section import sections

CELL = textwrap.dedent(
    """
    class Norm(nn.Module):
        def __init__(self, n, eps=1e-6):
            super().__init__()
            self.eps = eps
            self.weight = nn.Parameter(torch.ones(n))

        def forward(self, X, cache=None):
            Z = torch.zeros(2, dtype=X.dtype, device=X.device)
            X = X + 1
            with torch.no_grad():
                Z = torch.cat((X, Z), dim=0)
            return torch.softmax(Z, dim=-1)
    """
)


def _one(name):
    return list(getattr(operators, name)(CELL))


def test_each_operator_changes_its_places_and_only_them():
    ((where, text),) = _one("ignore_argument")  # eps has a default and is used; cache is unused
    assert where == "__init__(eps)" and "self.eps = 1e-06" in text
    ((_, text),) = _one("float32_dtype")
    assert "dtype=torch.float32" in text
    ((_, text),) = _one("cpu_device")
    assert "device='cpu'" in text
    detached = [text for _, text in _one("detach_input")]
    inputs = {text.split("torch.cat(")[1][:15] for text in detached}  # what each mutant concatenates
    assert len(detached) == 2 and inputs == {"(X.detach(), Z)", "(X, Z.detach())"}
    ((_, text),) = _one("in_place")
    assert "X += 1" in text
    ((_, text),) = _one("swap_init")
    assert "nn.Parameter(torch.randn(n))" in text
    ((_, text),) = _one("unguarded")
    assert "torch.exp(Z) / torch.exp(Z).sum(dim=-1, keepdim=True)" in text
    ((_, text),) = _one("no_grad_dropped")
    assert "no_grad" not in text and "Z = torch.cat((X, Z), dim=0)" in text


@pytest.mark.parametrize("section", sections(), ids=lambda s: s.slug)
def test_every_generated_mutant_compiles_and_changes_the_solved_cell(section):
    from autograder import mutants

    for mutant in operators.generate(section):
        assert mutant.klass in mutants.CLASSES
        compile(mutant.source, mutant.name, "exec")
        solved = ast.unparse(ast.parse(mutants.solved_cell(section, mutant.grade_id)))
        assert mutant.source != solved, mutant.name
