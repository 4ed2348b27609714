"""The layout rule: every path of a section comes from ``course.section.Section``, and no other code rebuilds one.

A contributor who adds a section adds files in the pattern ``course/section.py`` describes and one ``_toc.yml``
line; if some module built ``solutions/<module>.py`` or ``autograder/sections/<module>`` by hand, a change of the
pattern would have to be made in every such place, and the places would drift apart.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from course.section import ROOT, Section, grading_limits, section, sections

#: Code that spells out a section path rule, and what to use instead.
PATH_RULES = {
    r"""replace\(\s*["']-["']\s*,\s*["']_["']\s*\)""": "the slug's module name: use Section.module",
    r"""f["'][^"'\n]*\{[^}\n]*slug[^}\n]*\}\.md["']""": "a section's notebook: use Section.path",
    r"""["']autograder["']\s*/\s*["'](hidden|sections|mutants)["']\s*/""": "Section.grading_dir",
    r"""["']solutions["']\s*/\s*f["'][^"'\n]*\.py["']""": "the section's answers: use Section.solutions",
    r"""["'](figures|widgets)["']\s*/\s*f["']""": "the section's figures or widgets: use Section.figures_path",
}
#: Where a path rule may be written: the one place that defines them, and this test.
ALLOWED = {ROOT / "course" / "section.py", Path(__file__).resolve()}


def _python_files():
    for folder in ("autograder", "course", "publish", "tests", "benchmarks", "solutions", "lib"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            if path.resolve() not in ALLOWED and "_build" not in path.parts:
                yield path


def test_no_code_outside_section_rebuilds_a_path_rule():
    found = []
    for path in _python_files():
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            for pattern, instead in PATH_RULES.items():
                if re.search(pattern, line):
                    found.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}  ({instead})")
    assert not found, "section paths built by hand:\n" + "\n".join(found)


def test_the_rule_check_finds_a_hand_built_path(tmp_path):
    """The check above can fail: each pattern matches the hand-written form it forbids."""
    samples = [
        'name = slug.replace("-", "_")',
        'path = BOOK / f"{slug}.md"',
        'folder = ROOT / "autograder" / "sections" / module',
        'answers = ROOT / "solutions" / f"{module}.py"',
        'fig = lib / "figures" / f"{module}.py"',
    ]
    for sample, pattern in zip(samples, PATH_RULES, strict=True):
        assert re.search(pattern, sample), f"{pattern!r} should match {sample!r}"


def test_section_derives_every_path_from_its_slug():
    sec = Section("attention-scoring-functions")
    assert sec.module == "attention_scoring_functions" and sec.assignment == sec.slug
    assert sec.path == ROOT / "book" / "attention-scoring-functions.md"
    assert sec.solutions == ROOT / "solutions" / "attention_scoring_functions.py"
    assert sec.grading_dir == ROOT / "autograder" / "sections" / "attention_scoring_functions"
    assert sec.hidden_test("test_masked_softmax") == sec.grading_dir / "test_masked_softmax.py"
    assert sec.figures_module == "qkv.figures.attention_scoring_functions"
    assert sec.figures_path == ROOT / "lib" / "qkv" / "figures" / "attention_scoring_functions.py"
    assert sec.mutants.parent == sec.rubric.parent == sec.grading_dir


@pytest.mark.parametrize("sec", sections(), ids=lambda s: s.slug)
def test_every_path_of_a_real_section_exists(sec):
    assert sec.path.exists() and sec.solutions.exists(), f"{sec.slug}: missing {sec.path} or {sec.solutions}"
    assert sec.hidden_tests(), f"{sec.slug}: no hidden tests in {sec.grading_dir}"
    assert all(p.parent == sec.grading_dir for p in sec.hidden_tests().values())


def test_an_unknown_section_names_the_ones_there_are():
    with pytest.raises(KeyError, match="queries-keys-values"):
        section("no-such-section")


@pytest.mark.parametrize("sec", sections(), ids=lambda s: s.slug)
def test_grading_limits_of_every_section_are_valid(sec):
    limits = sec.limits
    assert set(limits) <= {"deadline_s", "memory_gib"}


@pytest.mark.parametrize(
    "block, message",
    [
        ({"deadline": 300}, "unknown key"),
        ({"deadline_s": -1}, "positive number"),
        ({"memory_gib": "4"}, "positive number"),
        ({"deadline_s": True}, "positive number"),
        ([300], "mapping"),
    ],
)
def test_bad_grading_limits_are_refused_with_the_reason(block, message):
    with pytest.raises(ValueError, match=message):
        grading_limits({"grading": block})


def test_good_grading_limits_are_read():
    assert grading_limits({"grading": {"deadline_s": 300, "memory_gib": 4.5}}) == {"deadline_s": 300, "memory_gib": 4.5}
    assert grading_limits({}) == {}


def _stub_answers():
    """(section, qualname, stub's def node, answer object) for every stub region answered by a function."""
    import ast

    from autograder import assemble
    from course import notebooks as nbs

    for sec in sections():
        answers = assemble.solutions_module(sec)
        for cell in sec.read().cells:
            if nbs.role(cell) != "stub":
                continue
            tree = ast.parse(cell.source)
            for match in nbs.stub_regions(cell.source):
                lineno = cell.source.count("\n", 0, match.start()) + 1
                qualname = assemble._enclosing_function(tree, lineno)
                if qualname is None:
                    continue
                node = next(
                    n
                    for n in ast.walk(tree)
                    if isinstance(n, ast.FunctionDef)
                    and n.lineno <= lineno <= n.end_lineno
                    and n.name == qualname.rpartition(".")[2]
                )
                yield sec, qualname, node, assemble._resolve(answers, qualname), answers


def _signature_of_def(node) -> list[tuple[str, str, str | None]]:
    import ast

    args = node.args
    positional = [*args.posonlyargs, *args.args]
    defaults = [None] * (len(positional) - len(args.defaults)) + [ast.unparse(d) for d in args.defaults]
    out = [("positional", a.arg, d) for a, d in zip(positional, defaults, strict=True)]
    out += [
        ("keyword", a.arg, None if d is None else ast.unparse(d))
        for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True)
    ]
    return out


def _signature_of_object(obj) -> list[tuple[str, str, str | None]]:
    import inspect

    out = []
    for p in inspect.signature(obj).parameters.values():
        kind = "keyword" if p.kind is p.KEYWORD_ONLY else "positional"
        out.append((kind, p.name, None if p.default is p.empty else repr(p.default)))
    return out


def test_stubs_answered_by_a_qkv_component_have_its_signature():
    """Where ``solutions/`` names a ``qkv`` component instead of writing the answer out, the stub the student fills
    must have exactly that component's signature (names, kinds, defaults), or the pasted body would not fit it."""
    named = 0
    for sec, qualname, node, obj, answers in _stub_answers():
        if getattr(obj, "__module__", None) == answers.__name__:
            continue
        named += 1
        stub, ref = _signature_of_def(node), _signature_of_object(obj)
        if "." in qualname:  # a method: inspect on the class's function still lists self
            assert stub[:1] == ref[:1] == [("positional", "self", None)]
        assert stub == ref, f"{sec.slug}: the stub {qualname} has {stub}, but {obj.__module__}.{qualname} has {ref}"
    assert named, "no stub is answered by a qkv component: this check would not be checking anything"


#: nbgrader's folder names joined into a path by hand (``course / "autograded" / ...``).
COURSE_STEP = re.compile(r"""/\s*["'](source|release|submitted|autograded|feedback)["']\s*(/|$|\))""")


def test_only_nbcourse_builds_nbgrader_folder_paths():
    """The course folder's layout comes from nbgrader's own ``CourseDirectory.format_path``, in one place
    (``autograder.nbcourse.course_path``); the grader's code never joins the folder names by hand. (Tests and
    benchmarks may: they check the layout from the outside.)"""
    owner = ROOT / "autograder" / "nbcourse.py"
    found = [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
        for folder in ("autograder", "course", "publish", "lib")
        for path in sorted((ROOT / folder).rglob("*.py"))
        if path != owner
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
        if COURSE_STEP.search(line)
    ]
    assert not found, "nbgrader paths built by hand (use Course.path or nbcourse.course_path):\n" + "\n".join(found)
    assert COURSE_STEP.search('graded = course.root / "autograded" / sub.student')
    assert not COURSE_STEP.search('graded = course.path("autograded", a, n)')
