"""How the comparison with ``qkv``'s reference tells copies from answers written apart (issue 43): the measurements
behind :data:`autograder.reference.THRESHOLD` and :data:`~autograder.reference.MIN_SHARED`.

For every exercise that has a reference in ``qkv`` (:func:`autograder.reference.reference_cell`, from the book's stubs
and ``solutions/``), it scores against that reference, as ``make grade`` does (:func:`autograder.reference.scores`):

* **copies**, made mechanically from the reference: ``renamed`` (every local variable renamed), ``reordered`` (every
  pair of adjacent assignments that do not depend on each other swapped, the lines of each moving together) and
  ``disguised`` (both, every comment removed and one of the copier's own added to each function);
* **written apart**: the ``written_apart`` variants of ``autograder/sections/*/variants.toml``, whole answers written
  from the docstring and D2L, not from the reference (``tests/notebooks/test_grading_answers.py`` proves that
  each keeps full points);
* **edits of the reference answer**: every other variant (the solved cell with one idea rewritten) and, where
  ``solutions/`` writes the answer out rather than importing ``qkv``'s, the solved cell itself;
* the **unanswered stub**.

It prints, and writes to ``benchmarks/results/reference_copies.md`` (``--out`` to change), each group's scores, the
rule's margins and a row per exercise. Exit status 1 if a copy of a reference long enough to be listed is not
listed, or an answer written apart is.

    .venv/bin/python benchmarks/reference_copies.py [--out PATH]
"""

from __future__ import annotations

import argparse
import ast
import io
import os
import statistics
import sys
import time
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from autograder import assemble, mutants, reference, similarity  # noqa: E402
from course import notebooks as nbs  # noqa: E402
from course.section import sections  # noqa: E402

OUT = ROOT / "benchmarks" / "results" / "reference_copies.md"
#: The name of the variants written apart from the reference (``autograder/sections/*/variants.toml``).
APART = "written_apart"


# ---------------------------------------------------------------- copies, made mechanically


def _functions(tree):
    return [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]


def renamed(source: str) -> str:
    """``source`` with every local variable of its functions (not a parameter, not ``self``) renamed ``v0``,
    ``v1``, ... everywhere it is read or written."""
    tree = ast.parse(source)
    local = set()
    for fn in _functions(tree):
        params = {a.arg for a in ast.walk(fn.args) if isinstance(a, ast.arg)}
        local |= {n.id for n in ast.walk(fn) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)} - params
    new = {name: f"v{i}" for i, name in enumerate(sorted(local - {"self", "_"}))}
    lines = source.splitlines(keepends=True)
    spots = [(n.lineno, n.col_offset, n.end_col_offset, n.id) for n in ast.walk(tree) if isinstance(n, ast.Name)]
    for lineno, start, end, name in sorted(spots, reverse=True):
        line = lines[lineno - 1]
        if name in new and line[start:end] == name:  # (a name inside an f-string may have no position of its own)
            lines[lineno - 1] = line[:start] + new[name] + line[end:]
    return "".join(lines)


def _effects(statement) -> tuple[set[str], set[str]]:
    """What a statement reads and writes: names and attribute chains (``self.W_q``), ``self`` itself aside."""
    reads, writes = set(), set()
    for node in ast.walk(statement):
        if isinstance(node, ast.Name | ast.Attribute) and not (isinstance(node, ast.Name) and node.id == "self"):
            (writes if isinstance(node.ctx, ast.Store | ast.Del) else reads).add(ast.unparse(node))
    return reads - writes, writes


def _independent(a, b) -> bool:
    """Whether two assignments can swap: neither reads or writes what the other writes, and neither calls super()."""
    if not all(isinstance(s, ast.Assign | ast.AnnAssign | ast.AugAssign) for s in (a, b)):
        return False
    if any("super(" in ast.unparse(s) for s in (a, b)):
        return False
    (ra, wa), (rb, wb) = _effects(a), _effects(b)

    def clash(x, y):
        return any(p == q or p.startswith(q + ".") or q.startswith(p + ".") for p in x for q in y)

    return not (clash(wa, rb) or clash(wb, ra) or clash(wa, wb))


def reordered(source: str) -> str:
    """``source`` with every pair of adjacent independent assignments of its functions swapped."""
    tree = ast.parse(source)
    lines = source.splitlines(keepends=True)
    swaps = []
    for fn in _functions(tree):
        i = 0
        while i + 1 < len(fn.body):
            a, b = fn.body[i], fn.body[i + 1]
            if _independent(a, b):
                swaps.append(((a.lineno, a.end_lineno), (b.lineno, b.end_lineno)))
                i += 2
            else:
                i += 1
    for (a0, a1), (b0, b1) in sorted(swaps, reverse=True):
        lines[a0 - 1 : b1] = lines[b0 - 1 : b1] + lines[a1 : b0 - 1] + lines[a0 - 1 : a1]
    return "".join(lines)


def recommented(source: str) -> str:
    """``source`` without its comments, and a comment of the copier's own after every ``def`` line."""
    cut = {}
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            cut[token.start[0]] = token.start[1]
    out = []
    for n, line in enumerate(source.splitlines(), 1):
        code = line[: cut[n]].rstrip() if n in cut else line
        if n in cut and not code.strip():
            continue
        out.append(code)
        if code.lstrip().startswith("def ") and code.rstrip().endswith(":"):
            indent = len(code) - len(code.lstrip()) + 4
            out.append(" " * indent + "# worked this out from the formula")
    return "\n".join(out) + "\n"


def copies(source: str) -> dict[str, str]:
    """The mechanical copies of a reference cell, by kind."""
    return {
        "renamed": renamed(source),
        "reordered": reordered(source),
        "disguised": recommented(reordered(renamed(source))),
    }


# ---------------------------------------------------------------- measuring


def measure():
    """Every candidate answer of every exercise with a reference, scored: ``(section, grade_id, Reference,
    reference's own characters, [(group, name, Match)])``."""
    out = []
    for sec in sections():
        stubs = mutants.stub_cells(sec)
        refs = reference.references(stubs, assemble.solutions_module(sec))
        if not refs:
            continue
        handout = reference.Handout.of(nbs.read(sec.path).cells)
        variants = mutants.load_variants(sec)
        for grade_id, ref in refs.items():
            solved = mutants.solved_cell(sec, grade_id)
            candidates = [("copy", kind, text) for kind, text in copies(ref.source).items()]
            for v in variants:
                if v.grade_id == grade_id:
                    candidates.append(("apart" if v.name == APART else "edit", v.name, v.apply(solved)))
            if solved != ref.source:
                candidates.append(("edit", "solution", solved))
            candidates.append(("stub", "stub", stubs[grade_id]))
            answers = [
                similarity.Answer(student=name, assignment=sec.slug, notebook=sec.slug, grade_id=grade_id, source=src)
                for _, name, src in candidates
            ]
            scored = reference.scores(answers, ref, handout)
            own = len(similarity.fingerprint(handout.own(ref.source)[1]).filtered_code)
            apart_own = {
                name: len(similarity.fingerprint(handout.own(src)[1]).filtered_code)
                for group, name, src in candidates
                if group == "apart"
            }
            out.append((sec, grade_id, ref, own, apart_own, [(c[0], c[1], m) for c, m in zip(candidates, scored)]))
    return out


def cost(n: int = 500) -> tuple[float, float]:
    """Seconds to build every section's references (importing the solutions modules, as :func:`reference.find`
    does once per assignment), and seconds per answer to score ``n`` distinct answers of 11.3's
    DotProductAttention (its reference pasted, with a line of each student's own, so that none is scored twice)."""
    started = time.perf_counter()
    for sec in sections():
        reference.references(mutants.stub_cells(sec), assemble.solutions_module(sec))
    build = time.perf_counter() - started
    slug, gid = "attention-scoring-functions", "DotProductAttention"
    ref = reference.references(mutants.stub_cells(slug), assemble.solutions_module(slug))[gid]
    handout = reference.Handout.of(nbs.read(assemble.as_section(slug).path).cells)
    answers = [
        similarity.Answer(
            student=f"s{i}", assignment=slug, notebook=slug, grade_id=gid, source=f'{ref.source}\n        _ = "s{i}"\n'
        )
        for i in range(n)
    ]
    started = time.perf_counter()
    reference.scores(answers, ref, handout)
    return build, (time.perf_counter() - started) / n


def listed(match) -> bool:
    return match.score >= reference.THRESHOLD and match.shared >= reference.MIN_SHARED


GROUPS = {
    "copy": "copies of the reference (renamed, reordered, disguised)",
    "apart": "answers written apart from it (`written_apart` variants)",
    "edit": "edits of the reference answer (the other variants; written-out solutions)",
    "stub": "the unanswered stub",
}


def table(rows) -> tuple[list[str], bool]:
    """The Markdown report of :func:`measure`'s rows, and whether the rule held (every listable copy listed, no
    answer written apart listed)."""
    T, M = reference.THRESHOLD, reference.MIN_SHARED
    by_group: dict[str, list] = {g: [] for g in GROUPS}
    for sec, gid, _, own, apart_own, found in rows:
        for group, name, m in found:
            by_group[group].append((sec, gid, own, name, m, apart_own.get(name)))
    lines = [
        "| answers | n | score: min | median | max | shared characters: max | listed |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for group, what in GROUPS.items():
        items = by_group[group]
        s = [m.score for *_, m, _ in items]
        shared = max((m.shared for *_, m, _ in items), default=0)
        count = sum(listed(m) for *_, m, _ in items)
        lines.append(
            f"| {what} | {len(s)} | {min(s):.2f} | {statistics.median(s):.2f} | {max(s):.2f} | {shared} | {count} |"
        )
    listable = [(sec, gid, own, n, m) for sec, gid, own, n, m, _ in by_group["copy"] if own >= M]
    short = sorted({(sec.slug, gid, own) for sec, gid, own, *_ in by_group["copy"] if own < M}, key=lambda x: x[2])
    copy_min = min(listable, key=lambda x: x[4].score)
    apart = by_group["apart"]
    long_apart = [x for x in apart if x[5] >= M]
    top_long = max(long_apart, key=lambda x: x[4].score)
    most_shared = max(apart, key=lambda x: x[4].shared)
    high = [x for x in apart if x[4].score >= T]
    top_high = max(high, key=lambda x: x[4].shared) if high else None
    missed = [x for x in listable if not listed(x[4])]
    false = [x for x in apart if listed(x[4])]
    ok = not missed and not false

    def who(x):
        return f"{x[0].slug} `{x[1]}`"

    lines += [
        "",
        f"The rule: listed when the score is at least **{T:.2f}** and the answer shares at least **{M}** characters "
        "of normalised code with the reference.",
        "",
        "| what the rule is measured against | value | margin |",
        "|---|---:|---:|",
        f"| lowest score of a copy of a reference of at least {M} characters ({who(copy_min)}, {copy_min[3]}) "
        f"| {copy_min[4].score:.2f} | {copy_min[4].score - T:.2f} above the threshold |",
        f"| highest score of an answer written apart with at least {M} characters of its own "
        f"({len(long_apart)} of {len(apart)}; {who(top_long)}) | {top_long[4].score:.2f} "
        f"| {T - top_long[4].score:.2f} below the threshold |",
        f"| most code an answer written apart shares with the reference ({who(most_shared)}, score "
        f"{most_shared[4].score:.2f}) | {most_shared[4].shared} | {M - most_shared[4].shared} below the minimum |",
    ]
    if top_high:
        lines.append(
            f"| most code shared by an answer written apart that reaches the threshold ({who(top_high)}, score "
            f"{top_high[4].score:.2f}) | {top_high[4].shared} | {M - top_high[4].shared} below the minimum |"
        )
    lines += [
        "",
        "Exercises whose reference has fewer than the minimum characters of its own, beyond what the handout spells "
        "out, are never listed (a copy of them is what any right answer may be): "
        + ", ".join(f"{slug} `{gid}` ({own})" for slug, gid, own in short)
        + ".",
        "",
        f"Every copy of a longer reference listed: {'yes' if not missed else 'NO: ' + str(missed)}. "
        f"No answer written apart listed: {'yes' if not false else 'NO: ' + str(false)}.",
        "",
        "Per exercise (score, and in brackets the characters shared; copies: the lowest of the three; edits: how "
        "many are listed):",
        "",
        "| section | exercise | reference (`qkv`) | own characters | copies | written apart | edits listed |",
        "|---|---|---|---:|---:|---:|---:|",
    ]
    for sec, gid, ref, own, _, found in rows:
        cps = [m for g, _, m in found if g == "copy"]
        low = min(cps, key=lambda m: m.score)
        aps = [m for g, _, m in found if g == "apart"]
        eds = [(n, m) for g, n, m in found if g == "edit"]
        edits = f"{sum(listed(m) for _, m in eds)} of {len(eds)}"
        if eds:
            edits += " (" + ", ".join(f"{n} {m.score:.2f}" for n, m in eds if listed(m)) + ")"
        names = ", ".join(c.removeprefix("qkv.") for c in ref.components)
        apart_text = ", ".join(f"{m.score:.2f} ({m.shared})" for m in aps) or "-"
        lines.append(
            f"| {sec.slug} | `{gid}` | {names} | {own} | {low.score:.2f} ({low.shared}) | {apart_text} "
            f"| {edits.replace(' ()', '')} |"
        )
    return lines, ok


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=OUT, help=f"where the table goes (default: {OUT})")
    args = parser.parse_args(argv)
    load = os.getloadavg()
    build, each = cost()  # first: the references' build includes importing the solutions modules and torch
    rows = measure()
    lines, ok = table(rows)
    lines += [
        "",
        f"Cost: building the references of every section (importing the solutions modules, and torch) {build:.1f} s; "
        "scoring "
        f"an answer {1000 * each:.1f} ms (500 distinct answers of 11.3's DotProductAttention); {os.cpu_count()} CPUs, "
        f"load average before: {load[0]:.2f}, {load[1]:.2f}, {load[2]:.2f}.",
    ]
    text = "\n".join(lines)
    print(text)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    head = (
        "# Copies of `qkv`'s reference against answers written apart (issue 43)\n\n"
        "    .venv/bin/python benchmarks/reference_copies.py\n\n"
        "Scores as `make grade`'s `reference.csv` gives them (`autograder/reference.py`): an answer's score is the "
        "larger of the share of its own code found in the reference and the share of the reference's own code found "
        "in it, on normalised code (names one letter, no comments or spaces, statements in a canonical order), "
        "beyond what every student was given.\n\n"
    )
    args.out.write_text(head + text + "\n", encoding="utf-8")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
