"""Attention block by block with an online softmax: what fused kernels change (D2L 11.6.2, the attention-cost lab).

FlashAttention (Dao et al., 2022) computes ``softmax(Q K^T / sqrt(d)) V`` without
ever holding the (B, Q, K) matrix of scores. It walks over the keys in blocks and
keeps, for every query, three running quantities: the largest score seen so far
``m``, the sum ``total`` of ``exp(score - m)`` over the keys seen so far, and the
weighted sum ``acc`` of their values with those same weights. When a block
raises the maximum from ``m`` to ``m'``, everything accumulated so far was
computed relative to the old maximum, so ``total`` and ``acc`` are multiplied by
``exp(m - m')`` before the block's terms are added. At the end ``acc / total`` is
exactly the softmax-weighted sum. The arithmetic is the same O(Q K d); the
memory is O(Q (block + v)) instead of O(Q K).

:func:`online_attention` is the reference; :class:`LiveTensorBytes` is the
memory probe the lab grades with (the peak, over one call, of the bytes held by
the tensors that torch functions returned and that are still alive).
Shape letters are those of the glossary in :mod:`qkv`.
"""

from __future__ import annotations

import math
import weakref

import torch
import torch.overrides

__all__ = ["online_attention", "LiveTensorBytes"]


def online_attention(
    queries: torch.Tensor,
    keys: torch.Tensor,
    values: torch.Tensor,
    valid_lens: torch.Tensor | None = None,
    block_size: int = 64,
) -> torch.Tensor:
    """Masked scaled dot-product attention over blocks of keys, with an online softmax (D2L 11.6.2, lab).

    Args:
        queries: (B, Q, d); keys: (B, K, d); values: (B, K, v), all of one
            floating dtype and device.
        valid_lens: None, (B,) or (B, Q): query i of example b sees the keys
            j < valid_lens[b] (or [b, i]). The score of a masked key is replaced
            by -1e6, so its weight is 0; a query of length 0 has all its scores
            at -1e6, so equal weights: its output is the mean of all K values,
            as :func:`qkv.attention.masked_softmax` gives.
        block_size: the number of keys per block (any positive int; the last
            block is shorter when it does not divide K).

    Returns:
        (B, Q, v), equal to ``masked_softmax(Q K^T / sqrt(d), valid_lens) V``,
        computed without any tensor of size Q x K: the largest holds
        (B, Q, block_size) scores.
    """
    if isinstance(block_size, bool) or not isinstance(block_size, int) or block_size < 1:
        raise ValueError(f"block_size must be a positive int (keys per block), got {block_size!r}")
    if queries.dim() != 3 or keys.dim() != 3 or values.dim() != 3:
        raise ValueError(
            "expected queries (B, Q, d), keys (B, K, d) and values (B, K, v), got shapes "
            f"{tuple(queries.shape)}, {tuple(keys.shape)} and {tuple(values.shape)}"
        )
    B, Q, d = queries.shape
    K = keys.shape[1]
    lens = None
    if valid_lens is not None:
        lens = valid_lens.to(queries.device)
        lens = lens[:, None].expand(B, Q) if lens.dim() == 1 else lens  # (B,) -> (B, Q)
    m = torch.full((B, Q), -math.inf, dtype=queries.dtype, device=queries.device)  # (B, Q): running maximum
    total = torch.zeros(B, Q, dtype=queries.dtype, device=queries.device)  # (B, Q): running sum of exp(s - m)
    acc = torch.zeros(B, Q, values.shape[-1], dtype=values.dtype, device=values.device)  # (B, Q, v)
    for start in range(0, K, block_size):
        k_blk = keys[:, start : start + block_size]  # (B, b, d), b <= block_size
        v_blk = values[:, start : start + block_size]  # (B, b, v)
        s = torch.bmm(queries, k_blk.transpose(1, 2)) / math.sqrt(d)  # (B, Q, d) @ (B, d, b) -> (B, Q, b)
        if lens is not None:
            j = torch.arange(start, start + k_blk.shape[1], device=queries.device)  # (b,): the keys' indices
            s = s.masked_fill(j >= lens[:, :, None], -1e6)  # (b,) >= (B, Q, 1) -> (B, Q, b)
        m_new = torch.maximum(m, s.amax(dim=-1))  # (B, Q)
        rescale = torch.exp(m - m_new)  # (B, Q): old sums were relative to the old maximum
        p = torch.exp(s - m_new[:, :, None])  # (B, Q, b) - (B, Q, 1) -> (B, Q, b)
        total = total * rescale + p.sum(dim=-1)  # (B, Q)
        acc = acc * rescale[:, :, None] + torch.bmm(p, v_blk)  # (B, Q, v) + (B, Q, b) @ (B, b, v)
        m = m_new
    return acc / total[:, :, None]  # (B, Q, v) / (B, Q, 1)


class LiveTensorBytes(torch.overrides.TorchFunctionMode):
    """While on, the peak of the bytes held by live tensors that torch functions returned (D2L 11.6.2, lab).

    ``with LiveTensorBytes(*inputs) as probe: fn(*inputs)``, then ``probe.peak``.
    Every tensor a torch function (or tensor method) returns is recorded with
    its storage; a storage counts while any recorded tensor that uses it is
    alive, and storages of the ``exclude`` tensors (the inputs) never count.
    The total is checked after each call, so ``peak`` is the largest amount of
    tensor memory the computation held at once, as seen from Python: a
    deterministic stand-in for an allocator's peak (intermediates that a
    single C++ kernel makes and frees are not seen). Meta tensors count their
    ``nbytes`` too, so the probe works without allocating anything.
    """

    def __init__(self, *exclude: torch.Tensor):
        super().__init__()
        self._excluded = {self._key(t) for t in exclude if isinstance(t, torch.Tensor)}
        self._live: dict[tuple, tuple[int, dict[int, weakref.ref]]] = {}  # storage -> (bytes, its tensors)
        self.peak = 0

    @staticmethod
    def _key(t: torch.Tensor) -> tuple:
        try:
            ptr = t.untyped_storage().data_ptr()
        except (RuntimeError, NotImplementedError):
            ptr = 0
        return (str(t.device), ptr) if ptr else (str(t.device), "tensor", id(t))  # meta: no address, one per tensor

    @staticmethod
    def _nbytes(t: torch.Tensor) -> int:
        try:
            return t.untyped_storage().nbytes()
        except (RuntimeError, NotImplementedError):
            return t.numel() * t.element_size()

    def _forget_dead(self) -> None:
        for key in [k for k, (_, refs) in self._live.items() if all(r() is None for r in refs.values())]:
            del self._live[key]

    def _record(self, out) -> None:
        self._forget_dead()
        for t in out if isinstance(out, tuple | list) else (out,):
            if isinstance(t, torch.Tensor):
                key = self._key(t)
                if key in self._excluded:
                    continue
                entry = self._live.get(key)
                if entry is None:
                    entry = self._live[key] = (self._nbytes(t), {})
                entry[1][id(t)] = weakref.ref(t)  # a dict by id: a WeakSet would compare tensors with ==
        self._forget_dead()
        self.peak = max(self.peak, sum(size for size, _ in self._live.values()))

    def __torch_function__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        self._record(out)
        return out
