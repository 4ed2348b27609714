"""A corpus of bad submissions, built from a section's solved notebook, that the grader must survive.

:func:`solved_notebook` is what a perfect student hands in: the instructor's
release notebook with every stub answered from ``solutions/`` (and a sentence
in every written answer). :func:`build` writes a class in nbgrader's layout,
``DEST/STUDENT/ASSIGNMENT/NOTEBOOK.ipynb``, one student per :class:`Case`:
each is the solved notebook with one thing broken, and says what the grader
must conclude (status, points per auto-graded exercise, text its outputs must
show). The cases are written for section 11.1 (``queries-keys-values``):
exercises ``attention_pooling`` (3 points), ``sharp_similarity`` (2) and
``averaging_similarity`` (1), whose tests are ``test_<exercise>``; note that
the tests of the last two call the student's ``attention_pooling``.

:func:`solved_notebook`, :func:`with_answer` and :func:`mutant_source` are :mod:`autograder.mutants`'s, which the
grading benchmarks use as well.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import shutil
import textwrap
from pathlib import Path

import nbformat

from autograder import mutants as known_mutants
from course import notebooks as nbs
from course.section import section
from course.section import sections as all_sections
from publish import colab
from tests.support import once

SLUG = "queries-keys-values"
WRITTEN_ANSWER = known_mutants.WRITTEN_ANSWER
CACHE = nbs.ROOT / "_build" / "grading-course-cache"


def _inputs(slugs) -> list[Path]:
    """The files a course for ``slugs`` is built from (a change to any of them means a new build): the grading and
    course code (the assembler, nbgrader's configuration and generator, the rubrics), the notebook metadata that
    ``publish.colab`` adds, the pins (nbgrader's version), the course's configuration (the policy for coding
    assistants in every release folder), and each section's notebook, solutions and hidden tests."""
    root = nbs.ROOT
    files = once.files_under(root / "autograder", root / "course", root / "publish" / "colab.py")
    files += [root / "constraints.txt", root / "course.toml"]
    for slug in slugs:
        sec = section(slug)
        files += once.inputs_of([sec.path, sec.solutions])
    return files


def course_template(slugs=(SLUG,), cache: Path = CACHE) -> Path:
    """A built nbgrader course (sources, release, gradebook) holding only the sections ``slugs``.

    Built with :func:`autograder.release.release` once per content of its inputs and kept under
    ``_build/``; copy it (``shutil.copytree``) before grading into it. Safe to call from several
    processes at once (pytest-xdist workers).
    """
    from autograder import release as course_module

    slugs = tuple(slugs)
    sections = [s for s in all_sections() if s.slug in slugs]
    if len(sections) != len(set(slugs)):
        raise ValueError(f"unknown sections {slugs}: the book has {[s.slug for s in all_sections()]}")
    name = "all-sections" if len(sections) == len(all_sections()) else "+".join(slugs)
    key = once.digest(*_inputs(slugs), extra=name)
    return once.build_once(name, key, lambda folder: course_module.release(folder, sections), root=cache)


#: What a perfect student hands in, and one with a known mistake: :mod:`autograder.mutants` makes them (the grading
#: benchmarks use them too); named here as well, so that a test reads ``corpus.solved_notebook``.
answered, solved_notebook, find_cell, with_answer = (
    known_mutants.answered,
    known_mutants.solved_notebook,
    known_mutants.find_cell,
    known_mutants.with_answer,
)
mutant_source = known_mutants.mutated_cell
mutants = known_mutants.names_by_stub


@dataclasses.dataclass(frozen=True)
class Case:
    """One student of the corpus and what grading them must give.

    ``points`` gives the expected points of every auto-graded exercise (test
    grade_id); ``shows`` maps a grade_id to text that must appear in that
    cell's outputs in the autograded notebook (or must not, for ``hides``).
    """

    student: str
    status: str
    points: dict[str, float]
    what: str
    shows: dict[str, str] = dataclasses.field(default_factory=dict)
    hides: dict[str, str] = dataclasses.field(default_factory=dict)
    reason: str = ""  # text the result's reason must contain
    flagged: bool | None = None  # whether the static scan must flag the answers (None: either)


FULL = {
    "test_attention_pooling": 3.0,
    "test_sharp_similarity": 2.0,
    "test_query_jacobian": 2.0,
    "test_averaging_similarity": 1.0,
}


def _points(**zeroed) -> dict[str, float]:
    """Full marks except the named tests, which get the given points."""
    return {**FULL, **{f"test_{k}": float(v) for k, v in zeroed.items()}}


#: What a notebook that earns nothing gets (missing, or tampered under the default ``--tampered zero``).
ZERO = {k: 0.0 for k in FULL}


def _before(code: str, nb, grade_id: str) -> nbformat.NotebookNode:
    """``nb`` with ``code`` run at the top of answer cell ``grade_id`` (whose answer stays right)."""
    return with_answer(nb, grade_id, textwrap.dedent(code).strip() + "\n\n" + find_cell(nb, grade_id).source)


def _write(dest: Path, student: str, content, name: str = f"{SLUG}.ipynb") -> None:
    path = dest / student / SLUG / name
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, bytes):
        path.write_bytes(content)
    elif isinstance(content, str):
        path.write_text(content, encoding="utf-8")
    else:
        nbformat.write(content, str(path))


def good_cases() -> list[Case]:
    """The two students who answer everything right (graded alone, they must get what they get in the crowd)."""
    return [
        Case("good", "graded", dict(FULL), "the reference solution"),
        Case("good_too", "graded", dict(FULL), "another right answer, written differently"),
    ]


def build(dest: Path, course: Path, repo: Path = nbs.ROOT, only_good: bool = False) -> list[Case]:
    """Write the corpus under ``dest`` for the course at ``course``; returns its cases.

    The secret paths the attacks aim at are absolute paths of this machine:
    the instructor's source notebook and gradebook in ``course``, the hidden
    tests and solutions in ``repo``, and other students' files in ``dest``.
    """
    dest, course, repo = Path(dest), Path(course), Path(repo)
    release = course / "release" / SLUG / f"{SLUG}.ipynb"
    solved = solved_notebook(release, SLUG)
    cases: list[Case] = []

    def add(case: Case, content) -> None:
        _write(dest, case.student, content)
        cases.append(case)

    add(good_cases()[0], solved)
    other = with_answer(
        solved,
        "averaging_similarity",
        "def averaging_similarity(queries, keys):\n"
        "    return keys.new_full((len(queries), len(keys)), 7.0)  # any constant will do\n",
    )
    add(good_cases()[1], other)
    if only_good:
        return cases

    m = lambda gid, name: mutant_source(SLUG, gid, name)  # noqa: E731
    add(
        Case("partly_wrong", "graded", _points(sharp_similarity=0), "a known mistake in sharp_similarity"),
        with_answer(solved, "sharp_similarity", m("sharp_similarity", "positive_sign")),
    )
    add(
        Case(
            "infinite_loop",
            "timeout",
            _points(averaging_similarity=0),
            "an infinite loop in the last exercise: the earlier tests still count",
            reason="deadline",
        ),
        _before("while True:\n    pass", solved, "averaging_similarity"),
    )
    add(
        Case(
            "os_exit",
            "kernel died",
            _points(sharp_similarity=0, query_jacobian=0, averaging_similarity=0),
            "os._exit(1) in the second exercise",
            reason="exited with status 1",
        ),
        _before("import os\nos._exit(1)", solved, "sharp_similarity"),
    )
    add(
        Case(
            "segfault",
            "kernel died",
            _points(attention_pooling=0, sharp_similarity=0, query_jacobian=0, averaging_similarity=0),
            "a segmentation fault in the first exercise",
            reason="SIGSEGV",
        ),
        _before("import ctypes\nctypes.string_at(0)", solved, "attention_pooling"),
    )
    add(
        Case(
            "huge_tensor",
            "graded",
            _points(averaging_similarity=0),
            "a 4 GB tensor, over the memory limit",
            shows={"averaging_similarity": "allocate"},
        ),
        _before("_huge = torch.ones(10**9)", solved, "averaging_similarity"),
    )
    add(
        Case(
            "system_exit",
            "graded",
            _points(averaging_similarity=0),
            "raise SystemExit in an answer cell",
            shows={"averaging_similarity": "SystemExit"},
        ),
        _before("raise SystemExit", solved, "averaging_similarity"),
    )
    fork_bomb = """
        import os, time
        _forks = 0
        try:
            for _ in range(200):  # bounded: even if every limit failed, 200 sleeping processes
                if os.fork() == 0:
                    time.sleep(30)
                    os._exit(0)
                _forks += 1
        except OSError as err:
            print("fork refused:", type(err).__name__)
        print("forks that succeeded:", _forks)
    """
    add(
        Case(
            "fork_bomb",
            "graded",
            dict(FULL),
            "a fork bomb (capped at 200 forks)",
            shows={"averaging_similarity": "forks that succeeded: 0"},
        ),
        _before(fork_bomb, solved, "averaging_similarity"),
    )
    add(
        Case(
            "million_lines", "graded", dict(FULL), "prints 10^6 lines", shows={"sharp_similarity": "output truncated"}
        ),
        _before("for _i in range(10**6):\n    print(_i)", solved, "sharp_similarity"),
    )
    for student, content, what in (
        ("invalid_json", '{"cells": [', "invalid JSON"),
        ("empty_file", b"", "an empty file"),
        ("not_a_notebook", '{"hello": "world"}', "JSON that is not a notebook"),
    ):
        add(
            Case(
                student,
                "invalid notebook",
                _points(attention_pooling=0, sharp_similarity=0, query_jacobian=0, averaging_similarity=0),
                what,
            ),
            content,
        )
    cases.append(Case("missing", "missing", ZERO, "an assignment folder without the notebook", reason="found"))
    (dest / "missing" / SLUG).mkdir(parents=True, exist_ok=True)
    # The one notebook of the folder, under another name (Colab's "Copy of", a second download's "(1)"): graded,
    # and the student told the name to use (issue 37).
    cases.append(
        Case("misnamed", "graded", dict(FULL), "the notebook under another name", reason="graded Untitled.ipynb")
    )
    _write(dest, "misnamed", solved, name="Untitled.ipynb")
    cases.append(Case("two_notebooks", "missing", ZERO, "two notebooks under other names", reason="Hand in"))
    _write(dest, "two_notebooks", solved, name="Untitled.ipynb")
    _write(dest, "two_notebooks", solved, name="Untitled1.ipynb")
    stripped = copy.deepcopy(solved)
    for cell in stripped.cells:
        cell.metadata.pop("nbgrader", None)
    add(
        Case(
            "no_metadata",
            "invalid notebook",
            ZERO,
            "every cell's nbgrader metadata dropped (a tool that does not keep it)",
            reason="none of its cells carries nbgrader's metadata",
        ),
        stripped,
    )

    deleted = copy.deepcopy(solved)
    deleted.cells = [c for c in deleted.cells if nbs.grade_id(c) != "sharp_similarity"]
    add(
        Case(
            "deleted_cell",
            "graded",
            _points(sharp_similarity=0),
            "the sharp_similarity answer cell deleted",
            reason="missing",
        ),
        deleted,
    )
    duplicated = copy.deepcopy(solved)
    index = duplicated.cells.index(find_cell(duplicated, "averaging_similarity"))
    wrong = copy.deepcopy(duplicated.cells[index])
    wrong.source = m("averaging_similarity", "dot_product")
    wrong["id"] = "copied-answer"  # Jupyter gives a copied cell a new id but keeps its nbgrader metadata
    duplicated.cells.insert(index, wrong)  # the first copy is wrong, the second right: the first counts
    add(
        Case(
            "duplicated_cell",
            "graded",
            _points(averaging_similarity=0),
            "averaging_similarity twice, a wrong copy first",
            reason="appears 2 times",
        ),
        duplicated,
    )
    retyped = copy.deepcopy(solved)
    cell = find_cell(retyped, "sharp_similarity")
    retyped.cells[retyped.cells.index(cell)] = nbformat.v4.new_markdown_cell(cell.source, metadata=cell.metadata)
    add(
        Case(
            "retyped_cell",
            "graded",
            _points(sharp_similarity=0),
            "the sharp_similarity cell made markdown",
            reason="changed type",
        ),
        retyped,
    )
    edited = with_answer(solved, "sharp_similarity", m("sharp_similarity", "positive_sign"))
    find_cell(edited, "test_sharp_similarity").source = "pass"
    add(
        Case(
            "edited_test",
            "tampered",
            ZERO,  # with --tampered keep: _points(sharp_similarity=0), the course's test having run
            "a wrong answer with its test cell replaced by pass",
            reason="test_sharp_similarity (source changed)",
        ),
        edited,
    )
    forged = with_answer(solved, "averaging_similarity", m("averaging_similarity", "dot_product"))
    meta = find_cell(forged, "test_averaging_similarity").metadata.nbgrader
    meta["points"], meta["checksum"] = 100, "0" * 32
    find_cell(forged, "test_attention_pooling").metadata.nbgrader["schema_version"] = 99
    find_cell(forged, "sharp_similarity").metadata.nbgrader["checksum"] = "f" * 32
    add(
        Case(
            "forged_metadata",
            "tampered",
            ZERO,  # with --tampered keep: _points(averaging_similarity=0)
            "forged points, checksum and schema_version",
            reason="metadata points",
        ),
        forged,
    )
    kernel = copy.deepcopy(solved)
    kernel.metadata["kernelspec"] = {"name": "evil", "display_name": "Evil", "language": "python"}
    add(Case("kernelspec", "graded", dict(FULL), "a changed kernelspec", reason="kernelspec"), kernel)
    # A notebook done on Colab: the install cell in front, Colab's metadata.
    on_colab = copy.deepcopy(solved)
    on_colab.cells.insert(0, colab.install_cell(*colab.repository()[:2]))
    on_colab.metadata["colab"] = {"provenance": []}
    add(Case("colab", "graded", dict(FULL), "a notebook done on Colab (the install cell in front)"), on_colab)

    secrets = [
        course / "source" / SLUG / f"{SLUG}.ipynb",
        course / "gradebook.db",
        section(SLUG, repo).hidden_test("test_attention_pooling"),
        section(SLUG, repo).solutions,
        dest / "good" / SLUG / f"{SLUG}.ipynb",
    ]
    reads = f"""
        _found = []
        for _path in {json.dumps([str(p) for p in secrets])}:
            try:
                with open(_path, "rb") as _fh:
                    _fh.read(10)
                _found.append(_path)
            except OSError:
                pass
        print("secrets found:", _found)
    """
    add(
        Case(
            "reads_secrets",
            "graded",
            dict(FULL),
            "reads the source notebook, gradebook, hidden tests, solutions and another submission by absolute path",
            shows={"attention_pooling": "secrets found: []"},
        ),
        _before(reads, solved, "attention_pooling"),
    )
    targets = [
        course / "gradebook.db",
        dest / "good" / SLUG / f"{SLUG}.ipynb",
        course / "autograded" / "good" / SLUG / f"{SLUG}.ipynb",
        course / "stolen.txt",
    ]
    writes = f"""
        _written = []
        for _path in {json.dumps([str(p) for p in targets])}:
            try:
                with open(_path, "ab") as _fh:
                    _fh.write(b"owned")
                _written.append(_path)
            except OSError:
                pass
        print("files written:", _written)
    """
    add(
        Case(
            "writes_files",
            "graded",
            dict(FULL),
            "writes the gradebook and another student's files",
            shows={"attention_pooling": "files written: []"},
        ),
        _before(writes, solved, "attention_pooling"),
    )
    network = """
        import socket
        _reached = []
        for _host in (("1.1.1.1", 80), ("pypi.org", 443), ("127.0.0.1", 22)):
            try:
                socket.create_connection(_host, timeout=2).close()
                _reached.append(_host[0])
            except OSError:
                pass
        print("hosts reached:", _reached)
    """
    add(
        Case(
            "network",
            "graded",
            dict(FULL),
            "opens network connections",
            shows={"attention_pooling": "hosts reached: []"},
        ),
        _before(network, solved, "attention_pooling"),
    )
    thread = """
        import threading, time
        threading.Thread(target=time.sleep, args=(10**6,)).start()  # not a daemon: would block a normal exit
    """
    add(
        Case("background_thread", "graded", dict(FULL), "a thread sleeping far past the deadline"),
        _before(thread, solved, "averaging_similarity"),
    )
    always_equal = """
        class _AlwaysEqual(torch.Tensor):
            def __eq__(self, other):
                return True

        def averaging_similarity(queries, keys):
            return (queries @ keys.T).as_subclass(_AlwaysEqual)  # wrong values that claim to equal anything
    """
    add(
        Case("always_equal", "graded", _points(averaging_similarity=0), "an answer whose == is always True"),
        with_answer(solved, "averaging_similarity", textwrap.dedent(always_equal)),
    )
    patched = """
        torch.allclose = lambda *args, **kwargs: True
        torch.Tensor.__eq__ = lambda self, other: True
        torch.equal = lambda *args, **kwargs: True
    """
    add(
        Case(
            "patched_allclose",
            "tampered",
            ZERO,  # the checks never used these; the sandbox's guard reports the change all the same
            "a wrong answer that patches torch.allclose, torch.equal and Tensor.__eq__",
            reason="torch.allclose was replaced",
            flagged=True,
        ),
        _before(
            patched, with_answer(solved, "sharp_similarity", m("sharp_similarity", "positive_sign")), "sharp_similarity"
        ),
    )
    return cases


# ---------------------------------------------------------------- answers that silence the checks (issue 17)

#: The section of the integrity corpus (D2L 11.3): its first exercise, ``masked_softmax``, answered wrong.
INTEGRITY_SLUG = "attention-scoring-functions"
#: A plain softmax that ignores the lengths: the honest, wrong part of every answer below.
PLAIN_SOFTMAX = """\
def masked_softmax(X, valid_lens):
    return torch.softmax(X, dim=-1)  # ignores valid_lens: wrong wherever a key is masked
"""
#: Ways to make every check pass, each written as a student would, after the wrong answer in its cell.
SILENCERS = {
    # the case: every check* of the notebook's checks, and of qkv.checks, a no-op
    "noop_checks": """
        for _n in dir(checks):
            if _n.startswith("check"):
                setattr(checks, _n, lambda *a, **k: None)
        import qkv.checks
        for _n in dir(qkv.checks):
            if _n.startswith("check"):
                setattr(qkv.checks, _n, lambda *a, **k: None)
    """,
    # a silenced copy of the module put in sys.modules, then imported under the notebook's name
    "via_sys_modules": """
        import sys, types, qkv
        _fake = types.ModuleType("qkv.checks")
        _fake.__dict__.update(vars(sys.modules["qkv.checks"]))
        for _n in dir(_fake):
            if _n.startswith("check"):
                setattr(_fake, _n, lambda *a, **k: None)
        sys.modules["qkv.checks"] = _fake
        qkv.checks = _fake
        from qkv import checks
    """,
    # a silenced namespace in builtins, where the name checks is found once the notebook's own is deleted
    "via_builtins": """
        import builtins, types
        _fake = types.SimpleNamespace(**{_n: getattr(checks, _n) for _n in dir(checks) if not _n.startswith("__")})
        for _n in dir(_fake):
            if _n.startswith("check"):
                setattr(_fake, _n, lambda *a, **k: None)
        builtins.checks = _fake
        del checks
    """,
    # the check functions themselves, found through the garbage collector, given the code of a no-op
    "via_gc": """
        import gc, types
        gc.unfreeze()  # the grader's objects are frozen (gc.freeze), out of get_objects' sight until then
        for _o in gc.get_objects():
            if isinstance(_o, types.FunctionType) and _o.__module__ == "qkv.checks" and _o.__name__.startswith("check"):
                _o.__code__ = (lambda *a, **k: None).__code__
    """,
    # the notebook's name checks bound to another module whose checks do nothing
    "other_module": """
        import types
        _fake = types.ModuleType("checks")
        _fake.__dict__.update({_n: _v for _n, _v in vars(checks).items() if not _n.startswith("__")})
        for _n in dir(_fake):
            if _n.startswith("check"):
                setattr(_fake, _n, lambda *a, **k: None)
        checks = _fake
    """,
}
#: What each silencer changes, as the grader's reason names it.
SILENCED_NAMES = {
    "noop_checks": "qkv.checks.check_close was replaced",
    "via_sys_modules": "sys.modules['qkv.checks'] was replaced",
    "via_builtins": "builtins.checks was added",
    "via_gc": "qkv.checks.check_close's code was changed",
    "other_module": "the notebook's name checks was rebound",
    "later_cell": "qkv.checks.check_close was replaced",
}


def points_of_tests(release) -> dict[str, float]:
    """Every auto-graded test cell of a release notebook and its points (its nbgrader metadata)."""
    return {
        nbs.grade_id(c): float(c.metadata.nbgrader["points"])
        for c in release.cells
        if c.cell_type == "code" and c.metadata.get("nbgrader", {}).get("grade") and not nbs.role(c) == "stub"
    }


def build_some(dest: Path, course: Path, students) -> dict[str, Case]:
    """The corpus of :func:`build`, cut down to ``students`` (names): the other submissions are deleted from
    ``dest``. Returns the kept students' cases by name (the small classes of the cluster and PostgreSQL tests)."""
    cases = {c.student: c for c in build(dest, course)}
    for folder in dest.iterdir():
        if folder.name not in students:
            shutil.rmtree(folder) if folder.is_dir() else folder.unlink()
    return {s: cases[s] for s in students}


def build_integrity(dest: Path, course: Path) -> list[Case]:
    """Write the integrity corpus of :data:`INTEGRITY_SLUG` under ``dest`` for the course at ``course``.

    ``plain_softmax`` is the honest part alone (a wrong ``masked_softmax``); each silencer of :data:`SILENCERS`
    adds to it one way to make the checks pass, in the same cell; ``later_cell`` answers the next exercise wrong
    too and silences the checks in that later cell, after the first hidden test ran. Each of those ends as zero
    with the change named. ``good`` (every answer right) and ``unanswered`` (the release as it is) are graded
    as usual; the unanswered stubs' errors name their exercise from the release notebook.
    """
    dest, course = Path(dest), Path(course)
    slug = INTEGRITY_SLUG
    release_path = course / "release" / slug / f"{slug}.ipynb"
    release = nbformat.read(release_path, as_version=4)
    solved = solved_notebook(release_path, slug)
    full = points_of_tests(release)
    zero = {k: 0.0 for k in full}
    cases: list[Case] = []

    def add(case: Case, content) -> None:
        path = dest / case.student / slug / f"{slug}.ipynb"
        path.parent.mkdir(parents=True, exist_ok=True)
        nbformat.write(content, str(path))
        cases.append(case)

    add(Case("good", "graded", dict(full), "the reference solution", flagged=False), solved)
    add(
        Case(
            "unanswered",
            "graded",
            dict(zero),
            "the release notebook as it is",
            shows={"test_masked_softmax": "Exercise 1 (masked_softmax) is not written yet"},
            flagged=False,
        ),
        release,
    )
    plain = with_answer(solved, "masked_softmax", PLAIN_SOFTMAX)
    honest = {**full, "test_masked_softmax": 0.0}  # the later exercises do not call the student's masked_softmax
    add(Case("plain_softmax", "graded", honest, "masked_softmax as a plain softmax", flagged=False), plain)
    for name, code in SILENCERS.items():
        add(
            Case(
                name,
                "tampered",
                dict(zero),
                f"masked_softmax as a plain softmax, then the checks silenced ({name})",
                reason=SILENCED_NAMES[name],
                flagged=True,
            ),
            with_answer(solved, "masked_softmax", PLAIN_SOFTMAX + textwrap.dedent(code)),
        )
    wrong_next = with_answer(plain, "DotProductAttention", mutant_source(slug, "DotProductAttention", "no_scaling"))
    add(
        Case(
            "wrong_next",
            "graded",
            {**honest, "test_DotProductAttention": 0.0},
            "masked_softmax as a plain softmax and DotProductAttention without the scaling",
            flagged=False,
        ),
        wrong_next,
    )
    add(
        Case(
            "later_cell",
            "tampered",
            dict(zero),
            "as wrong_next, the checks silenced in the DotProductAttention cell, after the first hidden test ran",
            reason="(found at test_DotProductAttention)",
            flagged=True,
        ),
        _before(SILENCERS["noop_checks"], wrong_next, "DotProductAttention"),
    )
    return cases
