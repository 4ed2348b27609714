"""What an instructor reads after grading: ``grades.csv``, ``report.html`` + ``report.png``, nbgrader feedback.

* ``grades.csv``: one row per (student, assignment, notebook) with ``score``
  (after any late penalty), ``max_score``, ``status``, ``reason``,
  ``late_penalty``, ``seconds_late``, ``ungraded`` (how many exercises wait for
  a person in the formgrader) and one column per exercise (grade_id; empty where
  the exercise waits for a person or is not in that assignment). A score a
  grader gave in the formgrader is the exercise's score.
* ``report.png``: per exercise, the share of the class with full marks (bars),
  and the histogram of grades (as a percentage of the maximum of what is scored).
* ``report.html``: the same figure, a count of results per status, the most
  frequent failures of each test, what still waits for a person, and the table
  of every result with its reason.
* ``failures.csv``: one row per failed test of each notebook, with the first
  line of what failed (a check's message, or the error).
* Feedback: nbgrader's own ``generate_feedback`` on the autograded notebooks,
  in ``COURSE/feedback/STUDENT/ASSIGNMENT/``.
"""

from __future__ import annotations

import csv
import html
import logging
import os
from collections import Counter
from pathlib import Path

FIELDS = ("student", "assignment", "notebook", "score", "max_score", "status", "reason")
LATE_FIELDS = ("late_penalty", "seconds_late", "ungraded")


def exercise_columns(results) -> list[str]:
    """Every grade_id of the results, in the order they first appear (notebook order)."""
    seen: dict[str, None] = {}
    for result in results:
        for gid in result.max_points:
            seen.setdefault(gid, None)
    return list(seen)


def _number(value) -> str:
    if value is None:
        return ""
    return f"{value:g}"


def plural(n: int, one: str, many: str) -> str:
    """``n`` and the word for it: ``plural(1, "notebook", "notebooks")`` is "1 notebook"."""
    return f"{n} {one if n == 1 else many}"


def write_csv(results, path: Path) -> Path:
    """``grades.csv``: one row per result, one column per exercise (see the module docstring)."""
    columns = exercise_columns(results)
    with open(path, "w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow([*FIELDS, *LATE_FIELDS, *columns])
        for r in results:
            row = [r.student, r.assignment, r.notebook, _number(r.score), _number(r.max_score), r.status, r.reason]
            row += [_number(r.late_penalty), f"{r.seconds_late:.0f}", str(len(r.waiting))]
            row += [_number(r.exercises.get(gid)) if gid in r.max_points else "" for gid in columns]
            writer.writerow(row)
    return path


def write_failures(results, path: Path) -> Path:
    """``failures.csv``: one row per failed test of each notebook (student, assignment, notebook, exercise,
    what failed), for sorting and filtering."""
    with open(path, "w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow([*FIELDS[:3], "exercise", "failure"])
        for r in results:
            for gid, what in r.failures.items():
                writer.writerow([r.student, r.assignment, r.notebook, gid, what])
    return path


def common_failures(results, top: int = 3) -> dict[str, list[tuple[str, int]]]:
    """Per test (in notebook order): its ``top`` most frequent failures with how many notebooks had each."""
    counts: dict[str, Counter] = {}
    for r in results:
        for gid, what in r.failures.items():
            counts.setdefault(gid, Counter())[what] += 1
    return {g: counts[g].most_common(top) for g in exercise_columns(results) if g in counts}


def scored(results) -> list[str]:
    """The exercises with a score for someone: every autograded one, and the written answers once a person
    has graded some (the others wait for the formgrader)."""
    return [g for g in exercise_columns(results) if any(r.exercises.get(g) is not None for r in results)]


def pass_rates(results) -> dict[str, float]:
    """Per scored exercise: the share of the notebooks with a score for it that earned its full points
    (a missing or invalid notebook has zero for every autograded exercise, so it counts as not passing)."""
    rates = {}
    for gid in scored(results):
        known = [r for r in results if gid in r.max_points and r.exercises.get(gid) is not None]
        rates[gid] = sum(r.exercises[gid] >= r.max_points[gid] for r in known) / len(known)
    return rates


def percentages(results) -> list[float]:
    """Each notebook's score as a percentage of the maximum of the exercises scored so far for it
    (written answers count once a person has graded them); late penalties come off."""
    out = []
    for r in results:
        known = [g for g, p in r.exercises.items() if p is not None and g in r.max_points]
        top = sum(r.max_points[g] for g in known)
        if top:
            got = sum(r.exercises[g] for g in known) - r.late_penalty
            out.append(100.0 * max(got, 0.0) / top)
    return out


def write_figure(results, path: Path) -> Path:
    """``report.png``: pass rate per scored exercise, and the histogram of scores (of what is scored so far)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    rates = pass_rates(results)
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4), constrained_layout=True)
    names = list(rates)
    left.barh(range(len(names)), [100 * rates[n] for n in names], color="tab:blue")
    left.set_yticks(range(len(names)), names)
    left.invert_yaxis()
    left.set_xlim(0, 100)
    left.set_xlabel("submissions with full marks (%)")
    left.set_title("Pass rate per exercise")
    right.hist(percentages(results), bins=[i * 10 for i in range(11)], color="tab:orange", edgecolor="black")
    right.set_xlabel("score (% of the points scored so far)")
    right.set_ylabel("submissions")
    right.yaxis.set_major_locator(MaxNLocator(integer=True))  # whole submissions
    right.set_title(f"Grades of {len(results)} submissions")
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def write_report(results, out: Path) -> Path:
    """``report.png`` and ``report.html`` in ``out``; returns the HTML path."""
    out = Path(out)
    write_figure(results, out / "report.png")
    statuses = Counter(r.status for r in results)
    rates = pass_rates(results)
    esc = html.escape
    rows = "\n".join(
        f"<tr><td>{esc(r.student)}</td><td>{esc(r.assignment)}</td><td>{r.score:g} / {r.max_score:g}</td>"
        f"<td>{esc(r.status)}</td><td>{esc(r.reason)}</td></tr>"
        for r in results
    )
    status_rows = "\n".join(f"<tr><td>{esc(s)}</td><td>{n}</td></tr>" for s, n in sorted(statuses.items()))
    rate_rows = "\n".join(f"<tr><td>{esc(g)}</td><td>{100 * p:.0f}%</td></tr>" for g, p in rates.items())
    waiting = Counter(g for r in results for g in r.waiting)
    if waiting:
        wait_rows = "\n".join(
            f"<tr><td>{esc(g)}</td><td>{waiting[g]}</td></tr>" for g in exercise_columns(results) if waiting[g]
        )
        count = plural(sum(waiting.values()), "written answer has", "written answers have")
        waits = f"""<h2>Waiting for a person</h2>
<p>{count} no score yet. Grade them in nbgrader's formgrader (start
<code>jupyter lab</code> in the course folder, then Nbgrader &rarr; Formgrader), then run the grading again:
the scores a grader gives are kept and count.</p>
<table><tr><th>exercise</th><th>notebooks</th></tr>
{wait_rows}
</table>"""
    else:
        waits = "<p>Every exercise of every notebook has a score.</p>"
    common = common_failures(results)
    fail_rows = "\n".join(
        f"<tr><td>{esc(g)}</td><td>{sum(g in r.failures for r in results)}</td><td>"
        + "<br>".join(f"{esc(what)} <b>({n})</b>" for what, n in tops)
        + "</td></tr>"
        for g, tops in common.items()
    )
    mistakes = (
        f"""<h2>What went wrong, by exercise</h2>
<p>The most frequent failures of each test among the notebooks that ran (every one is in <code>failures.csv</code>).</p>
<table><tr><th>exercise</th><th>failed in</th><th>most frequent failures (notebooks)</th></tr>
{fail_rows}
</table>"""
        if common
        else ""
    )
    late = [r for r in results if r.seconds_late > 0]
    late_note = (
        f"<p>{plural(len(late), 'notebook was', 'notebooks were')} handed in after the due date "
        f"({sum(r.late_penalty for r in late):g} points taken off in all).</p>"
        if late
        else ""
    )
    page = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>Grading report</title>
<style>body{{font-family:sans-serif;margin:2em}} table{{border-collapse:collapse;margin-bottom:2em}}
td,th{{border:1px solid #ccc;padding:4px 8px;text-align:left;vertical-align:top}}</style></head>
<body>
<h1>Grading report</h1>
<p>{len(results)} notebooks graded.</p>
{late_note}
<img src="report.png" alt="Pass rate per exercise and histogram of grades" style="max-width:100%">
<h2>Results by status</h2>
<table><tr><th>status</th><th>notebooks</th></tr>
{status_rows}
</table>
<h2>Pass rate per exercise</h2>
<table><tr><th>exercise</th><th>full marks</th></tr>
{rate_rows}
</table>
{mistakes}
{waits}
<h2>Every result</h2>
<table><tr><th>student</th><th>assignment</th><th>score</th><th>status</th><th>reason</th></tr>
{rows}
</table>
</body></html>
"""
    path = out / "report.html"
    path.write_text(page, encoding="utf-8")
    return path


def _feedback(course, assignment: str, exclude: list[str]) -> str | None:
    """nbgrader's ``GenerateFeedback`` for one assignment, every student but ``exclude``; returns a problem."""
    from nbgrader.converters import GenerateFeedback
    from nbgrader.coursedir import CourseDirectory

    coursedir = CourseDirectory(config=course.config)
    coursedir.root = str(course.root)
    coursedir.assignment_id = assignment
    coursedir.student_id_exclude = ",".join(exclude)
    converter = GenerateFeedback(coursedir=coursedir, config=course.config)
    converter.force = True
    converter.log.setLevel(logging.ERROR)
    try:
        converter.start()
    except Exception as err:  # noqa: BLE001 (feedback is a courtesy: report, do not lose the grades)
        return f"feedback for {assignment} failed: {err}"
    return None


def generate_feedback(course, assignments, jobs: int = 1) -> list[Path]:
    """nbgrader's ``generate_feedback`` for every autograded student of each assignment, the students shared
    among ``jobs`` forked copies of this process (which has nbgrader and nbconvert imported already);
    returns the feedback files."""
    graded = course.root / "autograded"
    students = sorted(p.name for p in graded.iterdir() if p.is_dir()) if graded.is_dir() else []
    jobs = max(1, min(jobs, len(students) // 10))  # a fork is worth it for ten notebooks or more
    problems: list[str | None] = []
    if jobs == 1 or any("," in s for s in students):  # nbgrader's exclusion list is comma-separated
        problems = [_feedback(course, a, []) for a in assignments]
    else:
        pids = []
        for share in (students[i::jobs] for i in range(jobs)):
            pid = os.fork()
            if pid == 0:  # the child: only nbgrader's converter runs here, then it leaves at once
                code = 1
                try:
                    exclude = [s for s in students if s not in share]
                    found = [_feedback(course, a, exclude) for a in assignments]
                    for problem in filter(None, found):
                        logging.getLogger("autograder.grade").warning(problem)
                    code = int(any(found))
                finally:
                    os._exit(code)
            pids.append(pid)
        for pid in pids:
            if os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]):
                problems.append("nbgrader's feedback failed for some students (see above)")
    for problem in filter(None, problems):
        logging.getLogger("autograder.grade").warning(problem)
    return sorted(p for a in assignments for p in (course.root / "feedback").glob(f"*/{a}/*.html"))
