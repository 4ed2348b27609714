# Hidden: float64 references by explicit loops over Python floats (B = 2, Q = 4, K = 10, d = 3, v = 2), for blocks of
# 1, 3, 4, 10 and 16 keys, with no mask and lengths per example and per query; scores above 1000 (no overflow); the
# queries' dtype kept; no tensor made off the inputs' device (default device 'meta'); and the memory: the peak of the
# bytes held by live tensors during one call (qkv.costlab.LiveTensorBytes, a TorchFunctionMode: deterministic and
# fast), fitted against n = 64 .. 512, must grow with an exponent below 1.4 (the (B, Q, K) scores give 2). The function
# must be the student's own: neither qkv's reference nor PyTorch's fused scaled_dot_product_attention may be called.
# (Runs in the notebook, after its visible test: checks and the answers are defined there.)
# Contract: the page's sentences each check relies on.
#   "It must equal the attention of 11.3 (to $10^{-10}$ in float64, whatever the block size," -> atol 1e-10
#   "block_size: keys per block, a positive int; the last block is shorter" -> blocks of 1, 3, 4, 10, 16, K = 10
#   "valid_lens: None, (B,) or (B, Q), as in 11.3's masked_softmax:" -> no mask, lengths per example and per query
#   "computed with a running maximum m, a running sum l and a running output a per query" -> scores of 1000 and more
#   "(B, Q, v), of the queries' dtype and device:" -> float32 stays; CPU output with 'meta' as default device
#   "No tensor of Q x K scores: at most one block, (B, Q, block_size)." -> memory exponent below 1.4
#   "the grader measures the memory your function holds and fits it against $n$," -> memory exponent below 1.4
#   "`costlab.online_attention` or PyTorch's fused `scaled_dot_product_attention` (6)" -> neither called
import math as _math

import torch.nn.functional as _F

import qkv.costlab as _costlab
import qkv.costlab.online as _online
import qkv.timing as _timing

_T = checks.trusted
_f64 = _T.float64
_Tensor = type(_T.zeros(0))


def _loop_attention(q, k, v, lens):
    """Masked softmax(q.k / sqrt(d)) v by loops over nested lists; query i of example b sees lens[b][i] keys."""
    out = []
    for b in range(len(q)):
        rows = []
        for i, qi in enumerate(q[b]):
            s = [sum(x * y for x, y in zip(qi, kj)) / _math.sqrt(len(qi)) for kj in k[b][: lens[b][i]]]
            top = max(s)
            e = [_math.exp(x - top) for x in s]
            rows.append([sum(e[j] * v[b][j][c] for j in range(len(e))) / sum(e) for c in range(len(v[b][0]))])
        out.append(rows)
    return _T.tensor(out, dtype=_f64)


_g = _T.Generator().manual_seed(1166)
_q = _T.randn(2, 4, 3, generator=_g, dtype=_f64)
_k = _T.randn(2, 10, 3, generator=_g, dtype=_f64)
_v = _T.randn(2, 10, 2, generator=_g, dtype=_f64)
_cases = [
    ("no mask", None, [[10] * 4] * 2),
    ("lengths per example [6, 10]", _T.tensor([6, 10]), [[6] * 4, [10] * 4]),
    ("lengths per query", _T.tensor([[1, 10, 4, 7], [5, 2, 9, 3]]), [[1, 10, 4, 7], [5, 2, 9, 3]]),
]
_refs = (
    (_online, "online_attention"),
    (_costlab, "online_attention"),
    (_F, "scaled_dot_product_attention"),
)
_threads = torch.get_num_threads()
torch.set_num_threads(1)  # small products: one thread is fastest on a shared machine
try:
    with checks.forbid_reference(online_attention, *_refs):
        for _name, _arg, _lens in _cases:
            _expected = _loop_attention(_q.tolist(), _k.tolist(), _v.tolist(), _lens)
            for _block in (1, 3, 4, 10, 16):
                _out = online_attention(_q, _k, _v, _arg, block_size=_block)
                checks.check_close(
                    _out,
                    _expected,
                    f"output (hidden, float64, K = 10, block_size = {_block}, {_name})",
                    atol=1e-10,
                    rtol=0,
                    hint="rescale the running sum and output when the maximum rises; mask with the keys' global "
                    "indices; read the last, shorter block too",
                )
        # scores of a thousand or more: exp without the running maximum overflows float64 (past about 709)
        _qb = _q * 1000.0
        _out = online_attention(_qb, _k, _v, _cases[2][1], block_size=3)
        checks.check_close(
            _out,
            _loop_attention(_qb.tolist(), _k.tolist(), _v.tolist(), _cases[2][2]),
            "output (hidden) with scores of a thousand or more",
            atol=1e-10,
            rtol=0,
            hint="subtract the running maximum before exp: exp(s - m_new), never exp(s)",
        )
        _out = online_attention(_q.float(), _k.float(), _v.float(), _cases[1][1], block_size=4)
        checks.check_true(
            isinstance(_out, _Tensor) and _out.dtype == _T.float32,
            "float32 inputs give a float32 output",
            hint="make the running maximum, sum and output with dtype=queries.dtype",
        )
        # the device: with the default device set to 'meta' (a stand-in for a GPU) while the inputs stay on the CPU,
        # every tensor made without device=queries.device lands on 'meta' and cannot meet them. (Unlike 'meta' inputs,
        # this costs a correct answer nothing: the first arithmetic on 'meta' imports torch._dynamo, seconds.)
        try:
            with torch.device("meta"):
                _out = online_attention(_q, _k, _v, _cases[2][1], block_size=3)
            _where = str(_out.device) if isinstance(_out, _Tensor) else type(_out).__name__
        except (RuntimeError, NotImplementedError) as _err:
            _where = f"an error: {str(_err).splitlines()[0][:120]}"
        checks.check_true(
            _where == "cpu",
            f"on CPU inputs, with the default device set to 'meta' (a stand-in for a GPU), the output is on the CPU; "
            f"got {_where}",
            hint="make every new tensor on the queries' device: torch.full(..., device=queries.device), "
            "torch.arange(start, stop, device=queries.device)",
        )
        _ns, _peaks = [64, 128, 256, 512], []
        for _n in _ns:
            _x = _T.randn(1, _n, 8, generator=_g, dtype=_f64)  # (B, T, d)
            with _costlab.LiveTensorBytes(_x) as _probe:
                online_attention(_x, _x, _x, None, block_size=16)
            _peaks.append(_probe.peak)
finally:
    torch.set_num_threads(_threads)
_, _k_mem = _timing.fit_power_law(_ns, [max(_p, 1) for _p in _peaks])
checks.check_true(
    _k_mem < 1.4,
    f"the memory online_attention holds grows as n^{_k_mem:.2f} over n = {_ns} (peaks in bytes: {_peaks}); "
    "blocks of 16 keys need memory linear in n",
    hint="never compute the scores of all the keys at once (queries @ keys.transpose(1, 2)): compute them "
    "block by block inside the loop",
)
