"""The hidden tests' integrity: what they rely on, recorded before any student code and compared around every
hidden part, which runs in a namespace of its own.

This is where the grader leans on torch's internals (:data:`UNGUARDED`); the honest-notebook test in
``tests/grading/test_sandbox.py`` is what notices when a torch release rebinds one more attribute.
"""

from __future__ import annotations

import builtins
import sys

from .capture import CellOutputs
from .protocol import BEGIN_HIDDEN, TAMPERED

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
#: Names Python adds to a class by itself: ``copyreg`` caches a class's ``__slotnames__`` the first time one of its
#: objects is copied or pickled (``copy.deepcopy(tensor)``, a correct answer may do it). Not a change an answer
#: makes to what the hidden tests call.
SELF_ADDED = ("__slotnames__",)

# Bound when this file is imported, before any student code: the guard uses these, not what an answer re-binds.
_exec, _compile, _getattr, _isinstance, _callable, _sorted = exec, compile, getattr, isinstance, callable, sorted
_gettrace, _getprofile, _FunctionType, _ModuleType = sys.gettrace, sys.getprofile, type(lambda: None), type(sys)
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
                known = frozenset(vars(klass)) | frozenset(UNGUARDED.get(label, ())) | frozenset(SELF_ADDED)
                classes.append((klass, known, label))
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


#: The zygote's guard (None until :func:`~.zygote.zygote` makes it; a child inherits it).
CURRENT: Guard | None = None


def split_hidden(source: str) -> tuple[str, str | None, int]:
    """``(visible, hidden, lines)``: a test cell's source before nbgrader's hidden-test marker, the rest (from the
    marker's line on, or None when there is none), and the number of lines before it."""
    at = source.find(BEGIN_HIDDEN)
    while at > 0 and source[at - 1] != "\n":  # only a marker at the start of a line
        at = source.find(BEGIN_HIDDEN, at + 1)
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


def run_hidden(shell, source: str, lines: int, count: int, cell: CellOutputs):
    """Run the hidden part of a test cell (``source``, which starts on line ``lines + 1`` of the cell) in its own
    namespace (:meth:`Guard.namespace`), after checking and before checking again that nothing it relies on has
    changed; a change is an error output of the cell (:func:`tampered_output`), and the hidden tests do not run.
    Returns the exception the hidden tests raised, if any.

    The hidden part leaves PyTorch's random state as it found it: the cells after it draw what they drew when the
    student ran the notebook, which has no hidden tests (a hidden test that seeds or draws would otherwise change the
    data of every later visible test, and the messages the student saw would not be the ones graded)."""
    guard = CURRENT
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
    torch = sys.modules.get("torch")  # a guarded module: an answer that re-bound its functions was reported above
    random_state = torch.get_rng_state() if torch is not None else None
    try:
        _exec(_compile("\n" * lines + source, filename, "exec", dont_inherit=True), ns)
    except BaseException as exc:  # noqa: BLE001 (a failed check, or whatever the answers raised)
        error = exc
    finally:
        if random_state is not None:
            torch.set_rng_state(random_state)
    if guard is not None:
        changed = guard.changes(ns, given)
        if changed:
            cell.error(tampered_output(changed, "found after this test's hidden part ran"))
    return error
