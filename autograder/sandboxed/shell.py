"""IPython's shell as a Jupyter kernel uses it, its outputs collected into :class:`~.capture.CellOutputs`.

This is where the grader leans on IPython's private API (``CachingCompiler._filename_map``, ``_showtraceback``,
``_tee``); the ``ipython`` pin in ``constraints.txt`` holds it, and
``tests/unit/autograder/test_sandboxed_cells.py`` runs cells through it.
"""

from __future__ import annotations

import ast
import contextlib

from IPython.core.compilerop import CachingCompiler
from IPython.core.displayhook import DisplayHook
from IPython.core.displaypub import DisplayPublisher
from IPython.core.error import UsageError
from IPython.core.inputtransformer2 import TransformerManager
from IPython.core.interactiveshell import InteractiveShell
from traitlets import Type
from traitlets.config import Config

from .capture import CellOutputs
from .tracebacks import error_output


class _Publisher(DisplayPublisher):
    """``display()`` and ``clear_output()``: into the running cell's outputs (as ipykernel sends them)."""

    def publish(self, data, metadata=None, *args, transient=None, update=False, **kwargs) -> None:
        cell = self.shell.cell
        if cell is not None and isinstance(data, dict):
            display_id = transient.get("display_id") if isinstance(transient, dict) else None
            cell.display(data.get("text/plain"), display_id, update)

    def clear_output(self, wait=False) -> None:
        if self.shell.cell is not None:
            self.shell.cell.clear(wait)


class _ResultHook(DisplayHook):
    """The value of a cell's last expression: an ``execute_result`` of the running cell, not printed text."""

    def write_output_prompt(self) -> None:
        pass

    def write_format_data(self, format_dict, md_dict=None) -> None:
        if self.shell.cell is not None:
            self.shell.cell.result(format_dict.get("text/plain"))

    def finish_displayhook(self) -> None:
        self._is_active = False


class _Compiler(CachingCompiler):
    """IPython's compiler without its copy of each cell's source in ``linecache``: tracebacks and warnings then
    show no line of a cell, so the feedback cannot show the hidden tests' code (as before IPython ran cells)."""

    def cache(self, transformed_code: str, number: int = 0, raw_code: str | None = None) -> str:
        name = self.get_code_name(transformed_code if raw_code is None else raw_code, transformed_code, number)
        self._filename_map[name] = number
        return name


class _Transformer(TransformerManager):
    """IPython's input transformations, with a shortcut: the token transforms (``%magic``, ``!cmd``, ``obj?``,
    ``x = %magic``) are skipped for a cell that parses as Python already, which none of that syntax does.
    Python 3.11 tokenizes in pure Python, which costs a long test cell more than running it."""

    def do_token_transforms(self, lines):
        try:
            compile("".join(lines), "<cell>", "exec", ast.PyCF_ONLY_AST | ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
        except (SyntaxError, ValueError):  # IPython's syntax, or a mistake IPython will report
            return super().do_token_transforms(lines)
        return lines


class GraderShell(InteractiveShell):
    """IPython's shell as a Jupyter kernel uses it, with the kernel's outputs collected into :class:`CellOutputs`
    (``cell``, the running cell's) instead of sent over ZeroMQ."""

    compiler_class = Type(_Compiler)
    displayhook_class = Type(_ResultHook)
    display_pub_class = Type(_Publisher)
    cell: CellOutputs | None = None

    def _showtraceback(self, etype, evalue, stb) -> None:
        """An error output in the shape the grader has always sent (Python's own traceback, without the
        frames of IPython and of this package, and without the lines of a cell): not IPython's ``stb``."""
        if self.cell is not None:
            self.cell.error(error_output(evalue, self.compile._filename_map))

    def show_usage_error(self, exc) -> None:
        """An unknown magic and other misuses: an error output (a Jupyter kernel prints them to stderr, and
        nbgrader would then count the cell as passed although nothing of it ran)."""
        if self.cell is not None:
            error = {"output_type": "error", "ename": "UsageError", "evalue": str(exc)[:10_000]}
            self.cell.error({**error, "traceback": [f"UsageError: {exc}"]})

    def enable_gui(self, gui=None) -> None:
        """``%matplotlib inline`` needs no event loop; a window (``%gui qt``, ``%matplotlib tk``) cannot be had."""
        if gui in (None, "inline"):
            return
        raise UsageError(f"the grader cannot open windows (GUI {gui!r}): use `%matplotlib inline`, or leave it out")

    def should_run_async(self, raw_cell, *, transformed_cell=None, preprocessing_exc_tuple=None) -> bool:
        """IPython's answer, without compiling once more a cell that has no ``await`` or ``async`` at all."""
        if isinstance(transformed_cell, str) and "await" not in transformed_cell and "async" not in transformed_cell:
            return False
        return super().should_run_async(
            raw_cell, transformed_cell=transformed_cell, preprocessing_exc_tuple=preprocessing_exc_tuple
        )

    @contextlib.contextmanager
    def _tee(self, channel):
        """No copy of the cell's printed text in IPython's history: the cell's budget already bounds it."""
        yield


def make_shell() -> GraderShell:
    """The IPython shell every cell of this sandbox runs in: no history file (and so no history thread),
    no colours in tracebacks, only ``text/plain`` forms computed."""
    config = Config()
    config.HistoryManager.enabled = False
    shell = GraderShell.instance(config=config, colors="nocolor")
    shell.input_transformer_manager = _Transformer()
    shell.display_formatter.active_types = ["text/plain"]
    shell.InteractiveTB.set_mode("Minimal")  # its traceback is not sent (see _showtraceback): compute little
    return shell
