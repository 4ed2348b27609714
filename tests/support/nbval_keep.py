"""A pytest plugin for nbval's run of a notebook: keep what the kernel printed and drew, as an executed notebook.

nbval executes every code cell in a kernel and throws the outputs away (``--nbval-lax`` compares none of them). With
``-p tests.support.nbval_keep --nbval-keep OUT.ipynb``, each cell's outputs, as nbval received them from the kernel,
go into the notebook nbval read, written to ``OUT.ipynb`` when the run ends; so one execution both proves that the
notebook runs and gives the smoke book its outputs (:mod:`tests.support.nbval_runs`). A run of several notebooks
writes the last one's; give it one.

nbval sends each cell without storing it in the kernel's history, so IPython's display hook cannot see a cell's
closing ``;`` and shows the result anyway (a figure returned by ``plot(...);`` came out twice); the kept notebook
drops that result, as Jupyter does.
"""

from __future__ import annotations

import pytest

_KEPT: dict[str, object] = {}


def pytest_addoption(parser):
    parser.addoption("--nbval-keep", default=None, help="write the executed notebook (outputs as run) to this path")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    """After nbval ran a cell (whether it passed or failed): its outputs into the cell of the notebook nbval read."""
    try:
        return (yield)
    finally:
        keep(item)


def keep(item) -> None:
    outputs = getattr(item, "test_outputs", None)
    if outputs is None or not item.config.getoption("--nbval-keep"):
        return
    if _quiet(item.cell.source):  # as Jupyter shows it: nbval runs cells without history, so ';' silenced nothing
        outputs = [out for out in outputs if out.get("output_type") != "execute_result"]
    item.cell.outputs = outputs  # item.cell is a cell of item.parent.nb, the notebook nbval read
    item.cell.execution_count = item.cell_num + 1
    _KEPT["nb"] = item.parent.nb


def _quiet(source: str) -> bool:
    """Whether the cell ends in ``;``, which in Jupyter hides its result (IPython's own test of it)."""
    from IPython.core.displayhook import DisplayHook

    try:
        return DisplayHook.semicolon_at_end_of_expression(source)
    except Exception:  # noqa: BLE001 (code that does not tokenize shows its error, not a result)
        return False


def pytest_sessionfinish(session):
    path = session.config.getoption("--nbval-keep")
    if path and "nb" in _KEPT:
        import nbformat

        nbformat.write(_KEPT["nb"], path)
