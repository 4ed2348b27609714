"""Error outputs as the grader sends them: Python's traceback without the grader's own frames and without any
line of a cell, so that feedback never shows a hidden test's code."""

from __future__ import annotations

import os
import traceback

import IPython

#: Frames of these files are the grader's machinery, not the student's: tracebacks leave them out.
MACHINERY = (
    os.path.dirname(os.path.abspath(IPython.__file__)) + os.sep,
    os.path.dirname(os.path.abspath(__file__)) + os.sep,
)


def brief(err: BaseException, cells: dict[str, int]) -> bool:
    """Whether ``err`` is shown as its message alone, as ``qkv.checks.install()`` shows it in Jupyter: a failed
    check (``qkv.checks.CheckFailed``: its message is the whole report, and the frames would be the checks
    library's), or an unanswered stub's ``NotImplementedError`` (raised in a cell, with the message the handler
    gave it). Anything else keeps its traceback."""
    kind = type(err)
    if kind.__name__ == "CheckFailed" and kind.__module__ == "qkv.checks":
        return True
    if kind is NotImplementedError and err.args:
        frames = traceback.extract_tb(err.__traceback__)
        return bool(frames) and frames[-1].filename in cells
    return False


def error_output(err: BaseException, cells: dict[str, int]) -> dict:
    """The error output of ``err``: Python's traceback without the frames of IPython and of this package (the
    grader's machinery), each frame of a cell named as Jupyter names it (``Cell In[3], line 2``, from
    ``cells``, file name -> execution count) and without its lines."""
    if brief(err, cells):
        text = str(err)[:10_000].split("\n")
        lines = [f"{type(err).__name__}: {text[0]}", *text[1:]]
        return {"output_type": "error", "ename": type(err).__name__, "evalue": str(err)[:10_000], "traceback": lines}
    lines = []
    for frame in traceback.extract_tb(err.__traceback__):
        if os.path.abspath(frame.filename).startswith(MACHINERY):
            continue
        if frame.filename in cells:
            lines.append(f"  Cell In[{cells[frame.filename]}], line {frame.lineno}, in {frame.name}")
        else:
            lines += traceback.format_list([frame])[0].rstrip("\n").split("\n")
    if lines:
        lines.insert(0, "Traceback (most recent call last):")
    last = "".join(traceback.format_exception_only(type(err), err))
    if isinstance(err, SyntaxError) and err.filename in cells:
        last = last.replace(f'File "{err.filename}"', f"Cell In[{cells[err.filename]}]")
    lines += last.rstrip("\n").split("\n")
    return {"output_type": "error", "ename": type(err).__name__, "evalue": str(err)[:10_000], "traceback": lines[-200:]}
