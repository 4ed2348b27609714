"""The grading coordinator: ``python -m autograder.grade SUBMISSIONS [--course DIR] [--jobs N] [--out DIR] [...]``.

``SUBMISSIONS`` is a folder in nbgrader's layout, ``STUDENT/ASSIGNMENT/NOTEBOOK.ipynb``
(or one folder above it), or a ``.zip`` of one (``--cluster ADDR`` and ``--db URL``: below).
``--course`` is the nbgrader course that ``make release`` builds (``_build/course``: its gradebook and ``release/``).

For every (student, assignment, notebook) there is exactly one result: a score, or
zero with a reason (``STATUSES``). Nothing a submission holds can stop the batch:

* **Never trust the submitted notebook's structure.** What runs is rebuilt from the
  instructor's copy (the release notebook, then nbgrader's ``OverwriteCells`` puts
  the hidden tests back from the gradebook); only the sources of the submission's
  answer cells (nbgrader ``solution`` cells, matched by grade_id and cell type) are
  taken. Edited locked cells and forged metadata are ignored (the course's own
  cells run) and reported, and the notebook scores zero, as docs/design.md says;
  ``--tampered keep`` gives it its answers' score instead.
* Student code runs in a bubblewrap sandbox (:mod:`autograder.sandbox`), in
  parallel (``--jobs``), with a progress bar; where bubblewrap cannot run (a
  container, Gradescope's: :mod:`autograder.gradescope`), and only when asked
  (``--no-bubblewrap``), in the same sandbox without its namespaces, as an
  unprivileged user.
* **Answers that silence the checks.** Each test's hidden part runs with the
  checks the sandbox recorded before any student code, and the sandbox reports
  an answer that changed what the hidden tests rely on (``qkv.checks``,
  ``builtins``, ``sys.modules``...: :class:`autograder.sandboxed.guard.Guard`) as an
  error output of the test cell (``protocol.TAMPERED``); such a notebook is
  ``tampered`` and scores zero (``--tampered keep``: the points of the tests
  that passed), the changes named in the reason (:func:`~.outputs.integrity_changes`).
* An unanswered stub's ``NotImplementedError`` names its exercise, number and
  name, taken from the release notebook (:func:`~.outputs.name_exercises`).
* **Limits per section.** A run may take ``--deadline`` seconds and ``--memory``
  GiB (120 s and 3 GiB by default). A section that needs more (one that trains a
  model) says so in its notebook's front matter, which jupytext, the assembler
  and ``nbgrader generate_assignment`` carry into the release notebook's
  metadata::

      grading:
        deadline_s: 300   # wall-clock seconds for the whole notebook
        memory_gib: 4     # GiB of address space

  (:data:`course.section.LIMIT_KEYS`). The grader reads it from the course's
  release notebook, never from the submission, whose metadata a student
  controls. A section's values replace the defaults for that section; a
  ``--deadline`` or ``--memory`` given on the command line holds for every
  section, theirs included (the instructor has the last word, e.g. on a slow
  machine). An invalid block stops the run before any grade is written.
* Only this process writes: nbgrader's gradebook (its ``SaveAutoGrades`` scores the
  executed notebook, so ``determine_grade`` decides), the autograded notebooks in
  ``COURSE/autograded/STUDENT/ASSIGNMENT/``, nbgrader's feedback, ``grades.csv`` and
  the report (:mod:`autograder.report`). nbgrader's own ``formgrader``,
  ``generate_feedback`` and ``export`` work on the result.
* **Beyond one machine.** ``--cluster tcp://HOST:PORT`` runs the sandboxes on the workers of a dask.distributed
  cluster (:mod:`autograder.cluster`: every worker checked first, lost tasks run again, one result each); this
  process still writes everything. ``--db URL`` grades into another gradebook database, e.g. PostgreSQL
  (:func:`gradebook.check_database` fails fast when it cannot be used; :func:`gradebook.copy_structure` brings the
  course's assignments and hidden tests into it). Each finished submission goes into a :class:`~.journal.Journal`,
  so that an interrupted run, started again, finishes the class without grading anything twice.
* Grading again loses nothing: a score a grader gave in the formgrader stays in
  the gradebook and counts. A ``timestamp.txt`` beside a notebook (as ``nbgrader
  collect`` leaves it) and the assignment's due date in the gradebook mark late
  work; nbgrader's ``LateSubmissionPlugin`` sets the penalty.

One job per module (none imports :mod:`autograder.grading.cli`; the import-linter contract in ``pyproject.toml``
keeps the layers):

===========  ==================================================================================
``options``  :class:`~.options.GradeOptions`, the run's options, frozen and checked once
``rebuild``  the notebook to run, from the release and the submission's answers only
``outputs``  the sandbox's outputs, cleaned and put into the notebook; what they report
``limits``   the limits of each section's runs, from its release notebook's ``grading:`` block
``results``  one submission: :func:`~.results.prepare`, :func:`~.results.finish`, :class:`~.results.Result`
``journal``  finished submissions on disk, so that an interrupted run resumes
``schedule`` every submission once, here or on a cluster (:mod:`autograder.cluster`)
``cli``      :func:`~.cli.grade` and the command line
===========  ==================================================================================
"""
