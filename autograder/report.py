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
  of every result with its reason. It is the Jinja2 template
  ``autograder/templates/report.html.j2``, autoescaped: whatever a student's
  name or a failure message holds shows as text.
* ``failures.csv``: one row per failed test of each notebook, with the first
  line of what failed (a check's message, or the error).
* ``similarity.csv``: the pairs of answers to one exercise that are alike beyond
  the code every student was given (:mod:`autograder.similarity`); ``report.html``
  shows each pair side by side, the lines they share marked, for a person to judge.
* ``reference.csv``: the answers that match ``qkv``'s reference for their exercise
  beyond the code every student was given (:mod:`autograder.reference`);
  ``report.html`` shows each beside the reference, for a person to judge.
* Feedback: nbgrader's own ``generate_feedback`` on the autograded notebooks,
  in ``COURSE/feedback/STUDENT/ASSIGNMENT/``.
"""

from __future__ import annotations

import csv
import functools
import logging
import os
from collections import Counter
from pathlib import Path

from autograder import similarity

FIELDS = ("student", "assignment", "notebook", "score", "max_score", "status", "reason")
LATE_FIELDS = ("late_penalty", "seconds_late", "ungraded")
TEMPLATES = Path(__file__).resolve().with_name("templates")
#: The pairs of similar answers that ``report.html`` shows side by side (the rest are listed, and in the CSV).
SHOWN_PAIRS = 50


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


def write_flags(results, path: Path) -> Path:
    """``flags.csv``: one row per answer line that the static scan (:mod:`autograder.scan`) flags for a person
    to look at (student, assignment, notebook, flag), whatever the notebook scored."""
    with open(path, "w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(["student", "assignment", "notebook", "flag"])
        for r in results:
            for flag in r.flags:
                writer.writerow([r.student, r.assignment, r.notebook, flag])
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


@functools.cache
def templates():
    """The Jinja2 environment of ``autograder/templates/``: autoescaped (a student's name, a failure message or
    a reason is text, never markup), and strict (a name the template uses but is not given is an error)."""
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.filters["number"] = _number
    env.filters["percent"] = lambda share: f"{100 * share:.0f}%"
    env.globals["plural"] = plural
    return env


def write_similarity(pairs, path: Path) -> Path:
    """``similarity.csv``: one row per pair of similar answers (:func:`autograder.similarity.write_csv`)."""
    return similarity.write_csv(pairs, path)


def write_report(results, out: Path, similar=(), threshold: float = similarity.THRESHOLD, like_reference=None) -> Path:
    """``report.png`` and ``report.html`` (the template ``templates/report.html.j2``) in ``out``; returns the
    HTML path. ``similar``: the pairs of similar answers (:func:`autograder.similarity.find`, at ``threshold``),
    each shown side by side. ``like_reference``: what :func:`autograder.reference.find` found (None: not looked
    for), each answer that matches its exercise's reference shown beside it."""
    out = Path(out)
    write_figure(results, out / "report.png")
    waiting = Counter(g for r in results for g in r.waiting)
    common = common_failures(results)
    groups = reference_groups(like_reference)
    page = (
        templates()
        .get_template("report.html.j2")
        .render(
            results=results,
            late=[r for r in results if r.seconds_late > 0],
            statuses=sorted(Counter(r.status for r in results).items()),
            rates=pass_rates(results),
            common=common,
            failed_in={g: sum(g in r.failures for r in results) for g in common},
            waiting={g: waiting[g] for g in exercise_columns(results) if waiting[g]},
            flagged=[r for r in results if r.flags],
            similar=list(similar),
            sides=[(pair, similarity.side_by_side(pair)) for pair in list(similar)[:SHOWN_PAIRS]],
            threshold=threshold,
            common_count=similarity.COMMON,
            like_reference=like_reference,
            reference_groups=groups,
            shown_reference=sum(rows is not None for *_, entries in groups for _, rows, _ in entries),
        )
    )
    path = out / "report.html"
    path.write_text(page, encoding="utf-8")
    return path


def reference_groups(found) -> list[tuple]:
    """The answers like the reference (``found``, :func:`autograder.reference.find`'s) by exercise, for the report:
    ``(assignment, grade_id, components, [(match, rows, anchor), ...])`` for every exercise compared, in its order;
    ``rows`` is the answer beside the reference (:meth:`autograder.reference.Match.rows`) for the first
    :data:`SHOWN_PAIRS` answers of the class, None after them."""
    if not found:
        return []
    shown = 0
    groups = []
    for assignment, grade_id, components in found.compared:
        entries = []
        for m in found.matches:
            if (m.assignment, m.grade_id) == (assignment, grade_id):
                shown += 1
                entries.append((m, m.rows() if shown <= SHOWN_PAIRS else None, f"reference-{shown}"))
        groups.append((assignment, grade_id, components, entries))
    return groups


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
    graded = course.folder("autograded")  # one folder per student
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
    return sorted(p for a in assignments for p in course.folder("feedback").glob(f"*/{a}/*.html"))
