"""Mutants generated from each reference answer by operators, as mutation-testing tools make them (issue 40).

The hand-written mutants (``autograder/sections/<module>/mutants.toml``, :mod:`autograder.mutants`) follow their
author's attention; these follow the code. Each operator reads the solved stub cell (the stub filled from
``solutions/``, :func:`autograder.mutants.solved_cell`) as an AST and yields one :class:`Generated` mutant per place
it applies: the whole cell as a student with that mistake would hand it in, with the class of mistake it models
(:data:`autograder.mutants.CLASSES`). ``tests/grading/test_generated_mutants.py`` runs every one through the
section's hidden tests; one that they do not reject must be listed in the section's ``equivalents.toml`` with the
reason it cannot be told apart through the contract (:func:`equivalents`), or the hidden test strengthened.

A mutant's name is ``operator@where``; ``where`` names the function and the code the operator changed (not a line
number), so that an entry of ``equivalents.toml`` outlives edits elsewhere in the cell.

The operators, by the class of mistake each models:

- ``ignore_argument`` (pass-through): every use of a parameter replaced by its default, and by the value the visible
  test passes for it (an argument ignored whose usual value is the one the visible test uses);
- ``float32_dtype`` (dtype): every ``dtype=`` of a tensor factory forced to ``torch.float32``;
- ``other_dtype`` (dtype): every ``P.dtype`` read from parameter ``P`` read from another parameter instead;
- ``cast_dropped`` (dtype): every cast removed: ``.to(X.dtype)`` (the result left in the dtype it was computed in),
  ``.float()``/``.double()`` (a sum computed in the input's narrower dtype);
- ``cpu_device`` (device): every ``device=`` of a tensor factory replaced by ``"cpu"``;
- ``detach_input`` (gradient): every tensor entering ``torch.cat``/``torch.stack`` or an attention call, and every
  state returned beside the output, detached;
- ``in_place`` (state): the caller's tensor written into: ``a = a <op> b`` on a parameter written ``a <op>= b``,
  ``P.masked_fill(...)`` as ``P.masked_fill_(...)``, ``torch.where(c, x, P)`` copied into ``P``, a ``.clone()``
  dropped;
- ``swap_init`` (value): each initialiser of a parameter swapped among zeros (or ones), a unit ``randn`` and a small
  one (``0.02 * randn``), ``nn.init.normal_`` among the same;
- ``random_range`` (value): each bound of ``torch.randint`` and the size of ``torch.randperm`` shifted by one;
- ``fixed_count`` (value): ``torch.rand(shape) < p`` (each element drawn on its own) replaced by exactly
  ``round(p * n)`` per row: the same mean, another law;
- ``unguarded`` (edge): a numerically guarded formula replaced by its unguarded equal: softmax as exp over its sum,
  ``logsumexp`` and ``log_softmax`` through ``exp``, a temperature applied as a power of probabilities;
- ``train_mode`` (train-eval): a ``.eval()`` dropped, so the module predicts in training mode;
- ``no_grad_dropped`` (train-eval): a ``with torch.no_grad():`` block run with gradients.
"""

from __future__ import annotations

import ast
import copy
import functools
import tomllib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from autograder import mutants as known
from course import notebooks as nbs
from course.section import Section

__all__ = ["Generated", "Equivalent", "OPERATORS", "generate", "counts", "equivalents", "EquivalentError"]

#: Tensor factories whose ``dtype=``/``device=`` the dtype and device operators rewrite.
FACTORIES = frozenset(
    {"zeros", "ones", "full", "empty", "arange", "tensor", "randn", "rand", "randint", "linspace", "eye", "zeros_like"}
)
#: Attributes that only a tensor has: a parameter read through one of them is a tensor (for ``other_dtype``).
TENSOR_ATTRIBUTES = frozenset(
    {"dtype", "device", "shape", "size", "dim", "ndim", "numel", "masked_fill", "unsqueeze", "transpose", "reshape"}
)
#: Names of parameters that hold a sampling temperature (for ``unguarded``'s power form).
TEMPERATURES = frozenset({"temperature", "tau", "t"})
#: The longest code an operator's ``where`` quotes before it shortens it with an ellipsis.
QUOTE = 60


@dataclass(frozen=True)
class Generated:
    """One generated mutant of stub ``grade_id``: ``source`` is the whole mutated cell."""

    grade_id: str
    operator: str
    klass: str
    where: str  # where in the cell it applies: "forward: torch.cat((X, Z), dim=0), item 1"
    source: str

    @property
    def name(self) -> str:
        return f"{self.operator}@{self.where}"


# ---------------------------------------------------------------- AST helpers


def _torch_attr(node: ast.AST, names: frozenset[str] | set[str], owners=("torch",)) -> str | None:
    """``torch.<name>(...)``'s name when ``node`` is such a call and the name is in ``names``."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in names:
        value = node.func.value
        if isinstance(value, ast.Name) and value.id in owners:
            return node.func.attr
        if isinstance(value, ast.Attribute) and ast.unparse(value) in owners:
            return node.func.attr
    return None


def _functions(tree: ast.AST) -> Iterator[ast.FunctionDef]:
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef):
            yield node


def _params(function: ast.FunctionDef) -> list[str]:
    args = function.args
    return [a.arg for a in args.posonlyargs + args.args + args.kwonlyargs if a.arg != "self"]


def _all_params(tree: ast.AST) -> set[str]:
    return {name for function in _functions(tree) for name in _params(function)}


def _scopes(tree: ast.AST) -> dict[int, str]:
    """id(node) -> the qualified name of the innermost function or class around it (``Block.forward``)."""
    out: dict[int, str] = {}

    def visit(node, scope):
        for child in ast.iter_child_nodes(node):
            inner = scope
            if isinstance(child, ast.FunctionDef | ast.ClassDef):
                inner = f"{scope}.{child.name}" if scope else child.name
            out[id(child)] = inner
            visit(child, inner)

    visit(tree, "")
    return out


def _quote(node: ast.AST) -> str:
    text = " ".join(ast.unparse(node).split())
    return text if len(text) <= QUOTE else text[: QUOTE - 3] + "..."


def _replace(tree: ast.AST, old: ast.AST, new: ast.AST | list[ast.stmt]) -> None:
    """Put ``new`` (a node, or a list of statements in place of one) where ``old`` stands in ``tree``."""
    for parent in ast.walk(tree):
        for field_name, value in ast.iter_fields(parent):
            if value is old:
                setattr(parent, field_name, new)
                return
            if isinstance(value, list):
                for i, item in enumerate(value):
                    if item is old:
                        value[i : i + 1] = new if isinstance(new, list) else [new]
                        return


def _each_site(
    source: str,
    find: Callable[[ast.AST], list[ast.AST]],
    change: Callable[[ast.AST], ast.AST | list | None],
    label: Callable[[ast.AST], str] = _quote,
) -> Iterator[tuple[str, str]]:
    """One mutant per node that ``find`` returns: in a fresh tree each time, ``change(node)`` gives what replaces
    the node (the node itself, changed in place; another node; a list of statements), or None to skip it. Yields
    ``where`` (the enclosing function and ``label(node)``, read before the change) and the mutated cell."""
    for index in range(len(find(ast.parse(source)))):
        fresh = ast.parse(source)
        node = find(fresh)[index]
        scope = _scopes(fresh).get(id(node), "")
        where = f"{scope}: {label(node)}" if scope else label(node)
        new = change(node)
        if new is None:
            continue
        if new is not node:
            _replace(fresh, node, new)
        ast.fix_missing_locations(fresh)
        yield where, ast.unparse(fresh)


def _expr(text: str) -> ast.expr:
    return ast.parse(text, mode="eval").body


class _Substitute(ast.NodeTransformer):
    """Every read of the name ``name`` replaced by a copy of ``value``; ``used`` says whether there was one."""

    def __init__(self, name: str, value: ast.expr):
        self.name, self.value, self.used = name, value, False

    def visit_Name(self, node: ast.Name) -> ast.AST:
        if node.id == self.name and isinstance(node.ctx, ast.Load):
            self.used = True
            return copy.deepcopy(self.value)
        return node


# ---------------------------------------------------------------- the operators


def _visible_values(visible: str, name: str, params: list[str]) -> dict[str, ast.expr]:
    """The constant values that the visible test ``visible`` passes to ``name(...)``, by parameter name (a keyword,
    or a positional argument matched to ``params``); a parameter given two different values is left out."""
    found: dict[str, ast.expr] = {}
    clashing: set[str] = set()
    try:
        tree = ast.parse(visible)
    except SyntaxError:
        return {}
    for call in ast.walk(tree):
        if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id == name):
            continue
        pairs = [(params[i], a) for i, a in enumerate(call.args) if i < len(params) and not isinstance(a, ast.Starred)]
        pairs += [(k.arg, k.value) for k in call.keywords if k.arg]
        for param, value in pairs:
            try:
                ast.literal_eval(value)
            except ValueError:
                continue
            if param in found and ast.dump(found[param]) != ast.dump(value):
                clashing.add(param)
            found.setdefault(param, value)
    return {k: v for k, v in found.items() if k not in clashing}


def ignore_argument(source: str, visible: str = "") -> Iterator[tuple[str, str]]:
    """Each parameter: every use of it in its function's body replaced by its default, and by the value that the
    visible test ``visible`` passes for it when that differs (a stub's constructor or function called by name)."""
    tree = ast.parse(source)
    names = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef | ast.ClassDef)}
    for f_index, function in enumerate(_functions(tree)):
        args = function.args
        positional = args.posonlyargs + args.args
        values: dict[str, list[tuple[str, ast.expr]]] = {}
        for a, d in zip(positional[len(positional) - len(args.defaults) :], args.defaults):
            values.setdefault(a.arg, []).append(("default", d))
        for a, d in zip(args.kwonlyargs, args.kw_defaults):
            if d is not None:
                values.setdefault(a.arg, []).append(("default", d))
        # The visible test's values: for a top-level function under its own name, for __init__ under its class's.
        owner = function.name if function.name in names else None
        if function.name == "__init__":
            owner = next((c for c, n in names.items() if isinstance(n, ast.ClassDef) and function in n.body), None)
        if owner:
            for param, value in _visible_values(visible, owner, _params(function)).items():
                if all(ast.dump(value) != ast.dump(d) for _, d in values.get(param, [])):
                    values.setdefault(param, []).append(("visible", value))
        for param, choices in values.items():
            for kind, value in choices:
                fresh = ast.parse(source)
                target = list(_functions(fresh))[f_index]
                substitute = _Substitute(param, value)
                target.body = [substitute.visit(statement) for statement in target.body]
                if substitute.used:
                    ast.fix_missing_locations(fresh)
                    how = "" if kind == "default" else f"={ast.unparse(value)} (the visible test's)"
                    yield f"{function.name}({param}{how})", ast.unparse(fresh)


def _keyword_sites(keyword: str) -> Callable[[ast.AST], list[ast.AST]]:
    def find(tree):
        return [
            kw for node in ast.walk(tree) if _torch_attr(node, FACTORIES) for kw in node.keywords if kw.arg == keyword
        ]

    return find


def _keyword_label(kw: ast.keyword) -> str:
    return f"{kw.arg}={_quote(kw.value)}"


def float32_dtype(source: str) -> Iterator[tuple[str, str]]:
    """Each ``dtype=`` of a tensor factory forced to float32 (where it is not float32 already, or an integer or
    boolean dtype, which forcing float32 would break in another way)."""

    def change(kw):
        if isinstance(kw.value, ast.Attribute) and kw.value.attr in ("float32", "bool", "long", "int64"):
            return None
        kw.value = _expr("torch.float32")
        return kw

    yield from _each_site(source, _keyword_sites("dtype"), change, _keyword_label)


def other_dtype(source: str) -> Iterator[tuple[str, str]]:
    """Each ``P.dtype`` read from a parameter ``P``, read from each other parameter that the cell uses as a tensor
    (reads its ``shape``, ``device``, ...) instead: a result built with another input's dtype."""
    tree = ast.parse(source)
    tensors = sorted(
        {
            n.value.id
            for n in ast.walk(tree)
            if isinstance(n, ast.Attribute) and n.attr in TENSOR_ATTRIBUTES and isinstance(n.value, ast.Name)
        }
        & _all_params(tree)
    )

    def find(t):
        return [
            n
            for n in ast.walk(t)
            if isinstance(n, ast.Attribute) and n.attr == "dtype" and isinstance(n.value, ast.Name)
            if n.value.id in tensors
        ]

    for other in tensors:

        def change(node, other=other):
            if node.value.id == other:
                return None
            node.value = ast.Name(other, ast.Load())
            return node

        for where, text in _each_site(source, find, change):
            yield f"{where} as {other}.dtype", text


def cast_dropped(source: str) -> Iterator[tuple[str, str]]:
    """Each cast removed: ``E.to(X.dtype)`` (or ``.to(dtype=...)``, ``.type_as(X)``) left as ``E``, a result that
    keeps the dtype it was computed in; ``X.float()`` or ``X.double()`` left as ``X``, a sum or a statistic computed
    in the input's narrower dtype."""

    def find(tree):
        out = []
        for n in ast.walk(tree):
            if not (isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)):
                continue
            name, args = n.func.attr, n.args
            to_dtype = name == "to" and (
                (len(args) == 1 and isinstance(args[0], ast.Attribute) and args[0].attr == "dtype")
                or (not args and any(k.arg == "dtype" for k in n.keywords))
            )
            if to_dtype or name == "type_as" or (name in ("float", "double") and not args and not n.keywords):
                out.append(n)
        return out

    yield from _each_site(source, find, lambda call: call.func.value)


def cpu_device(source: str) -> Iterator[tuple[str, str]]:
    """Each ``device=`` of a tensor factory replaced by ``"cpu"``."""

    def change(kw):
        if isinstance(kw.value, ast.Constant) and kw.value.value == "cpu":
            return None
        kw.value = ast.Constant("cpu")
        return kw

    yield from _each_site(source, _keyword_sites("device"), change, _keyword_label)


def _is_attention_call(node: ast.AST) -> bool:
    """A call of an attention function or module (``self.attention(...)``, ``grouped_query_attention(...)``); not a
    constructor (a capitalised name), which takes sizes."""
    if not isinstance(node, ast.Call):
        return False
    name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
    return "attention" in name.lower() and not name[:1].isupper()


#: Calls whose result holds integers or booleans, never a gradient.
INTEGRAL_CALLS = frozenset({"arange", "randperm", "randint", "tensor", "diff", "where", "cat", "stack", "argsort"})
INTEGRAL_METHODS = frozenset({"sort", "expand", "long", "bool", "int", "argsort", "reshape", "view", "flip"})


def _integral_names(tree: ast.AST) -> set[str]:
    """Names that the cell only ever assigns integer or boolean tensors to (masks, indices, counts), found by a
    fixed point over its assignments: detaching one changes nothing, so ``detach_input`` skips them."""
    assigned: dict[str, list[ast.expr]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    assigned.setdefault(target.id, []).append(node.value)
        elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
            assigned.setdefault(node.target.id, []).append(node.value)
    known: set[str] = set()
    while True:
        more = {n for n, values in assigned.items() if n not in known and all(_integral(v, known) for v in values)}
        if not more:
            return known
        known |= more


def _integral(node: ast.AST, names: set[str]) -> bool:
    """Whether ``node`` surely holds integers or booleans (a mask, an index), given the integral ``names``."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, bool | int)
    if isinstance(node, ast.Name):
        return node.id in names or any(word in node.id for word in ("valid_len", "mask", "lens"))
    if isinstance(node, ast.Compare | ast.BoolOp):
        return True
    if isinstance(node, ast.UnaryOp):
        return isinstance(node.op, ast.Not | ast.Invert) or _integral(node.operand, names)
    if isinstance(node, ast.BinOp):
        if isinstance(node.op, ast.BitAnd | ast.BitOr | ast.BitXor):
            return True
        return isinstance(node.op, ast.Add | ast.Sub | ast.Mult | ast.FloorDiv | ast.Mod) and all(
            _integral(side, names) for side in (node.left, node.right)
        )
    if isinstance(node, ast.Subscript):
        return _integral(node.value, names)
    if isinstance(node, ast.Attribute):
        return node.attr in ("values", "indices") and _integral(node.value, names) or node.attr == "indices"
    if isinstance(node, ast.Call):
        if isinstance(node.func, ast.Name) and node.func.id in ("round", "int", "len"):
            return True
        if isinstance(node.func, ast.Name) and node.func.id in ("min", "max"):
            return any(_integral(a, names) for a in node.args)
        if _torch_attr(node, FACTORIES) and not any(k.arg == "requires_grad" for k in node.keywords):
            return True  # a new tensor without requires_grad: a leaf that no gradient reaches
        dtype = next((k.value for k in node.keywords if k.arg == "dtype"), None)
        if isinstance(dtype, ast.Attribute) and dtype.attr in ("long", "int64", "int32", "bool"):
            return True
        if _torch_attr(node, {"arange", "randperm", "randint"}):
            return dtype is None or _integral(dtype, names)
        if _torch_attr(node, {"tensor"}):
            return bool(node.args) and _all_integral_literal(node.args[0], names)
        if _torch_attr(node, {"diff", "argsort"}):
            return True
        if _torch_attr(node, {"cat", "stack"}) and node.args and isinstance(node.args[0], ast.Tuple | ast.List):
            return all(_integral(e, names) for e in node.args[0].elts)
        if isinstance(node.func, ast.Attribute) and node.func.attr in INTEGRAL_METHODS:
            return node.func.attr in ("long", "bool", "int", "argsort") or _integral(node.func.value, names)
    return False


def _all_integral_literal(node: ast.AST, names: set[str]) -> bool:
    if isinstance(node, ast.List | ast.Tuple):
        return all(_integral(e, names) for e in node.elts)
    return False


def _state_returning(function: ast.FunctionDef) -> bool:
    """Whether the second and later elements that ``function`` returns are a state that carries on (a ``forward``,
    or a function that receives a state or cache)."""
    return function.name == "forward" or any(
        word in p for p in _params(function) for word in ("state", "cache", "past")
    )


def detach_input(source: str) -> Iterator[tuple[str, str]]:
    """Each tensor given to ``torch.cat``/``torch.stack`` (an element of its list) or to an attention call (a
    positional argument that is not a constant), and each state returned beside the output (an element after the
    first of a tuple that a ``forward`` or a function given a state returns), detached. Tensors that surely hold
    integers or booleans (masks, indices: :func:`_integral`) are skipped: they carry no gradient to cut."""

    def find(tree):
        integral = _integral_names(tree)
        out = []
        for function in _functions(tree):
            for node in ast.walk(function):
                if _torch_attr(node, {"cat", "stack"}) and node.args and isinstance(node.args[0], ast.Tuple | ast.List):
                    out += [(e, f"{_quote(e)} into torch.{node.func.attr}") for e in node.args[0].elts]
                elif _is_attention_call(node) and function.name != "__init__":
                    out += [(a, f"{_quote(a)} into {_quote(node.func)}") for a in node.args]
                elif isinstance(node, ast.Return) and isinstance(node.value, ast.Tuple) and _state_returning(function):
                    out += [(e, f"{_quote(e)} returned") for e in node.value.elts[1:]]
        seen, unique = set(), []
        for element, label in out:
            if id(element) not in seen and not _constant(element) and not _integral(element, integral):
                seen.add(id(element))
                unique.append((element, label))
        return unique

    for index in range(len(find(ast.parse(source)))):
        fresh = ast.parse(source)
        node, label = find(fresh)[index]
        if isinstance(node, ast.List | ast.Tuple | ast.Starred | ast.ListComp | ast.GeneratorExp):
            continue  # a list of states: detaching it is not a tensor method
        scope = _scopes(fresh).get(id(node), "")
        _replace(fresh, node, ast.Call(ast.Attribute(node, "detach", ast.Load()), [], []))
        ast.fix_missing_locations(fresh)
        yield (f"{scope}: {label}" if scope else label), ast.unparse(fresh)


def _constant(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) or (isinstance(node, ast.Name) and node.id in ("None", "True", "False"))


def in_place(source: str) -> Iterator[tuple[str, str]]:
    """The caller's tensor written into: ``a = a <op> b`` on a parameter ``a`` written ``a <op>= b``;
    ``P.masked_fill(...)`` on a parameter written ``P.masked_fill_(...)``; ``torch.where(c, x, P)`` copied into
    ``P`` (``P.copy_(torch.where(...))``); each ``.clone()`` dropped."""
    tree = ast.parse(source)
    params = _all_params(tree)

    def is_param(node):
        return isinstance(node, ast.Name) and node.id in params

    def find(t):
        out = []
        for n in ast.walk(t):
            if (
                isinstance(n, ast.Assign)
                and len(n.targets) == 1
                and is_param(n.targets[0])
                and isinstance(n.value, ast.BinOp)
                and isinstance(n.value.op, ast.Add | ast.Sub | ast.Mult | ast.Div)
                and is_param(n.value.left)
                and n.value.left.id == n.targets[0].id
            ):
                out.append(n)
            elif isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute):
                if n.func.attr == "masked_fill" and is_param(n.func.value):
                    out.append(n)
                elif n.func.attr == "clone" and not n.args:
                    out.append(n)
                elif _torch_attr(n, {"where"}) and len(n.args) == 3 and is_param(n.args[2]):
                    out.append(n)
        return out

    def change(node):
        if isinstance(node, ast.Assign):
            augmented = ast.AugAssign(ast.Name(node.targets[0].id, ast.Store()), node.value.op, node.value.right)
            return ast.copy_location(augmented, node)
        if node.func.attr == "masked_fill":
            node.func.attr = "masked_fill_"
            return node
        if node.func.attr == "clone":
            return node.func.value
        target = node.args[2].id
        return ast.Call(ast.Attribute(ast.Name(target, ast.Load()), "copy_", ast.Load()), [node], [])

    yield from _each_site(source, find, change)


def _initialisers(tree):
    """Initialisers of parameters: the tensor inside ``nn.Parameter(...)`` and ``nn.init.<name>_(...)`` calls."""
    out = []
    for n in ast.walk(tree):
        if (
            isinstance(n, ast.Call)
            and isinstance(n.func, ast.Attribute)
            and n.func.attr == "Parameter"
            and n.args
            and _torch_attr(n.args[0], {"zeros", "ones", "randn", "rand", "empty"})
        ):
            out.append(n.args[0])
        elif _torch_attr(n, {"normal_", "zeros_", "ones_", "trunc_normal_"}, owners=("nn.init", "init")) and n.args:
            out.append(n)
    return out


def swap_init(source: str) -> Iterator[tuple[str, str]]:
    """Each initialiser of a parameter swapped for each of the others: zeros (ones), a unit ``randn``, a small
    ``0.02 * randn`` (for ``nn.init``: ``zeros_``, ``normal_`` with std 1, with std 0.02)."""
    kinds = ("zeros", "randn", "small randn")

    def kind_of(node):
        name = node.func.attr
        if name in ("zeros", "ones", "zeros_", "ones_", "empty"):
            return "zeros"
        std = next((k.value for k in node.keywords if k.arg == "std"), node.args[2] if len(node.args) > 2 else None)
        if name in ("normal_", "trunc_normal_"):
            return "randn" if std is None or (isinstance(std, ast.Constant) and std.value == 1) else "small randn"
        return "randn"

    for swap in kinds:

        def change(node, swap=swap):
            if kind_of(node) == swap:
                return None
            if node.func.attr.endswith("_"):  # nn.init.<name>_(tensor, ...)
                tensor = ast.unparse(node.args[0])
                init = ast.unparse(node.func.value)
                text = {
                    "zeros": f"{init}.zeros_({tensor})",
                    "randn": f"{init}.normal_({tensor}, mean=0.0, std=1.0)",
                    "small randn": f"{init}.normal_({tensor}, mean=0.0, std=0.02)",
                }[swap]
                return _expr(text)
            size = ", ".join(ast.unparse(a) for a in node.args)
            keywords = "".join(f", {ast.unparse(k)}" for k in node.keywords)
            text = {
                "zeros": f"torch.zeros({size}{keywords})",
                "randn": f"torch.randn({size}{keywords})",
                "small randn": f"0.02 * torch.randn({size}{keywords})",
            }[swap]
            return _expr(text)

        for where, text in _each_site(source, _initialisers, change):
            yield f"{where} as {swap}", text


def random_range(source: str) -> Iterator[tuple[str, str]]:
    """Each bound of ``torch.randint(low, high, ...)`` and the size of ``torch.randperm(n)``, one lower and one
    higher: an off-by-one in a random range."""

    def find(tree):
        out = []
        for n in ast.walk(tree):
            if _torch_attr(n, {"randint"}) and len(n.args) >= 2 and not isinstance(n.args[1], ast.Tuple | ast.List):
                out += [n.args[0], n.args[1]]
            elif _torch_attr(n, {"randint"}) and n.args:
                out.append(n.args[0])  # randint(high, size)
            elif _torch_attr(n, {"randperm"}) and n.args:
                out.append(n.args[0])
        return out

    for delta in (-1, 1):

        def change(node, delta=delta):
            sign = "+" if delta > 0 else "-"
            return _expr(f"({ast.unparse(node)}) {sign} 1")

        for where, text in _each_site(source, find, change, lambda node: f"({_quote(node)})"):
            yield f"{where} {'+' if delta > 0 else '-'} 1", text


def fixed_count(source: str) -> Iterator[tuple[str, str]]:
    """``torch.rand(shape, ...) < p``, each element kept with probability p on its own, replaced by a mask with
    exactly ``round(p * n)`` elements per row (n the last dimension): the same mean, another law."""

    def find(tree):
        return [
            n
            for n in ast.walk(tree)
            if isinstance(n, ast.Compare)
            and len(n.ops) == 1
            and isinstance(n.ops[0], ast.Lt)
            and _torch_attr(n.left, {"rand"})
            and isinstance(n.comparators[0], ast.Constant)
        ]

    def change(node):
        draw = ast.unparse(node.left)
        p = ast.unparse(node.comparators[0])
        return _expr(
            f"({draw}.argsort(dim=-1).argsort(dim=-1) < round({p} * {draw}.shape[-1]))"  # the ranks of a draw
        )

    yield from _each_site(source, find, change)


def unguarded(source: str) -> Iterator[tuple[str, str]]:
    """A numerically guarded formula replaced by its unguarded equal: ``torch.softmax(x, dim=d)`` as
    ``exp(x) / exp(x).sum(d)``; ``torch.logsumexp(x, d)`` as ``log(exp(x).sum(d))``; ``log_softmax`` as the log of a
    softmax; a temperature ``x / t`` as the probabilities raised to ``1 / t`` (``log(softmax(x) ** (1 / t))``, which
    the softmax after it normalises)."""

    def dim_of(call):
        dim = next((ast.unparse(k.value) for k in call.keywords if k.arg == "dim"), None)
        if dim is None and len(call.args) > 1:
            dim = ast.unparse(call.args[1])
        return dim

    def find(tree):
        return [
            n
            for n in ast.walk(tree)
            if (
                _torch_attr(n, {"softmax", "logsumexp", "log_softmax"}, owners=("torch", "F", "nn.functional"))
                and n.args
            )
            or (
                isinstance(n, ast.BinOp)
                and isinstance(n.op, ast.Div)
                and isinstance(n.right, ast.Name)
                and n.right.id in TEMPERATURES
            )
        ]

    def change(node):
        if isinstance(node, ast.BinOp):
            x, t = ast.unparse(node.left), node.right.id
            return _expr(f"torch.log(torch.softmax({x}, dim=-1) ** (1 / {t}))")
        x, dim = ast.unparse(node.args[0]), dim_of(node)
        if dim is None:
            return None
        text = {
            "softmax": f"(torch.exp({x}) / torch.exp({x}).sum(dim={dim}, keepdim=True))",
            "logsumexp": f"torch.log(torch.exp({x}).sum(dim={dim}))",
            "log_softmax": f"torch.log(torch.exp({x}) / torch.exp({x}).sum(dim={dim}, keepdim=True))",
        }[node.func.attr]
        return _expr(text)

    yield from _each_site(source, find, change)


def train_mode(source: str) -> Iterator[tuple[str, str]]:
    """Each ``M.eval()`` statement dropped: the module predicts in training mode (dropout on)."""

    def find(tree):
        return [
            n
            for n in ast.walk(tree)
            if isinstance(n, ast.Expr)
            and isinstance(n.value, ast.Call)
            and isinstance(n.value.func, ast.Attribute)
            and n.value.func.attr == "eval"
            and not n.value.args
        ]

    yield from _each_site(source, find, lambda statement: [ast.Pass()])


def no_grad_dropped(source: str) -> Iterator[tuple[str, str]]:
    """A ``with torch.no_grad():`` block whose body runs with gradients (the ``with`` removed)."""

    def find(tree):
        return [
            n
            for n in ast.walk(tree)
            if isinstance(n, ast.With) and any(_torch_attr(i.context_expr, {"no_grad"}) for i in n.items)
        ]

    yield from _each_site(source, find, lambda with_block: with_block.body, lambda node: "with torch.no_grad()")


#: name -> (the class of mistake, the operator).
OPERATORS: dict[str, tuple[str, Callable[..., Iterator[tuple[str, str]]]]] = {
    "ignore_argument": ("pass-through", ignore_argument),
    "float32_dtype": ("dtype", float32_dtype),
    "other_dtype": ("dtype", other_dtype),
    "cast_dropped": ("dtype", cast_dropped),
    "cpu_device": ("device", cpu_device),
    "detach_input": ("gradient", detach_input),
    "in_place": ("state", in_place),
    "swap_init": ("value", swap_init),
    "random_range": ("value", random_range),
    "fixed_count": ("value", fixed_count),
    "unguarded": ("edge", unguarded),
    "train_mode": ("train-eval", train_mode),
    "no_grad_dropped": ("train-eval", no_grad_dropped),
}


def _visible_test(section: Section, grade_id: str) -> str:
    """The source of the visible test cell of stub ``grade_id`` ("" when there is none)."""
    for cell in section.read().cells:
        if nbs.role(cell) == "test" and nbs.grade_id(cell) == f"test_{grade_id}":
            return cell.source
    return ""


def generate(section: Section | str, operators=None) -> list[Generated]:
    """Every generated mutant of every stub of ``section``, by ``operators`` (names; all when None), in the order of
    the stubs, then of the operators, then of the places. A mutant equal to the solved cell (once unparsed) is
    dropped (the operator changed nothing that matters to Python), and so is one that Python warns cannot work; of
    two equal mutants, the first is kept. A ``where`` that repeats within a stub and operator gets ``#2``, ``#3``."""
    out = []
    section = known.assemble.as_section(section)
    for grade_id in known.stub_cells(section):
        solved = known.solved_cell(section, grade_id)
        seen = {ast.unparse(ast.parse(solved))}
        for name in operators or OPERATORS:
            klass, operator = OPERATORS[name]
            made = operator(solved, _visible_test(section, grade_id)) if name == "ignore_argument" else operator(solved)
            wheres: dict[str, int] = {}
            for where, text in made:
                wheres[where] = wheres.get(where, 0) + 1
                if wheres[where] > 1:
                    where = f"{where} #{wheres[where]}"
                if text not in seen and _sensible(text):
                    seen.add(text)
                    out.append(Generated(grade_id, name, klass, where, text))
    return out


def _sensible(text: str) -> bool:
    """Whether ``text`` compiles without Python's own warning that it cannot work (``None[:, None]``, the use of a
    ``None`` default that no student would write): such a mutant tests nothing."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error", SyntaxWarning)
        try:
            compile(text, "<mutant>", "exec")
        except (SyntaxWarning, SyntaxError):
            return False
    return True


def counts(generated: list[Generated]) -> dict[str, int]:
    """The number of generated mutants per operator."""
    out: dict[str, int] = {name: 0 for name in OPERATORS}
    for mutant in generated:
        out[mutant.operator] += 1
    return out


# ---------------------------------------------------------------- equivalent mutants


class EquivalentError(ValueError):
    """An ``equivalents.toml`` that cannot be read: the message names the file, the entry and the fix."""


@dataclass(frozen=True)
class Equivalent:
    """A generated mutant that the contract cannot tell from the answer: ``stub``'s mutant ``mutant`` (its name,
    ``operator@where``), and why."""

    stub: str
    mutant: str
    reason: str


EQUIVALENT_KEYS = {
    "stub": "the grade_id of the stub",
    "mutant": "the generated mutant's name, operator@where, as the suite's failure prints it",
    "reason": "why no test through the contract can tell it from a right answer, in a sentence",
}


def equivalents_path(section: Section) -> Path:
    return section.grading_dir / "equivalents.toml"


def equivalents(section: Section | str) -> list[Equivalent]:
    """The section's generated mutants listed as equivalent (``autograder/sections/<module>/equivalents.toml``, a
    list of ``[[equivalent]]`` tables with the keys of :data:`EQUIVALENT_KEYS`); none when there is no file."""
    sec = known.assemble.as_section(section)
    path = equivalents_path(sec)
    if not path.exists():
        return []
    return list(_equivalents(path, path.stat().st_mtime))


@functools.lru_cache(maxsize=32)
def _equivalents(path: Path, mtime: float) -> tuple[Equivalent, ...]:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as err:
        raise EquivalentError(f"{path} is not valid TOML: {err}") from None
    unknown = set(data) - {"equivalent"}
    if unknown:
        raise EquivalentError(f"{path}: unknown tables {sorted(unknown)}; write each entry as [[equivalent]]")
    out = []
    for number, raw in enumerate(data.get("equivalent", []), 1):
        missing = [k for k in EQUIVALENT_KEYS if not str(raw.get(k, "")).strip()]
        extra = sorted(set(raw) - set(EQUIVALENT_KEYS))
        if missing or extra:
            keys = "; ".join(f"{k}: {v}" for k, v in EQUIVALENT_KEYS.items())
            raise EquivalentError(
                f"{path}, entry {number}: "
                + (f"missing {missing}" if missing else "")
                + (" and " if missing and extra else "")
                + (f"unknown keys {extra}" if extra else "")
                + f". Each [[equivalent]] has exactly these keys: {keys}"
            )
        out.append(Equivalent(raw["stub"], raw["mutant"], " ".join(raw["reason"].split())))
    names = [(e.stub, e.mutant) for e in out]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise EquivalentError(f"{path}: listed twice: {twice}; keep one entry for each mutant")
    return tuple(out)
