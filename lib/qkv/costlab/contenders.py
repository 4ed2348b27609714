"""The contenders of the attention-cost lab: ways of processing n tokens of width d (D2L 11.6.2).

The course's materialising :class:`~qkv.attention.DotProductAttention`, PyTorch's
``scaled_dot_product_attention`` with one chosen backend (math, flash,
memory-efficient), a GRU and a 1-D convolution, each with its FLOP count.
Shape letters are those of the glossary in :mod:`qkv` (T: tokens, here ``n``).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import nn
from torch.nn import functional as F

from qkv import timing
from qkv.attention import DotProductAttention
from qkv.costlab.device import quiet_stderr

# ----------------------------------------------------------------------------- the contenders

try:  # PyTorch >= 2.3
    from torch.nn.attention import SDPBackend, sdpa_kernel
except ImportError:  # pragma: no cover - older PyTorch: only the math path is measured
    SDPBackend = sdpa_kernel = None

SDPA_BACKENDS = {"math": "MATH", "flash": "FLASH_ATTENTION", "memory-efficient": "EFFICIENT_ATTENTION"}


@dataclass(frozen=True)
class Contender:
    """One way to process a sequence of ``n`` tokens of width ``d`` (D2L 11.6.2).

    ``setup(batch, n, d)`` builds the module and inputs and returns
    ``(fn, args)``, so that ``fn(*args)`` is the timed call; ``flops(batch, n,
    d)`` counts its floating-point operations (a multiply-add is 2).
    ``family`` is its row of D2L's table: "self-attention", "RNN" or "CNN".
    """

    name: str
    family: str
    setup: Callable[[int, int, int], tuple[Callable, tuple]]
    flops: Callable[[int, int, int], int]


def _attention_flops(batch: int, n: int, d: int) -> int:
    return timing.attention_flops(n, n, d, batch=batch)["total"]


def _sdpa_call(backend_name: str) -> Callable:
    backend = getattr(SDPBackend, SDPA_BACKENDS[backend_name])

    def call(queries, keys, values):
        with sdpa_kernel(backend):
            return F.scaled_dot_product_attention(queries, keys, values)  # (B, 1, T, d) -> (B, 1, T, d)

    return call


def sdpa_backends(device, dtype: torch.dtype = torch.float32, d: int = 64) -> dict[str, str | None]:
    """Which of PyTorch's attention backends run here (D2L 11.6.2, lab): name -> None, or the reason it does not.

    Each backend is tried on a tiny input of this device, dtype and head size;
    the flash and memory-efficient kernels need a GPU for most dtypes (PyTorch
    has a CPU flash kernel; the memory-efficient one is CUDA only), and flash
    on a GPU needs float16 or bfloat16.
    """
    device = torch.device(device)
    if sdpa_kernel is None:
        return {name: "this PyTorch has no torch.nn.attention.sdpa_kernel" for name in SDPA_BACKENDS}
    q = torch.randn(1, 1, 8, d, device=device, dtype=dtype)  # (B, 1, T, d)
    found = {}
    for name in SDPA_BACKENDS:
        try:
            with torch.inference_mode(), quiet_stderr(), warnings.catch_warnings():
                warnings.simplefilter("ignore")  # a refused backend also warns why, before it raises
                _sdpa_call(name)(q, q, q)
            found[name] = None
        except RuntimeError as err:
            found[name] = str(err).strip().splitlines()[0][:200] or type(err).__name__
    return found


def contenders(device, dtype: torch.dtype = torch.float32, kernel_size: int = 3) -> list[Contender]:
    """The lab's contenders that run on ``device`` with ``dtype`` (D2L 11.3.3, 11.6.2).

    ``ours (11.3)`` is :class:`qkv.attention.DotProductAttention`, which
    materialises the (B, T, T) scores; ``sdpa: <backend>`` is
    ``torch.nn.functional.scaled_dot_product_attention`` held to one backend
    with ``sdpa_kernel`` (only the backends :func:`sdpa_backends` finds);
    ``GRU`` is a one-layer ``nn.GRU`` of width d, and ``Conv1d`` a 1-D
    convolution of width d with ``kernel_size`` taps. Weights and inputs are
    random normal numbers: the cost does not depend on their values.
    """
    device = torch.device(device)

    def normal(*shape):
        return torch.randn(*shape, device=device, dtype=dtype)

    def ours(batch, n, d):
        return DotProductAttention().eval(), (normal(batch, n, d), normal(batch, n, d), normal(batch, n, d))

    def sdpa(name):
        def setup(batch, n, d):
            return _sdpa_call(name), tuple(normal(batch, 1, n, d) for _ in range(3))  # (B, 1, T, d): one head

        return setup

    def gru(batch, n, d):
        return nn.GRU(d, d, batch_first=True).to(device, dtype).eval(), (normal(batch, n, d),)  # (B, T, d)

    def conv(batch, n, d):
        layer = nn.Conv1d(d, d, kernel_size, padding=kernel_size // 2).to(device, dtype).eval()
        return layer, (normal(batch, d, n),)  # (B, d, T): channels first

    found = [Contender("ours (11.3)", "self-attention", ours, _attention_flops)]
    for name, reason in sdpa_backends(device, dtype).items():
        if reason is None:
            found.append(Contender(f"sdpa: {name}", "self-attention", sdpa(name), _attention_flops))
    # A GRU step: three gates, each W x + U h with (d, d) matrices: 6 d^2 multiply-adds per token.
    found.append(Contender("GRU", "RNN", gru, lambda b, n, d: 12 * b * n * d * d))
    found.append(Contender(f"Conv1d (k={kernel_size})", "CNN", conv, lambda b, n, d: 2 * kernel_size * b * n * d * d))
    return found
