# Shared by the hidden tests of every section that imports it (``from _shared import ...``): the course's probes, a
# fix to one lands once. The assembler puts this text where the import was (autograder/assemble.py: hidden_tests), so
# every hidden block stays self-contained in its notebook cell; a section's own helpers are in its _common.py.
import torch as _torch

_Tensor = type(checks.trusted.zeros(0))


def _one_line(err):
    return f"{type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}"


def _tensors(result):
    items = result if isinstance(result, (tuple, list)) else [result]
    return [t for t in items if type(t) is _Tensor]


def _device_probe(on_cpu, on_meta, what):
    """None when ``what`` makes its tensors on its inputs' device, else a sentence saying where they went.

    ``on_cpu()`` first runs on CPU inputs with PyTorch's default device set to 'meta' (a stand-in for a GPU; it holds
    shapes, no data): a tensor made without device= lands there. A right answer makes none and pays nothing (the first
    arithmetic on 'meta' imports torch._dynamo, seconds). Only when that run fails does ``on_meta()`` decide, the same
    call on inputs on 'meta', as a GPU runs it: a tensor made on the default device and then moved with .to(device), or
    a 0-d tensor, which a GPU accepts beside its own, passes there. A result on another device, two devices meeting, or
    the inputs' values copied into a tensor made on the default device count against the answer; reading a value,
    which 'meta' cannot and a GPU can, does not."""
    try:
        with _torch.device("meta"):
            result = on_cpu()
    except Exception:
        pass
    else:
        devices = sorted({str(t.device) for t in _tensors(result)})
        if devices in ([], ["cpu"]):
            return None
        return f"with CPU inputs and another default device ('meta', as a GPU would be), {what} returned {devices}"
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
