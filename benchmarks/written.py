"""What ``make export``'s written answers cost (issue 43): the files of one section for a class of ``--n`` students.

The class is made, not graded: the section's written questions and rubrics as ``make export`` reads them (from the
book's notebook, which the release equals, and ``rubric.toml``), and for every student and question an answer of
60 to 200 words of prose with inline TeX, a displayed equation for one student in three and a short list for one
in four (the length of "a few sentences each", which the questions ask for). It times, in this process, what
:func:`autograder.written.write` spends on each kind of file, and prints the table, also written to
``benchmarks/results/written.md`` (``--out`` to change).

    .venv/bin/python benchmarks/written.py [--n 200] [--section attention-pooling] [--out PATH]

Target: under a second per student for a section's files of every kind (exit status 1 otherwise).
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from autograder import rubrics  # noqa: E402
from autograder.written import answers, pages, pdf  # noqa: E402
from course.section import section  # noqa: E402

WORDS = (
    "attention query key value softmax weight score scaled dot product index tree hash table cost memory linear "
    "quadratic gradient overflow float precision sequence length head projection training loss data model"
).split()
TARGET_S_PER_STUDENT = 1.0


def an_answer(rng: random.Random) -> str:
    words = [rng.choice(WORDS) for _ in range(rng.randint(60, 200))]
    for at in rng.sample(range(len(words)), 3):
        words[at] = rng.choice(["$O(m d)$", "$\\beta \\to \\infty$", "$\\mathrm{softmax}(q^\\top k / \\sqrt{d})$"])
    text = " ".join(words).capitalize() + "."
    if rng.random() < 1 / 3:
        text += "\n\n$$\\alpha(q, k_i) = \\frac{\\exp(q^\\top k_i)}{\\sum_j \\exp(q^\\top k_j)}$$\n\nSo it follows."
    if rng.random() < 1 / 4:
        text += "\n\n- first, the scores\n- then, the weights"
    return text


def a_class(slug: str, n: int) -> answers.Written:
    sec = section(slug)
    questions = answers.questions_of(sec.read(), slug, rubrics.load(sec))
    rng = random.Random(0)
    students = [answers.Student(f"s{i:04d}", f"Student {i}", f"s{i:04d}") for i in range(n)]
    found = {(s.id, q.grade_id): answers.Answer(an_answer(rng)) for s in students for q in questions}
    return answers.Written(slug, answers.title_of(sec.read()), questions, students, found)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=200, help="students in the class")
    parser.add_argument("--section", default="attention-pooling", help="a section with written questions")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "written.md")
    args = parser.parse_args(argv)
    written = a_class(args.section, args.n)
    if not written.questions:
        parser.error(f"{args.section} has no written question")
    times = {}
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        pages.write_pages(written, Path(tmp))
        times["pages by question (HTML)"] = time.perf_counter() - start
        start = time.perf_counter()
        for q in written.questions:
            pdf.question_pdf(written, q)
        times["PDFs by question"] = time.perf_counter() - start
        start = time.perf_counter()
        made = pdf.student_pdfs(written)
        times["PDFs per student (Gradescope)"] = time.perf_counter() - start
    total = sum(times.values())
    q, n = len(written.questions), args.n
    rows = [f"| {what} | {s:.1f} | {1000 * s / n:.0f} | {1000 * s / (n * q):.1f} |" for what, s in times.items()]
    longer = sum(bool(p.continued) for _, p in made.values())
    table = "\n".join(
        [
            f"Written answers of `{args.section}` ({q} questions) for {n} students, drawn in one process "
            f"(`benchmarks/written.py --n {n} --section {args.section}`; load average {os.getloadavg()[0]:.1f} "
            f"on {os.cpu_count()} cores at the end).",
            "",
            "| files | seconds | ms per student | ms per answer |",
            "|---|---|---|---|",
            *rows,
            f"| all | {total:.1f} | {1000 * total / n:.0f} | {1000 * total / (n * q):.1f} |",
            "",
            f"Students whose PDF has continuation pages: {longer}.",
        ]
    )
    print(table)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(table + "\n")
    return 0 if total / n < TARGET_S_PER_STUDENT else 1


if __name__ == "__main__":
    sys.exit(main())
