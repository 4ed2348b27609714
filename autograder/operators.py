"""Mutants generated from each reference answer by operators, as mutation-testing tools make them (issue 40).

The hand-written mutants (``autograder/sections/<module>/mutants.toml``, :mod:`autograder.mutants`) follow their
author's attention; these follow the code. Each operator reads the solved stub cell (the stub filled from
``solutions/``, :func:`autograder.mutants.solved_cell`) as an AST and yields one :class:`Generated` mutant per place
it applies: the whole cell as a student with that mistake would hand it in, with the class of mistake it models
(:data:`autograder.mutants.CLASSES`). The suite runs them through the section's hidden tests as it runs the
hand-written ones; a generated mutant that the hidden tests do not reject must be listed as equivalent, with its
reason, or the tests strengthened.

Operators of this first set (the classes a second, held-out class of answers got past the hand-written list):

- ``ignore_argument`` (pass-through): every use of a parameter with a default replaced by that default;
- ``float32_dtype`` (dtype): every ``dtype=...`` of a tensor factory forced to ``torch.float32``;
- ``cpu_device`` (device): every ``device=...`` of a tensor factory replaced by ``"cpu"``;
- ``detach_input`` (gradient): every tensor entering ``torch.cat``/``torch.stack`` detached;
- ``in_place`` (state): ``a = a + b`` (and ``-``, ``*``, ``/``) on a parameter written as ``a += b``, which writes
  into the caller's tensor;
- ``swap_init`` (value): a parameter's ``torch.zeros``/``torch.ones`` initialiser swapped for a small random one, and
  a random one for zeros;
- ``unguarded`` (edge): a softmax written as exp over its sum, without the maximum subtracted;
- ``no_grad_dropped`` (train-eval): a ``with torch.no_grad():`` block run with gradients.
"""

from __future__ import annotations

import ast
import copy
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from autograder import mutants as known
from course.section import Section

__all__ = ["Generated", "OPERATORS", "generate", "counts"]

#: Tensor factories whose ``dtype=``/``device=`` the dtype and device operators rewrite.
FACTORIES = frozenset(
    {"zeros", "ones", "full", "empty", "arange", "tensor", "randn", "rand", "randint", "linspace", "eye", "zeros_like"}
)


@dataclass(frozen=True)
class Generated:
    """One generated mutant of stub ``grade_id``: ``source`` is the whole mutated cell."""

    grade_id: str
    operator: str
    klass: str
    where: str  # where in the cell it applies: "line 12, argument eps"
    source: str

    @property
    def name(self) -> str:
        return f"{self.operator}@{self.where}"


def _torch_attr(node: ast.AST, names: frozenset[str] | set[str]) -> str | None:
    """``torch.<name>(...)``'s name when ``node`` is such a call and the name is in ``names``."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in names:
        value = node.func.value
        if isinstance(value, ast.Name) and value.id == "torch":
            return node.func.attr
    return None


def _functions(tree: ast.Module) -> Iterator[ast.FunctionDef]:
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef):
            yield node


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
    source: str, find: Callable[[ast.AST], list[ast.AST]], change: Callable[[ast.AST], ast.AST | list | None]
) -> Iterator[tuple[ast.AST, str]]:
    """One mutant per node that ``find`` returns: in a fresh tree each time, ``change(node)`` gives what replaces
    the node (the node itself, changed in place; another node; a list of statements), or None to skip it. Yields the
    node (for its line) and the mutated cell."""
    for index in range(len(find(ast.parse(source)))):
        fresh = ast.parse(source)
        node = find(fresh)[index]
        new = change(node)
        if new is None:
            continue
        if new is not node:
            _replace(fresh, node, new)
        ast.fix_missing_locations(fresh)
        yield node, ast.unparse(fresh)


def _at(node: ast.AST) -> str:
    return f"line {node.lineno}, column {node.col_offset}"


class _Substitute(ast.NodeTransformer):
    """Every read of the name ``name`` replaced by a copy of ``value``; ``used`` says whether there was one."""

    def __init__(self, name: str, value: ast.expr):
        self.name, self.value, self.used = name, value, False

    def visit_Name(self, node: ast.Name) -> ast.AST:
        if node.id == self.name and isinstance(node.ctx, ast.Load):
            self.used = True
            return copy.deepcopy(self.value)
        return node


def ignore_argument(source: str) -> Iterator[tuple[str, str]]:
    """Each parameter with a default: every use of it in its function's body replaced by the default."""
    tree = ast.parse(source)
    for f_index, function in enumerate(_functions(tree)):
        args = function.args
        positional = args.posonlyargs + args.args
        pairs = list(zip(positional[len(positional) - len(args.defaults) :], args.defaults))
        pairs += [(a, d) for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None]
        for arg, default in pairs:
            fresh = ast.parse(source)
            target = list(_functions(fresh))[f_index]
            substitute = _Substitute(arg.arg, default)
            target.body = [substitute.visit(statement) for statement in target.body]
            if substitute.used:
                ast.fix_missing_locations(fresh)
                yield f"{function.name}({arg.arg})", ast.unparse(fresh)


def _keyword_sites(keyword: str) -> Callable[[ast.AST], list[ast.AST]]:
    def find(tree):
        return [
            kw for node in ast.walk(tree) if _torch_attr(node, FACTORIES) for kw in node.keywords if kw.arg == keyword
        ]

    return find


def float32_dtype(source: str) -> Iterator[tuple[str, str]]:
    """Each ``dtype=`` of a tensor factory forced to float32 (where it is not float32 already, or an integer or
    boolean dtype, which forcing float32 would break in another way)."""

    def change(kw):
        if isinstance(kw.value, ast.Attribute) and kw.value.attr in ("float32", "bool", "long", "int64"):
            return None
        kw.value = ast.parse("torch.float32", mode="eval").body
        return kw

    for node, text in _each_site(source, _keyword_sites("dtype"), change):
        yield f"line {node.value.lineno}", text


def cpu_device(source: str) -> Iterator[tuple[str, str]]:
    """Each ``device=`` of a tensor factory replaced by ``"cpu"``."""

    def change(kw):
        if isinstance(kw.value, ast.Constant) and kw.value.value == "cpu":
            return None
        kw.value = ast.Constant("cpu")
        return kw

    for node, text in _each_site(source, _keyword_sites("device"), change):
        yield f"line {node.value.lineno}", text


def detach_input(source: str) -> Iterator[tuple[str, str]]:
    """Each element of a list or tuple given to ``torch.cat``/``torch.stack``, detached."""

    def find(tree):
        return [
            element
            for node in ast.walk(tree)
            if _torch_attr(node, {"cat", "stack"}) and node.args and isinstance(node.args[0], ast.Tuple | ast.List)
            for element in node.args[0].elts
        ]

    def change(element):
        return ast.Call(ast.Attribute(element, "detach", ast.Load()), [], [])

    for node, text in _each_site(source, find, change):
        yield _at(node), text


def in_place(source: str) -> Iterator[tuple[str, str]]:
    """``a = a <op> b`` on a parameter ``a`` (not ``self``) written ``a <op>= b``: the caller's tensor changes."""
    tree = ast.parse(source)
    params = {a.arg for f in _functions(tree) for a in f.args.args + f.args.kwonlyargs if a.arg != "self"}

    def find(t):
        return [
            n
            for n in ast.walk(t)
            if isinstance(n, ast.Assign)
            and len(n.targets) == 1
            and isinstance(n.targets[0], ast.Name)
            and n.targets[0].id in params
            and isinstance(n.value, ast.BinOp)
            and isinstance(n.value.op, ast.Add | ast.Sub | ast.Mult | ast.Div)
            and isinstance(n.value.left, ast.Name)
            and n.value.left.id == n.targets[0].id
        ]

    def change(node):
        augmented = ast.AugAssign(ast.Name(node.targets[0].id, ast.Store()), node.value.op, node.value.right)
        return ast.copy_location(augmented, node)

    for node, text in _each_site(source, find, change):
        yield f"line {node.lineno}, {node.targets[0].id}", text


def swap_init(source: str) -> Iterator[tuple[str, str]]:
    """The tensor inside ``nn.Parameter(...)``: zeros or ones become a small random draw, a random draw zeros."""

    def find(tree):
        return [
            n.args[0]
            for n in ast.walk(tree)
            if isinstance(n, ast.Call)
            and isinstance(n.func, ast.Attribute)
            and n.func.attr == "Parameter"
            and n.args
            and _torch_attr(n.args[0], {"zeros", "ones", "randn", "rand", "empty"})
        ]

    def change(call):
        call.func.attr = "zeros" if call.func.attr in ("randn", "rand", "empty") else "randn"
        return call

    for node, text in _each_site(source, find, change):
        yield f"line {node.lineno}", text


def unguarded(source: str) -> Iterator[tuple[str, str]]:
    """``torch.softmax(x, dim=d)`` written ``torch.exp(x) / torch.exp(x).sum(dim=d, keepdim=True)``: the same number
    in exact arithmetic, overflow for large logits."""

    def find(tree):
        return [n for n in ast.walk(tree) if _torch_attr(n, {"softmax"}) and n.args]

    def change(call):
        x = ast.unparse(call.args[0])
        dim = next((ast.unparse(k.value) for k in call.keywords if k.arg == "dim"), None)
        if dim is None and len(call.args) > 1:
            dim = ast.unparse(call.args[1])
        if dim is None:
            return None
        return ast.parse(f"(torch.exp({x}) / torch.exp({x}).sum(dim={dim}, keepdim=True))", mode="eval").body

    for node, text in _each_site(source, find, change):
        yield f"line {node.lineno}", text


def no_grad_dropped(source: str) -> Iterator[tuple[str, str]]:
    """A ``with torch.no_grad():`` block whose body runs with gradients (the ``with`` removed)."""

    def find(tree):
        return [
            n
            for n in ast.walk(tree)
            if isinstance(n, ast.With) and any(_torch_attr(i.context_expr, {"no_grad"}) for i in n.items)
        ]

    for node, text in _each_site(source, find, lambda with_block: with_block.body):
        yield f"line {node.lineno}", text


#: name -> (the class of mistake, the operator).
OPERATORS: dict[str, tuple[str, Callable[[str], Iterator[tuple[str, str]]]]] = {
    "ignore_argument": ("pass-through", ignore_argument),
    "float32_dtype": ("dtype", float32_dtype),
    "cpu_device": ("device", cpu_device),
    "detach_input": ("gradient", detach_input),
    "in_place": ("state", in_place),
    "swap_init": ("value", swap_init),
    "unguarded": ("edge", unguarded),
    "no_grad_dropped": ("train-eval", no_grad_dropped),
}


def generate(section: Section | str, operators=None) -> list[Generated]:
    """Every generated mutant of every stub of ``section``, by ``operators`` (names; all when None), in the order of
    the stubs, then of the operators, then of the places. A mutant equal to the solved cell (once unparsed) is
    dropped (the operator changed nothing that matters to Python), and so is one that Python warns cannot work."""
    out = []
    section = known.assemble.as_section(section)
    for grade_id in known.stub_cells(section):
        solved = known.solved_cell(section, grade_id)
        plain = ast.unparse(ast.parse(solved))
        for name in operators or OPERATORS:
            klass, operator = OPERATORS[name]
            for where, text in operator(solved):
                if text != plain and _sensible(text):
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
