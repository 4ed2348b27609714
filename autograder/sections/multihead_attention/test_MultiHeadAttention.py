# Hidden: float64, N = 12 in H = 3 heads (h = 4), no mask, lengths per example and per query, huge scores; the
# weights and output against a loop over examples and heads and against torch.nn.MultiheadAttention with the
# same weights (its attn_mask from the lengths), and with bias=True and the same biases; dropout (rate 0.3) on the
# weights in training mode only; the number of matrix products independent of the number of heads (no loop over
# heads); nothing that ties forward to the CPU (lengths read into Python, tensors made without device=); the
# gradients of the four projections against PyTorch's; not the reference.
# Contract: the page's sentences each check relies on.
#   "lazy projections W_q, W_k, W_v, W_o, each to N features, with bias as given (D2L: none)" -> all 4; bias=True
#   "valid_lens None, lengths (B,) or (B, Q), as in att.masked_softmax." -> no mask, per example, per query
#   "repeat the lengths per head, scale the scores by sqrt(N / H)," -> weights, against loops
#   "mask with att.masked_softmax" -> huge scores
#   "multiply by the values, unfold with ref.transpose_output and apply W_o." -> output, two references
#   "store the weights, (B * H, Q, K), before dropout, in self.attention_weights;" -> weights before dropout
#   "apply self.dropout to them," -> dropout on the weights, in training mode only
#   "No Python loop over the heads, and no call to ref.MultiHeadAttention." -> products counted; no reference
#   "every tensor stays there (no value read out with .tolist() or .item()," -> no reads into Python
#   "no new tensor made without device=)" -> no tensor made without device=
#   "The layer is trained: gradients reach all four projections." -> the gradients against nn.MultiheadAttention's
# Classes: each kind of mistake, and the check that catches it.
#   value -> weights and output against loops and nn.MultiheadAttention (scale_by_num_hiddens, no_output_projection)
#   dtype -> float64 weights and output to 1e-10 (float32_softmax)
#   device -> nothing read into Python, no tensor made without device= (lengths_via_python)
#   pass-through -> lengths per example and per query reach the softmax (ignores_valid_lens); bias=True, dropout 0.3
#   state -> n/a: forward keeps nothing between calls but self.attention_weights, which each call overwrites
#   gradient -> the gradients of W_q, W_k, W_v and W_o against nn.MultiheadAttention's (detached_weights)
#   type -> the output must be one (B, Q, N) tensor (returns_weights_too)
#   edge -> valid_lens None, (B,) and (B, Q), huge scores (no_mask_crashes, lengths_flattened)
#   symmetry -> lengths that differ per example, [1, 5, 3], and all sizes different (repeat_not_interleave)
#   train-eval -> dropout on the weights in training mode only (dropout_on_output, functional_dropout)
#   efficiency -> the number of matrix products independent of H (loop_over_heads)
import torch as _torch
from _common import (  # the section's shared helpers (the assembler inlines _common.py)
    _T,
    _attend_ref,
    _CountProducts,
    _f64,
    _HostProbe,
    _lens_per_query,
    _math,
    _qm,
)

_NAMES = ("W_q", "W_k", "W_v", "W_o")
_hint = "see Hint 1: fold with ref.transpose_qkv, repeat_interleave the lengths, scale by sqrt(h), unfold, W_o"


def _new_layer(N, H, dropout, d_q, d_k, d_v, **bias):
    """The student's layer, its lazy sizes set by a first call, in float64, in evaluation mode."""
    layer = MultiHeadAttention(N, H, dropout, **bias)
    layer.eval()
    layer(_T.zeros(1, 1, d_q), _T.zeros(1, 2, d_k), _T.zeros(1, 2, d_v))  # sets the lazy layers' input sizes
    checks.check_true(
        not any(isinstance(getattr(layer, n).weight, _torch.nn.parameter.UninitializedParameter) for n in _NAMES),
        "forward used all of W_q, W_k, W_v and W_o",
        hint="project the queries, keys and values, and apply self.W_o to the unfolded heads",
    )
    layer.double()
    return layer


def _set_weights(layer, weights, what):
    with _torch.no_grad():
        for name, w in zip(_NAMES, weights):
            lin = getattr(layer, name)
            checks.check_shape(lin.weight.detach(), tuple(w.shape), f"{name}.weight ({what})")
            checks.check_true(lin.bias is None, f"{name} has no bias", hint="keep the constructor as given")
            lin.weight.copy_(w)


def _mha_ref(q, k, v, weights, H, lens):
    """Weights (B * H, Q, K) and output (B, Q, N) of multi-head attention, one example and one head at a time."""
    Wq, Wk, Wv, Wo = weights
    N = Wq.shape[0]
    p = N // H
    Pq, Pk, Pv = _T.matmul(q, Wq.T), _T.matmul(k, Wk.T), _T.matmul(v, Wv.T)  # (B, Q, N), (B, K, N), (B, K, N)
    W_all, concat = [], []
    for b in range(q.shape[0]):
        heads = []
        for i in range(H):
            cut = slice(i * p, (i + 1) * p)
            w, o = _attend_ref(Pq[b, :, cut].tolist(), Pk[b, :, cut].tolist(), Pv[b, :, cut].tolist(), lens[b])
            W_all.append(w)
            heads.append(o)
        concat.append([sum((heads[i][t] for i in range(H)), []) for t in range(q.shape[1])])
    return _T.tensor(W_all, dtype=_f64), _T.matmul(_T.tensor(concat, dtype=_f64), Wo.T)


_g = _T.Generator().manual_seed(1153)
_B, _Q, _K, _N, _H, _dq, _dk, _dv = 3, 2, 5, 12, 3, 6, 7, 2
_q = _T.randn(_B, _Q, _dq, generator=_g, dtype=_f64)
_k = _T.randn(_B, _K, _dk, generator=_g, dtype=_f64)
_v = _T.randn(_B, _K, _dv, generator=_g, dtype=_f64)
_weights = [_T.randn(_N, d, generator=_g, dtype=_f64) / _math.sqrt(d) for d in (_dq, _dk, _dv, _N)]
_cases = [
    ("no mask", None, None, 1.0),
    ("lengths per example [1, 5, 3]", _T.tensor([1, 5, 3]), [1, 5, 3], 1.0),
    ("lengths per query", _T.tensor([[1, 4], [5, 2], [3, 3]]), [[1, 4], [5, 2], [3, 3]], 1.0),
    ("lengths per example, queries x 1000 (huge scores)", _T.tensor([2, 4, 5]), [2, 4, 5], 1000.0),
]
with checks.forbid_reference(MultiHeadAttention, (_qm, "MultiHeadAttention")):
    _layer = _new_layer(_N, _H, 0.3, _dq, _dk, _dv)
    _set_weights(_layer, _weights, "hidden, N = 12, d_q = 6, d_k = 7, d_v = 2")
    for _name, _arg, _lens, _scale in _cases:
        _out = _layer(_q * _scale, _k, _v, _arg)
        _W, _O = _mha_ref(_q * _scale, _k, _v, _weights, _H, _lens_per_query(_lens, _B, _Q, _K))
        _what = f"(hidden, float64, N = 12, H = 3, {_name})"
        checks.check_shape(_out, (_B, _Q, _N), f"output {_what}", hint="(B, Q, N)")
        checks.check_close(
            _layer.attention_weights,
            _W,
            f"attention_weights {_what}",
            atol=1e-10,
            rtol=0,
            hint="rows b * H + i: repeat each example's lengths with repeat_interleave, scale by sqrt(N / H)",
        )
        checks.check_close(_out, _O, f"output {_what}", atol=1e-10, rtol=0, hint=_hint)

    # Against PyTorch's own layer, with the same weights.
    _torch_layer = _torch.nn.MultiheadAttention(_N, _H, bias=False, batch_first=True, kdim=_dk, vdim=_dv).double()
    _torch_layer.eval()
    _tw = [_T.randn(_N, _N, generator=_g, dtype=_f64) / _math.sqrt(_N), _weights[1], _weights[2], _weights[3]]
    with _torch.no_grad():
        _torch_layer.q_proj_weight.copy_(_tw[0])
        _torch_layer.k_proj_weight.copy_(_tw[1])
        _torch_layer.v_proj_weight.copy_(_tw[2])
        _torch_layer.out_proj.weight.copy_(_tw[3])
    _layer = _new_layer(_N, _H, 0.0, _N, _dk, _dv)
    _set_weights(_layer, _tw, "hidden, queries of size N = 12")
    _qN = _T.randn(_B, _Q, _N, generator=_g, dtype=_f64)
    _lens = _T.tensor([4, 1, 5])
    # torch's attn_mask, (B * H, Q, K), True where a key must be ignored, row b * H + i for head i of example b.
    # (key_padding_mask would do the same, but its first use imports sympy: seconds, on a loaded machine.)
    _ignore = _T.tensor([[[j >= n for j in range(_K)]] * _Q for n in (4, 1, 5) for _ in range(_H)])
    _out = _layer(_qN, _k, _v, _lens)
    with _torch.no_grad():
        _expected, _per_head = _torch_layer(
            _qN, _k, _v, attn_mask=_ignore, need_weights=True, average_attn_weights=False
        )
    checks.check_close(
        _layer.attention_weights.reshape(_B, _H, _Q, _K),
        _per_head,
        "attention_weights against torch.nn.MultiheadAttention (hidden, per head)",
        atol=1e-10,
        rtol=0,
        hint="rows b * H + i are head i of example b",
    )
    checks.check_close(
        _out, _expected, "output against torch.nn.MultiheadAttention (hidden)", atol=1e-10, rtol=0, hint=_hint
    )

    # With bias=True, each of the four projections has a bias, as torch's layer with bias=True (in_proj_bias for the
    # queries, keys and values, out_proj.bias): the same output with the same weights and biases.
    _torch_b = _torch.nn.MultiheadAttention(_N, _H, bias=True, batch_first=True, kdim=_dk, vdim=_dv).double()
    _torch_b.eval()
    _biases = [_T.randn(_N, generator=_g, dtype=_f64) for _ in _NAMES]
    _layer_b = _new_layer(_N, _H, 0.0, _N, _dk, _dv, bias=True)
    with _torch.no_grad():
        _torch_b.q_proj_weight.copy_(_tw[0])
        _torch_b.k_proj_weight.copy_(_tw[1])
        _torch_b.v_proj_weight.copy_(_tw[2])
        _torch_b.out_proj.weight.copy_(_tw[3])
        _torch_b.in_proj_bias.copy_(_T.cat(_biases[:3]))
        _torch_b.out_proj.bias.copy_(_biases[3])
        for _name, _w, _b in zip(_NAMES, _tw, _biases):
            _lin = getattr(_layer_b, _name)
            checks.check_true(
                getattr(_lin, "bias", None) is not None,
                f"with bias=True, {_name} has a bias (hidden)",
                hint="keep the constructor as given: nn.LazyLinear(num_hiddens, bias=bias)",
            )
            _lin.weight.copy_(_w)
            _lin.bias.copy_(_b)
        _expected_b, _ = _torch_b(_qN, _k, _v, attn_mask=_ignore, need_weights=False)
    checks.check_close(
        _layer_b(_qN, _k, _v, _lens),
        _expected_b,
        "output with bias=True against torch.nn.MultiheadAttention with the same biases (hidden)",
        atol=1e-10,
        rtol=0,
        hint="keep the constructor as given: the bias passed reaches all four projections",
    )

    # The gradients: the layer is trained through. With PyTorch's weights, the gradients of sum(output * G) with
    # respect to W_q, W_k, W_v and W_o must be PyTorch's (no gradient reaches W_q and W_k if the weights that
    # multiply the values were detached).
    _Gout = _T.randn(_B, _Q, _N, generator=_g, dtype=_f64)  # (B, Q, N)
    _torch_out, _ = _torch_layer(_qN, _k, _v, attn_mask=_ignore, need_weights=False)
    (_torch_out * _Gout).sum().backward()
    _theirs = (_torch_layer.q_proj_weight, _torch_layer.k_proj_weight, _torch_layer.v_proj_weight)
    _out = _layer(_qN, _k, _v, _lens)
    checks.check_shape(_out, (_B, _Q, _N), "output (hidden, queries of size N = 12)", hint="(B, Q, N)")
    (_out * _Gout).sum().backward()
    for _name, _want in zip(_NAMES, (*_theirs, _torch_layer.out_proj.weight)):
        _grad = getattr(_layer, _name).weight.grad
        checks.check_true(
            _grad is not None,
            f"a gradient reaches {_name} (hidden: the layer is trained through; none came back)",
            hint="do not detach the weights (or anything else) on the way from the projections to the output: "
            "multiply self.dropout(self.attention_weights) by the values",
        )
        checks.check_close(
            _grad,
            _want.grad,
            f"the gradient of {_name}.weight against torch.nn.MultiheadAttention's (hidden)",
            atol=1e-10,
            rtol=0,
            hint="the output must be a differentiable function of every projection; keep the graph whole",
        )

    # Dropout acts on the weights, in training mode only. W_q = W_k = 0 make every score 0, so each query gives its
    # 3 keys the weights 1/3; W_v = W_o = identity and the values 1, 10 and 100 make each output entry tell which
    # weights survived: (a + 10 b + 100 c) / (3 (1 - p)) with a, b, c in {0, 1}. Dropout on the output instead
    # gives only 0 or 111 / (3 (1 - p)).
    _p_drop = 0.3  # not the visible test's 0.5: the rate passed must reach self.dropout
    _layer = _new_layer(6, 3, _p_drop, 6, 6, 6)
    _eye, _zero = _T.eye(6, dtype=_f64), _T.zeros(6, 6, dtype=_f64)
    _set_weights(_layer, [_zero, _zero, _eye, _eye], "hidden, N = 6, H = 3")
    _vals = _T.tensor([[[1.0] * 6, [10.0] * 6, [100.0] * 6]], dtype=_f64)  # (1, K, N)
    _qd = _T.randn(1, 64, 6, generator=_g, dtype=_f64)
    _eval_out = _layer(_qd, _qd[:, :3], _vals)
    checks.check_close(
        _eval_out,
        _T.ones(1, 64, 6, dtype=_f64) * 37,
        "output in evaluation mode (hidden, equal scores)",
        atol=1e-10,
        rtol=0,
        hint="in evaluation mode self.dropout does nothing; do not call F.dropout without training=self.training",
    )
    _layer.train()
    _T.manual_seed(1154)
    _out = _layer(_qd, _qd[:, :3], _vals)
    checks.check_shape(_out, (1, 64, 6), "output in training mode (hidden, N = 6, H = 3)")
    checks.check_close(
        _layer.attention_weights,
        _T.ones(3, 64, 3, dtype=_f64) / 3,
        "attention_weights in training mode (hidden, equal scores)",
        atol=1e-12,
        rtol=0,
        hint="store the weights as they are before dropout",
    )
    _allowed = [(a + 10 * b + 100 * c) / (3 * (1 - _p_drop)) for a in (0, 1) for b in (0, 1) for c in (0, 1)]
    _got = [x for row in _out[0].tolist() for x in row]
    checks.check_true(
        all(min(abs(g - x) for x in _allowed) < 1e-9 for g in _got),
        f"in training mode, each output is the values weighted by dropped-out weights (w / (1 - p) or 0, p = "
        f"{_p_drop})",
        hint="keep self.dropout = nn.Dropout(dropout) as given, apply it to the attention weights, then multiply by "
        "the values",
    )
    checks.check_true(
        len({round(g, 6) for g in _got}) > 2,
        "in training mode, dropout zeroes single weights, not whole outputs",
        hint="apply self.dropout to the attention weights, not to the output",
    )

    # No loop over the heads: the number of matrix products must not depend on H.
    _counts = {}
    for _heads in (2, 8):
        _layer = _new_layer(16, _heads, 0.0, 16, 16, 16)
        _x = _T.randn(2, 3, 16, generator=_g, dtype=_f64)
        with _CountProducts() as _probe:
            _layer(_x, _x, _x, _T.tensor([2, 3]))
        _counts[_heads] = _probe.count
    checks.check_true(
        _counts[2] == _counts[8],
        f"the number of matrix products should not grow with the number of heads; with N = 16 your layer made "
        f"{_counts[2]} with 2 heads and {_counts[8]} with 8",
        hint="fold the heads into the batch (ref.transpose_qkv) and use one torch.bmm for the scores and one for "
        "the values, with no Python loop over the heads",
    )

# Devices: nothing in forward may tie it to the CPU: lengths read out into Python, or new tensors made without
# device=, fail or stall on a GPU.
_layer = _new_layer(8, 2, 0.0, 5, 6, 7)
for _name, _lens in (
    ("lengths per example (B,)", _T.tensor([1, 4])),
    ("lengths per query (B, Q)", _T.tensor([[1, 2, 4], [4, 3, 2]])),
):
    _inputs = (_T.zeros(2, 3, 5, dtype=_f64), _T.zeros(2, 4, 6, dtype=_f64), _T.zeros(2, 4, 7, dtype=_f64), _lens)
    with _HostProbe() as _probe:
        _layer(*_inputs)
    checks.check_true(
        not _probe.found,
        f"forward ({_name}) should keep every tensor on the inputs' device; it called "
        f"{', '.join(sorted(set(_probe.found)))}",
        hint="repeat the lengths with torch.repeat_interleave; do not read them out into Python (.tolist(), "
        ".item()) or make new tensors without device=",
    )
