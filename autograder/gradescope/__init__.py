"""The Gradescope front door: an autograder zip per section that grades with the course's grading core.

``make gradescope`` (:mod:`~.build`) writes ``_build/gradescope/<slug>.zip``; on Gradescope its ``setup.sh``
installs the pinned environment once and its ``run_autograder`` (:mod:`~.run`) grades each submission with
:func:`autograder.grading.cli.grade`, the same rebuild, sandbox, Guard, hidden tests and limits as ``make grade``,
then writes Gradescope's ``results.json`` (:mod:`~.results`). It adapts formats only: it never grades on its own.
Inside Gradescope's container bubblewrap cannot run, so the zip asks the core for its mode without bubblewrap
(:mod:`autograder.sandbox`), unless the instructor builds it with ``--bubblewrap``.

==============  ====================================================================================
``layout``      the names inside a zip and Gradescope's folders (``AUTOGRADER_ROOT``)
``settings``    the instructor's choices (visibility, sandbox, limits, rationing), ``gradescope.json``, checked
``markdown``    the Markdown of every output (``"output_format": "md"``): escaped text, code blocks
``ration``      full feedback for the first N submissions in a window, from ``submission_metadata.json``
``results``     ``results.json`` from the core's result and the graded notebook; its format, checked
``run``         ``run_autograder``: find the notebook, grade it, write the results
``memory``      the measured peak memory of grading each section, and the container it needs
``guide``       the zip's README.md: what to set on Gradescope for the section, ``TORCH_INDEX_URL``
``build``       ``make gradescope``: the zips
==============  ====================================================================================

``setup.sh`` and ``run_autograder`` beside these modules are copied into every zip; ``memory.toml`` holds what
``benchmarks/gradescope_chroot.sh`` measured.
"""
