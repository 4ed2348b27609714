# Hidden: float64 references by explicit loops over Python floats (B = 2, Q = 4, K = 10, d = 3, v = 2), for blocks of
# 1, 3, 4, 10 and 16 keys, with no mask, lengths per example and per query, and queries of length 0 (the mean of all
# the values); scores above 1000 (no overflow); the queries' dtype kept; no tensor made off the inputs' device
# (default device 'meta', and inputs on 'meta' for an answer that names the CPU); and the memory: the peak of the
# bytes held by live tensors during one call (qkv.costlab.LiveTensorBytes, a TorchFunctionMode: deterministic and
# fast), fitted against n = 64 .. 512, must grow with an exponent below 1.4 (the (B, Q, K) scores give 2). The
# function must be the student's own: neither qkv's reference nor PyTorch's fused scaled_dot_product_attention may
# be called. Inputs of mixed dtypes are outside the contract ("one dtype and device"), so none is tried.
# (Runs in the notebook, after its visible test: checks and the answers are defined there.)
# Contract: the page's sentences each check relies on.
#   "It must equal the attention of 11.3 (to $10^{-10}$ in float64, whatever the block size," -> atol 1e-10
#   "block_size: keys per block, a positive int; the last block is shorter" -> blocks of 1, 3, 4, 10, 16, K = 10
#   "valid_lens: None, (B,) or (B, Q): query i of example b sees the keys" -> no mask, lengths per example and query
#   "the score of a masked key is replaced by -1e6, so its weight is 0;" -> masked keys weigh 0 in every case
#   "so equal weights: its output is the mean of all K values." -> lengths of 0 give the mean of all the values
#   "computed with a running maximum m, a running sum l and a running output a per query" -> scores of 1000 and more
#   "(B, Q, v), of the queries' dtype and device:" -> float32 stays; CPU output with 'meta' as default device
#   "No tensor of Q x K scores: at most one block, (B, Q, block_size)." -> memory exponent below 1.4
#   "the grader measures the memory your function holds and fits it against $n$," -> memory exponent below 1.4
#   "`costlab.online_attention` or PyTorch's fused `scaled_dot_product_attention` (6)" -> neither called
#   "queries (B, Q, d), keys (B, K, d), values (B, K, v): one dtype and" -> float16 and bfloat16 inputs
#   "scores: at most one block, (B, Q, block_size)." -> memory with lengths; a smaller block holds less
#   "The inputs are left unchanged." -> queries, keys, values and valid_lens compared with copies after two calls
# Classes: each kind of mistake, and the check that catches it.
#   value -> float64 output against loops over Python floats, blocks of 1 to 16, four kinds of lengths
#   dtype -> float16 and bfloat16 inputs (the lab's GPU dtype): running m, l, a in the default dtype fail or change it
#   device -> 'meta' default device around CPU inputs, then inputs on 'meta' (arange_on_cpu, cpu_device@...)
#   pass-through -> valid_lens in every form; block_size: blocks of 4 keys hold less than one block of all 256
#   state -> queries, keys, values and valid_lens are unchanged after the calls (no in-place scaling or masking)
#   gradient -> n/a: the lab times and measures this function; nothing is trained through it
#   type -> the output is one plain tensor (check_close refuses a tuple such as (output, m))
#   edge -> K = 10 in blocks of 3, 4 and 16 (a shorter last block, a block larger than K); lengths of 1 and of 0
#   symmetry -> d = 3 and v = 2, Q = 4 and K = 10: scaling by sqrt(v) or mixing the axes changes the output
#   train-eval -> n/a: a function with no training behaviour (no dropout)
#   efficiency -> the memory held, fitted against n, without and with lengths per query: exponent below 1.4
import math as _math

import torch.nn.functional as _F
from _shared import _device_probe  # the course's shared probes (the assembler inlines _shared.py)

import qkv.costlab as _costlab
import qkv.costlab.online as _online
import qkv.timing as _timing

_T = checks.trusted
_f64 = _T.float64
_Tensor = type(_T.zeros(0))


def _loop_attention(q, k, v, lens):
    """Masked softmax(q.k / sqrt(d)) v by loops over nested lists; query i of example b sees lens[b][i] keys, and
    a query that sees none gets equal weights on all the keys (the mean of the values)."""
    out = []
    for b in range(len(q)):
        rows = []
        for i, qi in enumerate(q[b]):
            if lens[b][i] == 0:  # every score masked to -1e6: equal weights
                rows.append([sum(vj[c] for vj in v[b]) / len(v[b]) for c in range(len(v[b][0]))])
                continue
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
    ("lengths per query, some 0", _T.tensor([[0, 10, 4, 0], [5, 0, 9, 3]]), [[0, 10, 4, 0], [5, 0, 9, 3]]),
    ("lengths per example [0, 7]", _T.tensor([0, 7]), [[0] * 4, [7] * 4]),
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
        _given = (_q, _k, _v, _cases[1][1], _cases[2][1])
        _inputs = [_t.clone() for _t in _given]
        online_attention(_q, _k, _v, _cases[1][1], block_size=3)
        online_attention(_q, _k, _v, _cases[2][1], block_size=4)
        for _what, _a, _b in zip(
            ("queries", "keys", "values", "valid_lens (B,)", "valid_lens (B, Q)"), _given, _inputs
        ):
            checks.check_close(
                _a,
                _b,
                f"{_what} after a call of online_attention (hidden): the inputs are left unchanged",
                atol=0,
                rtol=0,
                hint="build new tensors (queries / math.sqrt(d), masked_fill); no in-place operation (div_, "
                "masked_fill_, /=) on the inputs",
            )
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
                    "indices; read the last, shorter block too; a query of length 0 gets the mean of all the values "
                    "(masked scores -1e6, not -inf)",
                )
        _expected_lens = _loop_attention(_q.tolist(), _k.tolist(), _v.tolist(), _cases[2][2])  # lengths per query
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
        # the lab runs in float16 on a GPU: 16-bit inputs must work and give a 16-bit output (CPU kernels here).
        # float16 without lengths: -1e6, the masking value the docstring names, does not fit in float16.
        _expected_none = _loop_attention(_q.tolist(), _k.tolist(), _v.tolist(), _cases[0][2])
        for _dt, _tol, _case, _expected_dt in (
            (torch.float16, 1e-2, _cases[0], _expected_none),
            (torch.bfloat16, 6e-2, _cases[2], _expected_lens),
        ):
            _name = str(_dt).replace("torch.", "")
            try:
                _out = online_attention(_q.to(_dt), _k.to(_dt), _v.to(_dt), _case[1], block_size=3)
                _err = None
            except Exception as _e:  # report what the student's code raised, in one line
                _err = f"{type(_e).__name__}: {str(_e).splitlines()[0][:100] if str(_e) else ''}"
            checks.check_true(
                _err is None,
                f"online_attention on {_name} inputs runs (got {_err})",
                hint="make the running maximum, sum and output with dtype=queries.dtype, so every product meets "
                "tensors of one dtype",
            )
            checks.check_true(
                isinstance(_out, _Tensor) and _out.dtype == _dt,
                f"{_name} inputs give a {_name} output (got "
                f"{_out.dtype if isinstance(_out, _Tensor) else type(_out).__name__})",
                hint="make the running maximum, sum and output with dtype=queries.dtype",
            )
            checks.check_close(
                _out,
                _expected_dt,
                f"output (hidden, {_name}, {_case[0]})",
                atol=_tol,
                rtol=0,
                hint="the same online softmax in 16 bits: subtract the running maximum before exp",
            )
        # the device (_shared.py: _device_probe): with the default device set to 'meta' (a stand-in for a GPU) while
        # the inputs stay on the CPU, every tensor made without device=queries.device lands on 'meta' and cannot meet
        # them; an answer that names the CPU (device="cpu") also runs on inputs on 'meta', as on a GPU.
        _err = _device_probe(
            lambda: online_attention(_q, _k, _v, _cases[2][1], block_size=3),
            lambda: online_attention(*(_t.to("meta") for _t in (_q, _k, _v, _cases[2][1])), block_size=3),
            "online_attention",
        )
        checks.check_true(
            _err is None,
            f"online_attention makes its tensors on the inputs' device (hidden): {_err}",
            hint="make every new tensor on the queries' device: torch.full(..., device=queries.device), "
            "torch.arange(start, stop, device=queries.device)",
        )
        _ns, _peaks, _peaks_lens = [64, 128, 256, 512], [], []
        for _n in _ns:
            _x = _T.randn(1, _n, 8, generator=_g, dtype=_f64)  # (B, T, d)
            with _costlab.LiveTensorBytes(_x) as _probe:
                online_attention(_x, _x, _x, None, block_size=16)
            _peaks.append(_probe.peak)
            # lengths per query, d = v = 1 and small blocks: a (B, Q, K) mask of all the keys, even of bools, then
            # dominates what a block needs (its exponent is 1.5 here, a right answer's 1.0)
            _x1 = _T.randn(1, _n, 1, generator=_g, dtype=_f64)  # (B, T, 1)
            _l = _T.randint(1, _n + 1, (1, _n), generator=_g)  # (B, Q)
            with _costlab.LiveTensorBytes(_x1, _l) as _probe:
                online_attention(_x1, _x1, _x1, _l, block_size=4)
            _peaks_lens.append(_probe.peak)
        # the block size: blocks of 4 keys hold less than one block of all the keys (n = 256)
        _x = _T.randn(1, 256, 8, generator=_g, dtype=_f64)  # (B, T, d)
        _by_block = {}
        for _block in (4, 256):
            with _costlab.LiveTensorBytes(_x) as _probe:
                online_attention(_x, _x, _x, None, block_size=_block)
            _by_block[_block] = _probe.peak
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
_, _k_mem_lens = _timing.fit_power_law(_ns, [max(_p, 1) for _p in _peaks_lens])
checks.check_true(
    _k_mem_lens < 1.4,
    f"with lengths per query, the memory online_attention holds grows as n^{_k_mem_lens:.2f} over n = {_ns} "
    f"(d = v = 1; peaks in bytes: {_peaks_lens}); blocks of 4 keys need memory linear in n",
    hint="mask each block inside the loop, with the keys' indices start .. start + b: never build a (B, Q, K) mask "
    "of all the keys before the loop",
)
checks.check_true(
    _by_block[4] * 2 < _by_block[256],
    f"with n = 256, blocks of 4 keys hold less memory than one block of 256 (peaks in bytes: {_by_block})",
    hint="read the keys block_size at a time: keys[:, start:start + block_size]",
)
