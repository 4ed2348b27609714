"""What runs inside the grading sandbox: a zygote that forks one fresh child per submission.

This file is bound read-only into the bubblewrap sandbox that
:mod:`autograder.sandbox` starts, and run there as a script by the venv's
Python. It imports nothing from the repository but what the notebooks import
themselves (``torch``, ``matplotlib``, ``qkv``), plus IPython, which runs the
cells, and ``pyseccomp``, which installs the seccomp filter.

The zygote
    imports the heavy modules once (``--preload``), creates the IPython shell
    that runs every cell (:class:`GraderShell`) and the seccomp filter, makes
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
    (``### BEGIN HIDDEN TESTS``, kept in the gradebook's copy of the cell).
    The visible part runs as a cell; if it passes, :func:`run_hidden` runs
    the hidden part in a namespace of its own: the notebook's names (the
    answers), but ``checks``, ``torch`` and the modules the course's prefix
    imported as the zygote recorded them before any student code, and a copy
    of the real builtins. The zygote's :class:`Guard` records what the hidden
    tests and ``qkv.checks`` rely on (the checks' functions and their code,
    ``builtins``, ``sys.modules``, the modules and classes the tests call) and
    compares it before and after every hidden part; a change is an error
    output of the cell (``ename`` :data:`TAMPERED`, the change named), which
    :mod:`autograder.grade` turns into the status ``tampered``. What this
    cannot see (a change undone between two comparisons, ``ctypes``, code
    that rewrites this file's objects) is said in README.md, "What grading
    promises against a dishonest student".

The protocol is newline-delimited JSON. Everything the child sends is
untrusted: the parent treats it as data and grades it with nbgrader.
"""

from __future__ import annotations

import argparse
import ast
import builtins
import contextlib
import ctypes
import errno
import gc
import json
import os
import resource
import select
import shutil
import signal
import socket
import sys
import time
import traceback

import IPython
from IPython.core.compilerop import CachingCompiler
from IPython.core.displayhook import DisplayHook
from IPython.core.displaypub import DisplayPublisher
from IPython.core.error import UsageError
from IPython.core.inputtransformer2 import TransformerManager
from IPython.core.interactiveshell import InteractiveShell
from traitlets import Type
from traitlets.config import Config

# Bound before any student code can run: a child uses these, not what a student re-binds.
_run_cell = InteractiveShell.run_cell
_dumps = json.dumps

#: Frames of these files are the grader's machinery, not the student's: tracebacks leave them out.
MACHINERY = (os.path.dirname(os.path.abspath(IPython.__file__)) + os.sep, os.path.abspath(__file__))
#: Wipe these between children (the sandbox's only writable places).
WRITABLE = ("/tmp", "/dev/shm")


# ---------------------------------------------------------------- seccomp: no new processes

#: The system calls the filter refuses, and the errno each then fails with. fork, vfork: EAGAIN, as when the
#: process limit is reached. clone3: ENOSYS, as on an older kernel, because its flags live in memory, out of a
#: filter's reach; the C library then falls back to clone, which the filter can read (threads still work).
#: ptrace, process_vm_readv/writev: EPERM (no reading or steering another process).
REFUSED = {
    "fork": errno.EAGAIN,
    "vfork": errno.EAGAIN,
    "clone3": errno.ENOSYS,
    "ptrace": errno.EPERM,
    "process_vm_readv": errno.EPERM,
    "process_vm_writev": errno.EPERM,
}
CLONE_THREAD = 0x00010000


def no_fork_filter():
    """The seccomp filter of a child, built with libseccomp (``pyseccomp``) but not loaded; None where
    libseccomp is missing or too old to know a call of :data:`REFUSED`.

    Besides :data:`REFUSED`, ``clone`` without ``CLONE_THREAD`` (a process, not a thread) fails with EAGAIN,
    and a call made through another ABI than the native one (i386 ``int 0x80`` or x32 calls on x86_64) with
    EPERM. Everything else is allowed. libseccomp sets ``no_new_privs`` when the filter is loaded. The zygote
    builds it once; loading it in a child takes about 0.5 ms (the hand-built BPF program it replaced: about 1 ms)."""
    try:
        import pyseccomp as seccomp
    except (ImportError, OSError, RuntimeError):  # RuntimeError: pyseccomp found no libseccomp
        return None
    rules = seccomp.SyscallFilter(seccomp.ALLOW)
    rules.set_attr(seccomp.Attr.ACT_BADARCH, seccomp.ERRNO(errno.EPERM))
    for name, err in REFUSED.items():
        number = seccomp.resolve_syscall(seccomp.Arch.NATIVE, name)
        if number == -1:  # a name this libseccomp does not know: refuse to pretend we filter
            return None
        if number >= 0:  # below -1: a call this architecture does not have (fork on aarch64)
            rules.add_rule(seccomp.ERRNO(err), number)
    thread = seccomp.Arg(0, seccomp.MASKED_EQ, CLONE_THREAD, 0)  # clone's flags lack CLONE_THREAD
    rules.add_rule(seccomp.ERRNO(errno.EAGAIN), "clone", thread)
    return rules


def install_no_fork_filter(rules=None) -> bool:
    """Load ``rules`` (default: a fresh :func:`no_fork_filter`) on this process, irreversibly. Returns whether
    a filter was loaded."""
    rules = no_fork_filter() if rules is None else rules
    if rules is None:
        return False
    try:
        rules.load()
    except OSError:
        return False
    return True


# ---------------------------------------------------------------- output capture


class CellOutputs:
    """The nbformat outputs of one cell, in order, within the cell's budget of ``max_lines`` lines and
    ``max_chars`` characters of printed and displayed text (the result of the last expression is cut on its own)."""

    def __init__(self, limits: dict, count: int):
        self.max_lines, self.max_chars = int(limits["max_lines"]), int(limits["max_chars"])
        self.count = count
        self._clear()

    def _clear(self) -> None:
        self.outputs: list[dict] = []
        self.lines = self.chars = self.dropped_lines = 0
        self.dropped = self.clear_pending = False
        self.display_ids: dict[str, dict] = {}

    def _keep(self, text: str) -> str:
        """The part of ``text`` the budget still allows (counted as spent); the rest is noted as dropped."""
        if self.clear_pending:
            self._clear()
        if self.dropped:
            self.dropped_lines += text.count("\n")
            return ""
        lines_left, chars_left = self.max_lines - self.lines, self.max_chars - self.chars
        if lines_left <= 0 or chars_left <= 0:
            keep = ""
        else:
            keep, cut = text[:chars_left], -1
            for _ in range(lines_left):  # cut just after the last newline the budget allows
                cut = keep.find("\n", cut + 1)
                if cut < 0:
                    break
            if cut >= 0:
                keep = keep[: cut + 1]
        if keep != text:
            self.dropped = True
            self.dropped_lines += text.count("\n") - keep.count("\n")
        self.lines += keep.count("\n")
        self.chars += len(keep)
        return keep

    def stream(self, name: str, text: str) -> None:
        text = self._keep(text)
        if not text:
            return
        last = self.outputs[-1] if self.outputs else None
        if last is not None and last["output_type"] == "stream" and last["name"] == name:
            last["text"].append(text)
        else:
            self.outputs.append({"output_type": "stream", "name": name, "text": [text]})

    def display(self, text, display_id=None, update: bool = False) -> None:
        """A ``display_data`` output (``update``: replace the text of the output shown with ``display_id``)."""
        if not isinstance(text, str):
            return  # no text/plain form: nothing the grader keeps
        if update:
            shown = self.display_ids.get(display_id)
            if shown is not None:
                shown["data"]["text/plain"] = text[: self.max_chars]
            return
        kept = self._keep(text + "\n")
        if not kept:
            return
        kept = kept[:-1] if kept.endswith("\n") and len(kept) == len(text) + 1 else kept + "..."
        output = {"output_type": "display_data", "data": {"text/plain": kept}, "metadata": {}}
        self.outputs.append(output)
        if display_id is not None:
            self.display_ids[display_id] = output

    def result(self, text) -> None:
        """The ``execute_result`` of the cell's last expression."""
        if self.clear_pending:
            self._clear()
        if not isinstance(text, str):
            return
        if len(text) > self.max_chars:
            text = text[: self.max_chars] + "..."
        data = {"text/plain": text}
        self.outputs.append(
            {"output_type": "execute_result", "execution_count": self.count, "metadata": {}, "data": data}
        )

    def error(self, output: dict) -> None:
        if self.clear_pending:
            self._clear()
        self.outputs.append(output)

    def clear(self, wait: bool = False) -> None:
        """``clear_output()``: forget what the cell showed so far (with ``wait``, when it next shows something)."""
        if wait:
            self.clear_pending = True
        else:
            self._clear()

    @property
    def failed(self) -> bool:
        return any(o["output_type"] == "error" for o in self.outputs)

    def finish(self) -> list[dict]:
        """The outputs, streams joined, with a note where the budget cut some."""
        outputs = [dict(o, text="".join(o["text"])) if o["output_type"] == "stream" else o for o in self.outputs]
        if self.dropped:
            note = f"\n... output truncated ({self.dropped_lines} more lines not kept) ...\n"
            for output in reversed(outputs):
                if output["output_type"] == "stream" and output["name"] == "stdout":
                    output["text"] += note
                    break
            else:
                outputs.append({"output_type": "stream", "name": "stdout", "text": note})
        return outputs


class Stream:
    """``sys.stdout`` or ``sys.stderr`` of a running cell: what is written goes to the cell's outputs."""

    def __init__(self, name: str, cell: CellOutputs):
        self.name, self._cell = name, cell
        self.encoding, self.errors = "utf-8", "replace"

    def write(self, text) -> int:
        if not isinstance(text, str):
            raise TypeError(f"write() argument must be str, not {type(text).__name__}")
        self._cell.stream(self.name, text)
        return len(text)

    def writelines(self, lines) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return False

    def fileno(self) -> int:
        raise OSError("this stream has no file descriptor")

    def readable(self) -> bool:
        return False

    def writable(self) -> bool:
        return True


# ---------------------------------------------------------------- the IPython shell


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
        frames of IPython and of this file, and without the lines of a cell): not IPython's ``stb``."""
        if self.cell is not None:
            self.cell.error(_error_output(evalue, self.compile._filename_map))

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


# ---------------------------------------------------------------- the hidden tests' integrity

#: nbgrader's markers around the hidden part of a test cell (the gradebook's copy of the cell keeps them).
HIDDEN_BEGIN = "### BEGIN HIDDEN TESTS"
#: The ``ename`` of the error output that reports a change to what the hidden tests rely on;
#: :mod:`autograder.grade` gives a notebook with one the status ``tampered``.
TAMPERED = "TamperingDetected"
#: Modules whose functions, classes and submodules the hidden tests and ``qkv.checks`` rely on, besides every
#: ``qkv`` module: an answer that rebinds one of their attributes is reported.
GUARDED_MODULES = ("math", "contextlib", "torch", "torch.nn", "torch.nn.functional", "torch.overrides")
#: Classes whose methods they call (tensor methods; ``with checks.forbid_reference(...)``; the probes' modes).
GUARDED_CLASSES = (
    ("torch", "Tensor"),
    ("contextlib", "_GeneratorContextManager"),
    ("torch.overrides", "TorchFunctionMode"),
    ("torch.nn", "Module"),
)
#: Names of ``builtins`` that change by themselves (the last result, as Python's own display hook keeps it).
VOLATILE_BUILTINS = frozenset({"_", "__", "___"})
#: Attributes of guarded modules and classes that PyTorch itself re-binds after the imports: ``torch._dynamo``,
#: which the first use of some operations imports (a ``masked_fill`` on the ``meta`` device does), wraps
#: ``torch.manual_seed``, and ``torch.compile`` wraps ``nn.Module.__init__`` and ``__setstate__`` (and adds a
#: flag saying so). The hidden tests seed through ``checks.trusted.manual_seed`` and generators instead, and
#: build no reference module whose construction could matter.
UNGUARDED = {
    "torch": ("manual_seed",),
    "torch.nn.Module": ("__init__", "__setstate__", "___needs_generation_tag_patch"),
}

# Bound when this file is imported, before any student code: the guard uses these, not what an answer re-binds.
_exec, _compile, _getattr, _isinstance, _callable, _sorted = exec, compile, getattr, isinstance, callable, sorted
_gettrace, _getprofile, _FunctionType, _ModuleType = sys.gettrace, sys.getprofile, type(_dumps), type(sys)
_MISSING = object()


class Guard:
    """What the hidden tests rely on, captured by the zygote before any student code runs, then checked before
    and after the hidden part of every test cell (:func:`run_hidden`), which runs in a namespace of its own.

    The record holds the identity of every attribute of ``qkv.checks`` and ``checks.trusted``, of every function,
    class and submodule of the ``qkv`` modules and of :data:`GUARDED_MODULES`, of the methods of
    :data:`GUARDED_CLASSES`, of every name of ``builtins`` (none may be added either) and of every entry of
    ``sys.modules``; the code, defaults and closures of the functions of ``qkv.checks``; and the notebook's name
    ``checks``, when the course's prefix bound it to ``qkv.checks``. No torch function or dispatch mode may be
    active and no trace or profile function set when a hidden part starts or ends.

    The hidden part sees the notebook's names (the answers), but ``checks``, ``torch`` and the other modules the
    prefix imported are the objects captured here, and its builtins a copy taken here: whatever an answer binds
    to those names, or puts in ``builtins``, the hidden tests do not see. What it does to the objects themselves
    is what the record catches.
    """

    def __init__(self, shell) -> None:
        self.shell = shell
        try:
            import qkv.checks as checks
        except Exception:  # noqa: BLE001 (a sandbox without qkv: nothing of it to guard)
            checks = None
        self.checks = checks
        self.builtins = dict(vars(builtins))
        self.bindings: dict[str, object] = {}
        self.capture()

    def capture(self) -> None:
        """Record the current state as the trusted one (the zygote calls it after the imports, and again after
        the course's prefix, which is trusted code too)."""
        entries: list[tuple] = []  # (mapping, key, value, label): mapping.get(key) must still be value

        def mapping(where, label, only_code: bool = False, skip=()) -> None:
            for key, value in list(where.items()):
                if key in skip or not _isinstance(key, str):
                    continue
                if only_code and not (_callable(value) or _isinstance(value, _ModuleType)):
                    continue  # a module's data (a cache it rebinds) is not what the tests call
                entries.append((where, key, value, f"{label}.{key} was replaced"))

        mapping(vars(builtins), "builtins", skip=VOLATILE_BUILTINS)
        entries.append((vars(sys), "modules", sys.modules, "sys.modules was replaced"))
        for name, module in list(sys.modules.items()):
            entries.append((sys.modules, name, module, f"sys.modules[{name!r}] was replaced"))
        attributes: list[tuple] = []  # (object, attribute, value, label)
        if self.checks is not None:
            mapping(vars(self.checks), "qkv.checks")
            trusted = _getattr(self.checks, "trusted", None)
            if trusted is not None:
                mapping(vars(trusted), "qkv.checks.trusted")
            seen: set[int] = set()
            for key, value in vars(self.checks).items():
                if _isinstance(value, _FunctionType):
                    self._function(value, f"qkv.checks.{key}", attributes, seen)
        qkv_modules = [n for n in sys.modules if n == "qkv" or n.startswith("qkv.")]
        for name in _sorted(set(qkv_modules) - {"qkv.checks"}) + list(GUARDED_MODULES):
            module = sys.modules.get(name)
            if module is not None:
                mapping(vars(module), name, only_code=True, skip=UNGUARDED.get(name, ()))
        classes = []  # (class, its names now, label): a name added to the class shadows its bases' method
        for module_name, class_name in GUARDED_CLASSES:
            klass = _getattr(sys.modules.get(module_name), class_name, None)
            if _isinstance(klass, type):
                label = f"{module_name}.{class_name}"
                mapping(vars(klass), label, skip=("__doc__", *UNGUARDED.get(label, ())))
                classes.append((klass, frozenset(vars(klass)) | frozenset(UNGUARDED.get(label, ())), label))
        ns = self.shell.user_ns
        if self.checks is not None and ns.get("checks") is self.checks:
            entries.append((ns, "checks", self.checks, "the notebook's name checks was rebound"))
        self.bindings = {k: v for k, v in ns.items() if _isinstance(v, _ModuleType) and not k.startswith("_")}
        for name in ("torch", "math"):
            if name in sys.modules:
                self.bindings.setdefault(name, sys.modules[name])
        if self.checks is not None:
            self.bindings["checks"] = self.checks
        self.builtin_names = frozenset(vars(builtins))
        self.entries, self.attributes, self.classes = tuple(entries), tuple(attributes), tuple(classes)
        torch = sys.modules.get("torch")
        torch_c = _getattr(torch, "_C", None)
        self.modes = tuple(
            f
            for f in (
                _getattr(torch_c, "_len_torch_function_stack", None),
                _getattr(torch_c, "_len_torch_dispatch_stack", None),
            )
            if f is not None
        )

    @staticmethod
    def _function(fn, label: str, attributes: list, seen: set) -> None:
        """Record a function's code, defaults and closure (and those of the functions its closure holds)."""
        if id(fn) in seen:
            return
        seen.add(id(fn))
        attributes.append((fn, "__code__", fn.__code__, f"{label}'s code was changed"))
        attributes.append((fn, "__defaults__", fn.__defaults__, f"{label}'s defaults were changed"))
        attributes.append((fn, "__kwdefaults__", fn.__kwdefaults__, f"{label}'s defaults were changed"))
        for cell in fn.__closure__ or ():
            try:
                inner = cell.cell_contents
            except ValueError:
                continue
            attributes.append((cell, "cell_contents", inner, f"{label}'s closure was changed"))
            if _isinstance(inner, _FunctionType):
                Guard._function(inner, label, attributes, seen)

    def changes(self, ns: dict | None = None, given: dict | None = None) -> list[str]:
        """What differs from the record, one line each, in a stable order (empty when nothing does). With ``ns``
        (a hidden part's namespace) and ``given`` (its builtins), also the bindings it was given."""
        found = [label for where, key, value, label in self.entries if where.get(key, _MISSING) is not value]
        found += [label for obj, attr, value, label in self.attributes if _getattr(obj, attr, _MISSING) is not value]
        added = vars(builtins).keys() - self.builtin_names - VOLATILE_BUILTINS
        found += [f"builtins.{name} was added" for name in _sorted(added)]
        for klass, names, label in self.classes:
            for name in _sorted(k for k in vars(klass).keys() - names if _isinstance(k, str)):
                inherited = any(name in vars(base) for base in klass.__mro__[1:])
                found.append(f"{label}.{name} was {'replaced' if inherited else 'added'}")
        if any(f() for f in self.modes):
            found.append("a torch function or dispatch mode was left active")
        if _gettrace() is not None:
            found.append("a trace function was set (sys.settrace)")
        if _getprofile() is not None:
            found.append("a profile function was set (sys.setprofile)")
        if ns is not None:
            found += [
                f"the hidden tests' name {name} was rebound"
                for name, value in self.bindings.items()
                if ns.get(name, _MISSING) is not value
            ]
            if ns.get("__builtins__") is not given:
                found.append("the hidden tests' builtins were replaced")
            elif given is not None:
                found += [
                    f"the hidden tests' builtin {k} was replaced"
                    for k, v in self.builtins.items()
                    if given.get(k, _MISSING) is not v
                ]
        return list(dict.fromkeys(found))

    def namespace(self, user_ns: dict) -> tuple[dict, dict]:
        """A hidden part's namespace and builtins: the notebook's names, less those that shadow a builtin, with
        the captured modules and builtins on top."""
        given = dict(self.builtins)
        ns = {k: v for k, v in user_ns.items() if k not in self.builtins}
        ns.update(self.bindings)
        ns["__builtins__"], ns["__name__"] = given, "__main__"
        return ns, given


#: The zygote's guard (None until :func:`zygote` makes it; a child inherits it).
_GUARD: Guard | None = None


def split_hidden(source: str) -> tuple[str, str | None, int]:
    """``(visible, hidden, lines)``: a test cell's source before nbgrader's hidden-test marker, the rest (from the
    marker's line on, or None when there is none), and the number of lines before it."""
    at = source.find(HIDDEN_BEGIN)
    while at > 0 and source[at - 1] != "\n":  # only a marker at the start of a line
        at = source.find(HIDDEN_BEGIN, at + 1)
    if at < 0:
        return source, None, 0
    return source[:at], source[at:], source.count("\n", 0, at)


def tampered_output(changes: list[str], when: str) -> dict:
    """The error output that reports ``changes`` (found ``when``: before or after the hidden tests)."""
    shown = changes[:8] + ([f"and {len(changes) - 8} more"] if len(changes) > 8 else [])
    text = "\n".join(
        [
            "the answers changed objects that the hidden tests rely on:",
            *(f"- {line}" for line in shown),
            f"({when})",
            "A notebook that does this is graded as tampered: see the course's README.md,",
            '"What grading promises against a dishonest student".',
        ]
    )
    lines = [f"{TAMPERED}: {text.splitlines()[0]}", *text.splitlines()[1:]]
    return {"output_type": "error", "ename": TAMPERED, "evalue": text, "traceback": lines}


def run_hidden(shell: GraderShell, source: str, lines: int, count: int, cell: CellOutputs):
    """Run the hidden part of a test cell (``source``, which starts on line ``lines + 1`` of the cell) in its own
    namespace (:meth:`Guard.namespace`), after checking and before checking again that nothing it relies on has
    changed; a change is an error output of the cell (:func:`tampered_output`), and the hidden tests do not run.
    Returns the exception the hidden tests raised, if any."""
    guard = _GUARD
    if guard is None:  # no guard (a sandbox started without one): as in a kernel, in the notebook's namespace
        ns, given = shell.user_ns, None
    else:
        changed = guard.changes()
        if changed:
            cell.error(tampered_output(changed, "found before this test's hidden part ran, so it did not run"))
            return None
        ns, given = guard.namespace(shell.user_ns)
    filename = f"<hidden tests {count}>"
    shell.compile._filename_map[filename] = count
    error = None
    try:
        _exec(_compile("\n" * lines + source, filename, "exec", dont_inherit=True), ns)
    except BaseException as exc:  # noqa: BLE001 (a failed check, or whatever the answers raised)
        error = exc
    if guard is not None:
        changed = guard.changes(ns, given)
        if changed:
            cell.error(tampered_output(changed, "found after this test's hidden part ran"))
    return error


# ---------------------------------------------------------------- running cells


def _brief(err: BaseException, cells: dict[str, int]) -> bool:
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


def _error_output(err: BaseException, cells: dict[str, int]) -> dict:
    """The error output of ``err``: Python's traceback without the frames of IPython and of this file (the
    grader's machinery), each frame of a cell named as Jupyter names it (``Cell In[3], line 2``, from
    ``cells``, file name -> execution count) and without its lines."""
    if _brief(err, cells):
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


def _summarise_figures() -> list[dict]:
    """Figures the cell left open, as text (rendering them would cost time and grade nothing)."""
    plt = sys.modules.get("matplotlib.pyplot")
    if plt is None:
        return []
    outputs = []
    try:
        for num in plt.get_fignums():
            fig = plt.figure(num)
            w, h = fig.get_size_inches() * fig.dpi
            text = f"<Figure size {w:g}x{h:g} with {len(fig.axes)} Axes>"
            outputs.append({"output_type": "display_data", "data": {"text/plain": text}, "metadata": {}})
        plt.close("all")
    except Exception:  # noqa: BLE001 (a student may have broken pyplot; figures are not graded)
        pass
    return outputs


def _name_stub(error) -> None:
    """Give an unanswered stub's bare ``NotImplementedError``, raised under a hidden part (where IPython's
    handler, :func:`qkv.checks.install`, does not see it), the message that handler gives it in a cell."""
    checks = _GUARD.checks if _GUARD is not None else None
    if _isinstance(error, NotImplementedError) and not error.args and checks is not None:
        text = checks.stub_message(error)
        if text:
            error.args = (text,)


def run_cell(shell: GraderShell, source: str, count: int, limits: dict) -> list[dict]:
    """Run one cell in ``shell`` as a Jupyter kernel would, as execution number ``count``; returns its
    nbformat outputs. A test cell's hidden part (from nbgrader's marker on) runs after its visible part
    passed, under :func:`run_hidden`."""
    cell = CellOutputs(limits, count)
    visible, hidden, lines = split_hidden(source)
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = Stream("stdout", cell), Stream("stderr", cell)
    shell.cell, shell.execution_count = cell, count
    error = None
    try:
        result = _run_cell(shell, visible, store_history=True)
        if not result.success and not cell.failed:  # an error IPython printed rather than showed
            error = result.error_before_exec or result.error_in_exec
        if hidden is not None and result.success and error is None and not cell.failed:
            error = run_hidden(shell, hidden, lines, count, cell)
            _name_stub(error)
    except BaseException as exc:  # noqa: BLE001 (whatever escapes the shell is the cell's error too)
        error = exc
    finally:
        sys.stdout, sys.stderr = saved
        shell.cell = None
    outputs = cell.finish() + _summarise_figures()
    if error is not None:
        outputs.append(_error_output(error, shell.compile._filename_map))
    return outputs


def _send(sock: socket.socket, message: dict) -> None:
    sock.sendall((_dumps(message) + "\n").encode("utf-8", "replace"))


def child_main(job_sock: socket.socket, limits: dict, shell: GraderShell, count: int, rules) -> None:
    """Run one job in this (forked) process, in ``shell`` (holding the state after the instructor's prefix),
    under the seccomp filter ``rules``; never returns."""
    code = 0
    try:
        set_limits(limits)
        filtered = install_no_fork_filter(rules) if rules is not None else False
        os.makedirs("/tmp/work", exist_ok=True)
        os.makedirs(os.environ.get("HOME", "/tmp/home"), exist_ok=True)
        os.chdir("/tmp/work")
        chunks = []
        while True:
            chunk = job_sock.recv(1 << 20)
            if not chunk:
                break
            chunks.append(chunk)
        job = json.loads(b"".join(chunks))
        _send(job_sock, {"started": True, "no_fork_filter": filtered})
        output_limits = {"max_lines": int(job["max_lines"]), "max_chars": int(job["max_chars"])}
        trusted = int(job.get("trusted", 0))  # the instructor's prefix, when the zygote could not share it
        for position, (index, source) in enumerate(job["cells"]):
            count += 1
            _send(job_sock, {"start": index})
            outputs = run_cell(shell, source, count, output_limits)
            _send(job_sock, {"cell": index, "execution_count": count, "outputs": outputs})
            if position + 1 == trusted and _GUARD is not None:
                _GUARD.capture()  # as the zygote does after a shared prefix: before any student code
        _send(job_sock, {"done": True})
    except BaseException:  # noqa: BLE001 (report, then exit: the parent grades what it received)
        traceback.print_exc()
        code = 3
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except BaseException:  # noqa: BLE001,S110
            pass
        os._exit(code)


def set_limits(limits: dict) -> None:
    """Resource limits of the child: lowering them needs no privilege."""
    table = {
        "memory": resource.RLIMIT_AS,
        "cpu": resource.RLIMIT_CPU,
        "fsize": resource.RLIMIT_FSIZE,
        "nproc": resource.RLIMIT_NPROC,
        "nofile": resource.RLIMIT_NOFILE,
        "core": resource.RLIMIT_CORE,
    }
    for name, which in table.items():
        if name in limits and limits[name] is not None:
            value = int(limits[name])
            soft, hard = resource.getrlimit(which)
            if hard != resource.RLIM_INFINITY:
                value = min(value, hard)
            resource.setrlimit(which, (value, value))


# ---------------------------------------------------------------- the zygote


def preload(modules: list[str]) -> list[str]:
    """Import the heavy modules once, before any student code; return the ones that failed."""
    os.environ.setdefault("MPLBACKEND", "Agg")
    failed = []
    for name in modules:
        try:
            __import__(name)
        except Exception as exc:  # noqa: BLE001 (a missing optional module only costs time later)
            failed.append(f"{name}: {exc!r}")
    plt = sys.modules.get("matplotlib.pyplot")
    if plt is not None:
        plt.show = lambda *args, **kwargs: None  # as Jupyter's inline backend: figures are kept, not shown
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.set_num_threads(1)
        torch.set_num_interop_threads(1)
    pkg = sys.modules.get("qkv")
    if pkg is not None and "qkv" in modules:
        import pkgutil

        for info in pkgutil.iter_modules(pkg.__path__, "qkv."):
            try:
                __import__(info.name)
            except Exception as exc:  # noqa: BLE001
                failed.append(f"{info.name}: {exc!r}")
    return failed


def snapshot() -> dict[str, tuple]:
    """The files of the writable places, as they are now (what the preload or the prefix left there), bounded
    in size."""
    files, total = {}, 0
    for top in WRITABLE:
        for folder, dirs, names in os.walk(top):
            for name in dirs + names:
                path = os.path.join(folder, name)
                if os.path.islink(path):
                    files[path] = ("link", os.readlink(path))
                elif os.path.isdir(path):
                    files[path] = ("dir", None)
                elif os.path.isfile(path):
                    with open(path, "rb") as fh:
                        data = fh.read(64 * 2**20 - total + 1)
                    total += len(data)
                    if total > 64 * 2**20:
                        raise RuntimeError("the prefix left more than 64 MiB in /tmp")
                    files[path] = ("file", data)
    return files


def sweep(me: int, keep: dict) -> None:
    """Kill every process of the sandbox but this one and init, reap, and put the writable places back
    as ``keep`` (a :func:`snapshot`) says."""
    for _ in range(50):
        try:
            os.kill(-1, signal.SIGKILL)
        except ProcessLookupError:
            pass
        while True:
            try:
                pid, _ = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
        alive = []
        for entry in os.listdir("/proc"):
            if entry.isdigit() and int(entry) not in (1, me):
                try:
                    with open(f"/proc/{entry}/stat") as fh:
                        state = fh.read().rsplit(")", 1)[1].split()[0]
                except OSError:
                    continue
                if state not in ("Z", "X"):
                    alive.append(entry)
        if not alive:
            break
        time.sleep(0.01)
    for top in WRITABLE:
        if not os.path.isdir(top):
            continue
        for entry in os.listdir(top):
            path = os.path.join(top, entry)
            try:
                if os.path.isdir(path) and not os.path.islink(path):
                    shutil.rmtree(path, ignore_errors=True)
                else:
                    os.unlink(path)
            except OSError:
                pass
    for path, (kind, data) in sorted(keep.items()):
        try:
            if kind == "dir":
                os.makedirs(path, exist_ok=True)
            elif kind == "link":
                os.symlink(data, path)
            else:
                with open(path, "wb") as fh:
                    fh.write(data)
        except OSError:
            pass


def wait_child(pid: int, deadline: float) -> tuple[str, int]:
    """Wait for the child until ``deadline`` seconds have passed; returns (how, code)."""
    fd = os.pidfd_open(pid)
    try:
        ready, _, _ = select.select([fd], [], [], max(deadline, 0.0))
    finally:
        os.close(fd)
    if not ready:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        return "timeout", 0
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        return "signal", os.WTERMSIG(status)
    return "exit", os.waitstatus_to_exitcode(status)


def _messages(control: socket.socket):
    """The parent's JSON lines on the control socket, each with the descriptors that came with it."""
    buffer, fds = b"", []
    while True:
        while b"\n" not in buffer:
            msg, more, _flags, _addr = socket.recv_fds(control, 1 << 20, 4)
            if not msg:
                for fd in fds + more:
                    os.close(fd)
                return
            buffer += msg
            fds += more
        line, buffer = buffer.split(b"\n", 1)
        yield json.loads(line), fds
        fds = []


def zygote(control_fd: int, modules: list[str]) -> None:
    """Serve the parent: ``prefix`` (once, first: run the instructor's cells that precede every answer, so
    that each child starts from their state) and ``job`` (fork a child for one submission)."""
    control = socket.socket(fileno=control_fd)
    started = time.monotonic()
    failed = preload(modules)
    os.makedirs(os.environ.get("HOME", "/tmp/home"), exist_ok=True)  # IPython keeps its profile there
    shell, rules = make_shell(), no_fork_filter()
    global _GUARD
    _GUARD = Guard(shell)  # before any student code: what the hidden tests rely on, as it is now
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE 0: children of the same uid cannot ptrace us
    import random

    random.seed(0)
    numpy = sys.modules.get("numpy")
    if numpy is not None:
        numpy.random.seed(0)
    me = os.getpid()
    count, served = 0, False
    try:
        keep = snapshot()  # what the preloaded modules and the shell left in /tmp: every child starts from it
    except (OSError, RuntimeError):
        keep = {}
    _send(control, {"ready": True, "seconds": round(time.monotonic() - started, 3), "preload_failed": failed})
    for request, fds in _messages(control):
        op = request.get("op")
        if op == "prefix" and not served:
            limits = {"max_lines": int(request["max_lines"]), "max_chars": int(request["max_chars"])}
            cells = {}
            for index, source in request["cells"]:
                count += 1
                cells[index] = [count, run_cell(shell, source, count, limits)]
            threads = len(os.listdir("/proc/self/task"))
            try:
                keep = snapshot()
                problem = None if threads == 1 else f"the prefix left {threads - 1} threads running"
            except (OSError, RuntimeError) as err:
                problem = str(err)
            _GUARD.capture()  # the course's own cells ran: what they bound (checks, torch, ref...) is trusted
            _send(control, {"prefix": cells, "problem": problem})
            if problem:
                return
            continue
        if op != "job" or not fds:
            for fd in fds:
                os.close(fd)
            _send(control, {"error": f"unexpected request {op!r}"})
            continue
        served = True
        job_fd = fds[0]
        for fd in fds[1:]:
            os.close(fd)
        sweep(me, keep)
        gc.freeze()  # the child's collections skip what it inherits: faster, and no copy-on-write of every page
        pid = os.fork()
        if pid == 0:
            control.close()
            child_main(socket.socket(fileno=job_fd), request.get("limits", {}), shell, count, rules)
        os.close(job_fd)
        how, code = wait_child(pid, float(request["deadline"]))
        sweep(me, keep)
        _send(control, {"how": how, "code": code})


def main(argv=None) -> None:
    """Run the zygote (``runner.py --control-fd N --preload a,b``)."""
    parser = argparse.ArgumentParser(description="The grading sandbox's zygote (run by autograder.sandbox).")
    parser.add_argument("--control-fd", type=int, required=True)
    parser.add_argument("--preload", default="")
    args = parser.parse_args(argv)
    zygote(args.control_fd, [m for m in args.preload.split(",") if m])


if __name__ == "__main__":
    main()
