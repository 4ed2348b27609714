"""What runs inside the grading sandbox: a zygote that forks one fresh child per submission.

This package is bound read-only into the bubblewrap sandbox that
:mod:`autograder.sandbox` starts (at ``/opt/qkv-grader/sandboxed``), and run
there as ``python -m sandboxed`` by the venv's Python. It imports nothing from
the repository but itself and what the notebooks import themselves (``torch``,
``matplotlib``, ``qkv``), plus IPython, which runs the cells, and
``pyseccomp``, which installs the seccomp filter (an import-linter contract in
``pyproject.toml`` checks it). One job per module:

==============  ==============================================================
``protocol``    every marker and name shared with the coordinator (stdlib only)
``seccomp``     the child's filter: no new processes
``capture``     a cell's outputs within its budget; ``sys.stdout``/``stderr``
``tracebacks``  error outputs without the grader's frames or a cell's lines
``shell``       IPython's shell, its outputs into ``capture``
``guard``       what the hidden tests rely on, checked around each hidden part
``cells``       one cell (``run_cell``), one job in a forked child
``zygote``      preload, prefix, fork, wait, sweep
==============  ==============================================================

The zygote
    imports the heavy modules once (``--preload``), creates the IPython shell
    that runs every cell (:class:`~.shell.GraderShell`) and the seccomp filter, makes
    itself non-dumpable (so that no student process can ptrace it or read its
    memory), says ``ready`` on the control socket, then serves jobs one at a
    time. A job is announced by the parent with a JSON line carrying the
    limits and, passed with ``SCM_RIGHTS``, one end of a fresh socket pair.
    The zygote never reads a notebook itself (no submission ever enters its
    memory, so none can leak into the next child): it forks, hands the socket
    to the child, waits for the child with the wall-clock deadline, kills every
    process of the sandbox but itself (``kill(-1, SIGKILL)``: leftovers of a
    student cannot reach the next one), puts ``/tmp`` back as it was before
    the first child and reports how the child ended.

The child
    closes the control socket, sets its resource limits (memory, CPU time,
    file size, processes), loads the seccomp filter (no new processes; threads
    are allowed), reads its job (the sources of the code cells to run) and runs
    them one by one with IPython's ``InteractiveShell.run_cell``, as a Jupyter
    kernel does: magics (``%timeit``, ``%time``, ``%matplotlib inline``...),
    ``display()``, the value of a last bare expression as an
    ``execute_result``, printed text as ``stream`` outputs (truncated per
    cell), an exception as an ``error`` output with ``ename``, ``evalue`` and
    ``traceback`` as nbgrader's ``determine_grade`` expects. A traceback
    names a cell's frames as Jupyter does (``Cell In[4], line 2``) but shows
    none of a cell's lines, so feedback never shows a hidden test's code. An
    unknown magic is an ``error`` output too (``UsageError``), so the cell
    counts as failed.
    Only the ``text/plain`` form of a result or display is computed and sent:
    the grader keeps nothing else, and rendering images would cost time.
    Each cell's outputs are sent to the parent as soon as the cell ends, so a
    child that dies still leaves the cells it finished. It ends with
    ``os._exit``: a thread a student left behind delays nothing.

The hidden tests
    A test cell comes with its hidden part after nbgrader's marker
    (``protocol.BEGIN_HIDDEN``, kept in the gradebook's copy of the cell).
    The visible part runs as a cell; if it passes, :func:`~.guard.run_hidden` runs
    the hidden part in a namespace of its own: the notebook's names (the
    answers), but ``checks``, ``torch`` and the modules the course's prefix
    imported as the zygote recorded them before any student code, and a copy
    of the real builtins. The zygote's :class:`~.guard.Guard` records what the hidden
    tests and ``qkv.checks`` rely on (the checks' functions and their code,
    ``builtins``, ``sys.modules``, the modules and classes the tests call) and
    compares it before and after every hidden part; a change is an error
    output of the cell (``ename`` ``protocol.TAMPERED``, the change named), which
    :mod:`autograder.grading` turns into the status ``tampered``. What this
    cannot see (a change undone between two comparisons, ``ctypes``, code
    that rewrites this package's objects) is said in README.md, "What grading
    promises against a dishonest student".

Without bubblewrap
    (``autograder.sandbox``'s mode for machines where it cannot run, such as
    Gradescope's containers) the same zygote runs as an unprivileged user in a
    plain process, with ``--scratch DIR``: that folder is its only writable
    place, the sweep kills its own process group, it will not serve without a
    seccomp filter, and each child's filter also refuses sockets, io_uring,
    new sessions, process groups and namespaces
    (``seccomp.UNCONTAINED_REFUSED``) and gives the child the first turn of
    the kernel's out-of-memory killer. See :mod:`.zygote`.

The protocol is newline-delimited JSON. Everything the child sends is
untrusted: the parent treats it as data and grades it with nbgrader.
"""
