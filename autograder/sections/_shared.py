# Shared by the hidden tests of every section that imports it (``from _shared import ...``): the course's probes, a
# fix to one lands once. The assembler puts this text where the import was (autograder/assemble.py: hidden_tests), so
# every hidden block stays self-contained in its notebook cell; a section's own helpers are in its _common.py.
import types as _types

import torch as _torch

_Tensor = type(checks.trusted.zeros(0))


def _one_line(err):
    return f"{type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}"


def _tensors(result):
    items = result if isinstance(result, (tuple, list)) else [result]
    return [t for t in items if type(t) is _Tensor]


def _answer_codes(fn):
    """The code objects of the answers that ``fn`` (a hidden test's lambda) calls: the functions, classes and
    modules defined in the notebook that its names (and its defaults) refer to, with every code nested in them."""
    found, todo, seen = [], [], set()
    names = [fn.__globals__.get(n) for n in fn.__code__.co_names] + list(fn.__defaults__ or ())
    for obj in names:
        if obj is not None and not isinstance(obj, (_types.FunctionType, type)):
            obj = type(obj)  # an instance of an answer: its class
        if getattr(obj, "__module__", None) == "__main__":
            todo.append(obj)
    while todo:
        obj = todo.pop()
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        if isinstance(obj, type):
            todo += [v for v in vars(obj).values() if isinstance(v, _types.FunctionType)]
        elif isinstance(obj, _types.FunctionType):
            todo.append(obj.__code__)
        elif isinstance(obj, _types.CodeType):
            found.append(obj)
            todo += [c for c in obj.co_consts if isinstance(c, _types.CodeType)]
    return found


def _names_cpu(fn):
    """Whether an answer that ``fn`` calls writes the CPU by name (``device="cpu"``, ``torch.device("cpu")``)."""
    return any(c == "cpu" for code in _answer_codes(fn) for c in code.co_consts)


def _device_probe(on_cpu, on_meta, what):
    """None when ``what`` makes its tensors on its inputs' device, else a sentence saying where they went.

    ``on_cpu()`` first runs on CPU inputs with PyTorch's default device set to 'meta' (a stand-in for a GPU; it holds
    shapes, no data): a tensor made without device= lands there. A right answer makes none and pays nothing (the first
    arithmetic on 'meta' imports torch._dynamo, seconds). Only when that run fails does ``on_meta()`` decide, the same
    call on inputs on 'meta', as a GPU runs it: a tensor made on the default device and then moved with .to(device), or
    a 0-d tensor, which a GPU accepts beside its own, passes there. A result on another device, two devices meeting, or
    the inputs' values copied into a tensor made on the default device count against the answer; reading a value,
    which 'meta' cannot and a GPU can, does not. An answer that names the CPU (``device="cpu"``: a tensor made there
    passes the first run, whose inputs are on the CPU) is always run the second way too."""
    try:
        with _torch.device("meta"):
            result = on_cpu()
    except Exception:
        pass
    else:
        devices = sorted({str(t.device) for t in _tensors(result)})
        if devices not in ([], ["cpu"]):
            return f"with CPU inputs and another default device ('meta', as a GPU would be), {what} returned {devices}"
        if not _names_cpu(on_cpu):
            return None
    try:
        result = on_meta()
    except Exception as err:
        if "expected device" in str(err) or "same device" in str(err):
            return f"{what} on inputs on the 'meta' device (as on a GPU) raised {_one_line(err)}"
        if "copy out of meta" in str(err):
            return f"{what} copied values of inputs on the 'meta' device (as on a GPU) into a tensor made elsewhere"
        return None  # a value read, or an operation 'meta' lacks: a GPU allows both
    devices = sorted({str(t.device) for t in _tensors(result)})
    if devices in ([], ["meta"]):
        return None
    return f"{what} on inputs on the 'meta' device (as on a GPU) returned tensors on {devices}"
