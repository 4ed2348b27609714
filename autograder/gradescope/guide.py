"""The README.md inside a section's autograder zip: what to set on Gradescope for it, and how its scripts work.

An instructor who holds only the zip (or a colleague who inherits it) reads there the memory and timeout the
section needs, what students see and when, the feedback rationing this zip was built with, and how to run
``setup.sh`` elsewhere than on Gradescope (``TORCH_INDEX_URL``).
"""

from __future__ import annotations

import textwrap

from autograder.gradescope import memory
from autograder.gradescope.results import WHEN
from autograder.gradescope.settings import Settings

#: Seconds the sandbox takes to start (importing PyTorch) beyond the notebook's deadline, on Gradescope's half CPU.
START_SECONDS = 120
WIDTH = 116


def paragraph(text: str, first: str = "", rest: str = "") -> str:
    """``text`` wrapped as a Markdown paragraph (``first`` and ``rest``: the indents of its lines, for a list item)."""
    words = " ".join(text.split())
    return textwrap.fill(
        words, WIDTH, initial_indent=first, subsequent_indent=rest, break_on_hyphens=False, break_long_words=False
    )


def item(text: str) -> str:
    """``text`` wrapped as an item of a Markdown list."""
    return paragraph(text, "- ", "  ")


def memory_advice(settings: Settings) -> str:
    """What the Memory setting should be, and why."""
    peak = memory.peak_mib(settings.assignment)
    if peak is None:
        return (
            "**Memory.** Grading this section has not been measured (`benchmarks/gradescope_chroot.sh --memory SLUG` "
            f"measures it); start from Gradescope's default of {memory.DEFAULT_MB} MB and raise it if runs end in "
            "'Killed'."
        )
    return (
        f"**Memory: at least {settings.container_mb} MB.** Grading one submission of this section peaked at "
        f"{peak:.0f} MiB in all (every process of `run_autograder`, measured in a fresh Debian root as the course's "
        "`benchmarks/results/gradescope_chroot.md` says); that and a quarter more, for answers that take more memory "
        f"than the reference, rounded up (Gradescope's default is {memory.DEFAULT_MB} MB). `run_autograder`'s log "
        "warns when the container has less."
    )


def rationing(settings: Settings) -> str:
    """The feedback rationing this zip was built with, in words."""
    if settings.full_feedback is None:
        return "Every submission gets full feedback (built without `--full-feedback`)."
    return (
        f"Full feedback is rationed: a student's submission gets every test's output when fewer than "
        f"{settings.full_feedback} of their submissions in the {settings.feedback_window_hours:g} hours before it "
        "got it; past that, each test shows its name and score, and in place of its output one sentence saying "
        "why and from when full feedback returns; that submission's feedback is shown after the due date. The "
        "count comes from Gradescope's `/autograder/submission_metadata.json` (the submission's time and the "
        "times of the previous ones), so a regrade gives every submission what it got; submissions Gradescope "
        "marks as an autograder error do not count."
    )


def readme(settings: Settings, deadline: float) -> str:
    """The zip's README.md for ``settings``, whose notebooks may run ``deadline`` seconds."""
    sandbox = (
        "in bubblewrap (built with `--bubblewrap`: it needs user namespaces, which Gradescope's containers lack)"
        if settings.bubblewrap
        else "without bubblewrap, as the unprivileged user `nobody`, under a seccomp filter and resource limits"
    )
    log = WHEN[settings.stdout] + ("" if settings.stdout == "hidden" else " (instructors always see it)")
    settings_items = [
        memory_advice(settings),
        f"**Timeout: at least {int(deadline + START_SECONDS)} s**: the notebook's deadline ({deadline:g} s) and "
        "two minutes to start the sandbox, which imports PyTorch (Gradescope gives an autograder half a CPU by "
        "default).",
        f"**What students see.** Each exercise's name and score: {WHEN[settings.tests]}. Its feedback (what its "
        f"test cell printed, a failed check's message and hint): {WHEN[settings.output]}. The autograder's log: "
        f"{log}. {rationing(settings)}",
        f"Student code runs {sandbox}.",
    ]
    setup = (
        "Gradescope runs `setup.sh` once, as root. It installs `debian-packages.txt` with apt; Python 3.11 of at "
        "least the version in `python-version.txt` (the oldest that every pinned package accepts): the system's "
        "where it is recent enough, else uv's under `/opt` (Ubuntu 22.04's `python3.11` is 3.11.0); and the pinned "
        "environment (`constraints.txt`, `requirements.txt`) in `/autograder/venv`. PyTorch comes from the index "
        "that the environment variable `TORCH_INDEX_URL` names:"
    )
    results = (
        "`/autograder/results/results.json`, one test per graded test cell, named by its exercise. Its outputs are "
        'Markdown (`"output_format": "md"`): what a test cell printed, tracebacks included, in a code block; a '
        "submission that could not be graded (no notebook, two, a broken one) gets zero and says why. Written "
        "answers are not in it: grade them as manually graded questions of the assignment."
    )
    files = (
        "`gradescope.json` (these settings), `code/` (the grading core), `course/` (the section's nbgrader course: "
        "its gradebook holds the hidden tests; no solution), `trained/` and `data/` (the weights and data the "
        "section loads: grading never trains and never downloads), `constraints.txt`, `requirements.txt`, "
        "`python-version.txt`, `debian-packages.txt`."
    )
    return "\n".join(
        [
            f"# Gradescope autograder: {settings.assignment}",
            "",
            paragraph(
                "Made by `make gradescope` from the course repository; upload this zip as the autograder of one "
                "programming assignment (Configure Autograder, zip file upload, Ubuntu base image). The course's "
                'README.md ("Grading on Gradescope") says the rest.'
            ),
            "",
            "## Autograder Settings on Gradescope",
            "",
            *[item(text) for text in settings_items],
            "",
            "## What `setup.sh` does, and `TORCH_INDEX_URL`",
            "",
            paragraph(setup),
            "",
            "| `TORCH_INDEX_URL` | PyTorch from |",
            "|---|---|",
            "| unset (as on Gradescope) | PyTorch's CPU index, `https://download.pytorch.org/whl/cpu` "
            "(PyPI's wheel brings CUDA) |",
            "| set and empty (`TORCH_INDEX_URL=`) | pip's own configuration (`pip.conf`, `PIP_INDEX_URL`, "
            "`PIP_FIND_LINKS`): a mirror, or wheels on the local disk |",
            "| a URL (`https://...`, `file://...`) | that index |",
            "",
            paragraph("Another root folder than `/autograder`: `AUTOGRADER_ROOT`, for both scripts."),
            "",
            "## What `run_autograder` writes",
            "",
            paragraph(results),
            "",
            "## Files",
            "",
            paragraph(files),
            "",
        ]
    )
