"""autograder/operators.py: each operator rewrites exactly the places it names, one mutant per place, with a name
that outlives edits elsewhere; every section's generated mutants compile and differ from the solved cell; every
``equivalents.toml`` entry names a mutant the operators generate, with its reason; and no hand-written mutant is one
that an operator already generates (the hand-written list keeps only what no operator reaches)."""

from __future__ import annotations

import ast
import textwrap

import pytest

from autograder import mutants, operators
from course.section import sections

CELL = textwrap.dedent(
    """
    class Norm(nn.Module):
        def __init__(self, n, eps=1e-6):
            super().__init__()
            self.eps = eps
            self.weight = nn.Parameter(torch.ones(n))

        def forward(self, X, mask, cache=None, temperature=1.0):
            Z = torch.zeros(2, dtype=X.dtype, device=X.device)
            X = X + 1
            keep = torch.rand(X.shape) < 0.15
            idx = torch.randint(0, 10, (3,))
            with torch.no_grad():
                Z = torch.cat((X, Z, keep), dim=0)
            self.attention(X, mask)
            self.drop.eval()
            W = mask.masked_fill(keep, 0).clone()
            return torch.softmax(Z / temperature, dim=-1), torch.logsumexp(W, dim=-1)
    """
)


def _one(name, *extra):
    return list(getattr(operators, name)(CELL, *extra))


def test_each_operator_changes_its_places_and_only_them():
    ignored = _one("ignore_argument")  # eps, cache and temperature have defaults; cache is unused
    assert [w for w, _ in ignored] == ["__init__(eps)", "forward(temperature)"] and "self.eps = 1e-06" in ignored[0][1]
    with_visible = _one("ignore_argument", "Norm(4, eps=0.5)\nNorm(4, eps=0.5)")  # the visible test's value too
    assert with_visible[1][0] == "__init__(eps=0.5 (the visible test's))" and "self.eps = 0.5" in with_visible[1][1]
    ((_, text),) = _one("float32_dtype")
    assert "dtype=torch.float32" in text
    ((where, text),) = _one("other_dtype")  # X and mask are read as tensors; X.dtype read from mask
    assert "dtype=mask.dtype" in text and where.endswith("as mask.dtype")
    ((where, text),) = _one("cpu_device")
    assert "device='cpu'" in text and where == "Norm.forward: device=X.device"
    detached = {where.split(": ", 1)[1] for where, _ in _one("detach_input")}
    returned = "torch.logsumexp(W, dim=-1) returned"  # a forward's second result: a state
    assert detached == {"X into torch.cat", "Z into torch.cat", "X into self.attention", returned}  # not the masks
    in_place = [text for _, text in _one("in_place")]
    assert any("X += 1" in t for t in in_place) and any("mask.masked_fill_(keep, 0)" in t for t in in_place)
    assert any(".clone()" not in t for t in in_place) and len(in_place) == 3
    swapped = [text for _, text in _one("swap_init")]
    assert {"nn.Parameter(torch.randn(n))", "nn.Parameter(0.02 * torch.randn(n))"} == {
        t.split("self.weight = ")[1].splitlines()[0] for t in swapped
    }
    ranges = [where for where, _ in _one("random_range")]
    assert len(ranges) == 4 and "Norm.forward: (10) + 1" in ranges
    ((_, text),) = _one("fixed_count")
    assert "argsort(dim=-1).argsort(dim=-1) < round(0.15 *" in text
    unguarded = [text for _, text in _one("unguarded")]
    assert any("torch.softmax(Z, dim=-1) ** (1 / temperature)" in t for t in unguarded)
    assert any(
        "torch.exp(Z / temperature) / torch.exp(Z / temperature).sum(dim=-1, keepdim=True)" in t for t in unguarded
    )
    assert any("torch.log(torch.exp(W).sum(dim=-1))" in t for t in unguarded) and len(unguarded) == 3
    ((_, text),) = _one("train_mode")
    assert ".eval()" not in text
    ((_, text),) = _one("no_grad_dropped")
    assert "no_grad" not in text and "Z = torch.cat((X, Z, keep), dim=0)" in text


def test_a_name_names_the_code_not_its_line():
    """An equivalents entry outlives a line added above the place it names."""
    moved = CELL.replace("    def forward(", "    # a comment\n\n    def forward(")
    assert [w for w, _ in operators.cpu_device(CELL)] == [w for w, _ in operators.cpu_device(moved)]


def test_no_gradient_reaches_an_integer_or_boolean_tensor():
    tree = ast.parse("a = torch.arange(3) < n\nb = a[:, None].expand(2, 3)\nc = torch.diff(b) + 1\nd = x * 2")
    assert operators._integral_names(tree) == {"a", "b", "c"}


@pytest.mark.parametrize("section", sections(), ids=lambda s: s.slug)
def test_every_generated_mutant_compiles_and_changes_the_solved_cell(section):
    names = set()
    for mutant in operators.generate(section):
        assert mutant.klass in mutants.CLASSES
        compile(mutant.source, mutant.name, "exec")
        solved = ast.unparse(ast.parse(mutants.solved_cell(section, mutant.grade_id)))
        assert mutant.source != solved, mutant.name
        assert (mutant.grade_id, mutant.name) not in names, f"two mutants named {mutant.name}"
        names.add((mutant.grade_id, mutant.name))


@pytest.mark.parametrize("section", sections(), ids=lambda s: s.slug)
def test_every_equivalent_names_a_generated_mutant_and_says_why(section):
    made = {(m.grade_id, m.name) for m in operators.generate(section)}
    for entry in operators.equivalents(section):
        assert (entry.stub, entry.mutant) in made, (
            f"{operators.equivalents_path(section)} lists {entry.mutant} [[{entry.stub}]], which the operators no "
            "longer generate: remove the entry"
        )
        assert len(entry.reason.split()) >= 6, f"{entry.mutant}: say why, in a sentence ({entry.reason!r})"


@pytest.mark.parametrize("section", sections(), ids=lambda s: s.slug)
def test_no_hand_written_mutant_is_one_an_operator_generates(section):
    made = {m.source: m.name for m in operators.generate(section)}
    twice = []
    for mutant in mutants.load(section):
        if mutant.message:  # it also proves what the visible test says to that mistake, which no operator asks
            continue
        cell = ast.unparse(ast.parse(mutant.apply(mutants.solved_cell(section, mutant.grade_id))))
        if cell in made:
            twice.append(f"[[{mutant.grade_id}]] {mutant.name} is {made[cell]}")
    assert not twice, f"{section.mutants}: remove what the operators already generate: {twice}"


def test_a_bad_equivalents_file_is_refused_with_what_to_write(tmp_path):
    path = tmp_path / "equivalents.toml"
    path.write_text('[[equivalent]]\nstub = "f"\nmutant = "cpu_device@f: device=x.device"\n')
    with pytest.raises(operators.EquivalentError, match="missing \\['reason'\\].*exactly these keys"):
        operators._equivalents(path, 0.0)
    path.write_text('[[equivalent]]\nstub = "f"\nmutant = "m"\nreason = "r"\n' * 2)
    with pytest.raises(operators.EquivalentError, match="listed twice"):
        operators._equivalents(path, 1.0)


def test_cast_dropped_removes_each_cast_once():
    cell = "def f(x):\n    wide = x.float()\n    return (wide * 2).to(x.dtype)\n"
    made = dict(operators.cast_dropped(cell))
    assert set(made) == {"f: x.float()", "f: (wide * 2).to(x.dtype)"}
    assert "wide = x\n" in made["f: x.float()"] and "return wide * 2" in made["f: (wide * 2).to(x.dtype)"]
