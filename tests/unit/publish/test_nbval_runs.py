"""The smoke book shows nbval's run of each student notebook (tests/support/nbval_runs.py): the outputs go to the
right cells, cells the book does not execute get none, and a page whose code differs is left to Jupyter Book."""

from __future__ import annotations

import nbformat.v4 as v4

from tests.support import nbval_keep, nbval_runs


def _page():
    skipped = v4.new_code_cell("answer()", metadata={"tags": ["skip-execution"]})
    return v4.new_notebook(cells=[v4.new_markdown_cell("# A page"), v4.new_code_cell("x = 1\nx"), skipped])


def _executed():
    error = v4.new_output("error", ename="NotImplementedError", evalue="", traceback=[])
    return v4.new_notebook(
        cells=[
            v4.new_markdown_cell("# A page"),
            v4.new_code_cell("x = 1\nx", outputs=[v4.new_output("execute_result", {"text/plain": "1"})]),
            v4.new_code_cell("answer()", outputs=[error]),
        ]
    )


def test_outputs_go_to_their_cells_and_skipped_cells_show_none():
    page = _page()
    assert nbval_runs.outputs_for_page(page, _executed())
    assert page.cells[1].outputs[0]["data"] == {"text/plain": "1"}
    assert page.cells[2].outputs == [] and page.cells[2].execution_count is None


def test_a_page_whose_code_differs_is_left_untouched():
    page, executed = _page(), _executed()
    executed.cells[1].source = "x = 2\nx"
    assert not nbval_runs.outputs_for_page(page, executed)
    assert page.cells[1].outputs == []
    executed.cells.pop()  # one code cell fewer
    assert not nbval_runs.outputs_for_page(_page(), executed)


def test_the_plugin_keeps_what_nbval_ran(tmp_path):
    """nbval's run of a small notebook with the plugin writes the notebook with each cell's outputs."""
    import nbformat

    path = tmp_path / "tiny.ipynb"
    nb = v4.new_notebook(cells=[v4.new_code_cell("print('hi')"), v4.new_code_cell("6 * 7"), v4.new_code_cell("6 * 7;")])
    nbformat.write(nb, path)
    result = nbval_runs.run(path, keep=tmp_path / "kept.ipynb")
    assert result.passed, result.stdout
    cells = nbformat.read(result.executed, as_version=4).cells
    assert cells[0].outputs[0]["text"] == "hi\n"
    assert cells[1].outputs[0]["data"]["text/plain"] == "42"
    assert cells[2].outputs == [], "a closing ';' hides the result in Jupyter, and so in the kept notebook"


def test_a_failed_run_does_not_pass():
    assert not nbval_runs.NbvalRun(1, "3 passed, 1 failed").passed
    assert not nbval_runs.NbvalRun(0, "no tests ran").passed
    assert nbval_runs.NbvalRun(0, "12 passed in 3.1s").passed


def test_the_plugin_is_off_unless_asked():
    class Config:
        def getoption(self, name):
            return None

    class Item:
        config, test_outputs, cell = Config(), [1], None

    nbval_keep.keep(Item())
    assert "nb" not in nbval_keep._KEPT
