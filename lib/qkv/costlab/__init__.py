"""The attention-cost lab: sweeps, baselines and pictures for measuring attention (D2L 11.3 exercises, 11.6.2).

D2L 11.6.2 compares self-attention, a recurrent network and a convolution on
paper: O(n^2 d) operations for self-attention against O(n d^2) for an RNN and
O(k n d^2) for a CNN. The lab measures them. A :class:`Contender` is one way
of processing a sequence of ``n`` tokens of width ``d``: the course's
materialising :class:`~qkv.attention.DotProductAttention`, PyTorch's
``scaled_dot_product_attention`` with one chosen backend (math, flash,
memory-efficient), a GRU, a 1-D convolution. :func:`run_sweep` times each over
a range of sizes with :func:`qkv.timing.benchmark` and measures its peak
memory, catching out-of-memory per point; :func:`fit_sweep` fits ``t = c n^k``;
:func:`plot_sweep` draws the log-log picture; :func:`write_results` and
:func:`read_results` keep a sweep in a CSV with where and when it was measured.
:func:`online_attention` computes attention block by block with an online
softmax, as fused kernels do, and :class:`LiveTensorBytes` probes its memory.
:class:`SimulatedGPU` is a pretend asynchronous device that shows, on a machine
without a GPU, why a timer must synchronise.
Shape letters are those of the glossary in :mod:`qkv` (T: tokens, here ``n``).
The module is split by stage: :mod:`~qkv.costlab.device` (choosing and timing
the device), :mod:`~qkv.costlab.contenders`, :mod:`~qkv.costlab.sweep` (measure
and fit) and :mod:`~qkv.costlab.results` (files, tables, plots), :mod:`~qkv.costlab.online`; everything is
importable from ``qkv.costlab`` itself.
"""

from qkv.costlab.contenders import SDPA_BACKENDS, Contender, contenders, sdpa_backends
from qkv.costlab.device import (
    SimulatedGPU,
    announce_device,
    device_memory_bytes,
    lab_clock,
    one_thread,
    peak_flops,
    pick_device,
    quiet_stderr,
)
from qkv.costlab.online import LiveTensorBytes, online_attention
from qkv.costlab.results import (
    RESULTS_DIR,
    plot_sweep,
    print_pivot,
    print_table,
    read_results,
    show_results,
    sweep_figure,
    write_results,
)
from qkv.costlab.sweep import FIELDS, achieved, fit_sweep, run_sweep

__all__ = [
    "RESULTS_DIR",
    "SimulatedGPU",
    "Contender",
    "SDPA_BACKENDS",
    "FIELDS",
    "pick_device",
    "announce_device",
    "one_thread",
    "lab_clock",
    "quiet_stderr",
    "sdpa_backends",
    "contenders",
    "run_sweep",
    "fit_sweep",
    "plot_sweep",
    "sweep_figure",
    "write_results",
    "read_results",
    "show_results",
    "print_table",
    "print_pivot",
    "device_memory_bytes",
    "peak_flops",
    "achieved",
    "online_attention",
    "LiveTensorBytes",
]
