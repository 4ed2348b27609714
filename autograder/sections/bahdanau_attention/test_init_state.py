# Hidden: float64 inputs whose entries are all different, the result compared with an explicit loop
# (enc_outputs[b][t] = outputs[t][b]); the state and the lengths unchanged; None lengths stay None; on the 'meta'
# device (as on a GPU) the result stays there. (Runs in the notebook, after its visible test.)
# Contract: the page's sentences each check relies on.
#   "Returns [enc_outputs, hidden_state, enc_valid_lens] as a list or a tuple," -> a list or a tuple of three
#   "the outputs batch-major, (B, T_src, N)" -> shape and entries, outputs[t][b] at [b][t]
#   "the final state (L, B, N) and the lengths, both as given" -> hidden_state and lengths unchanged
#   "enc_valid_lens: the source lengths (B,), or None (no padding)." -> None passed on as None
#   "Same dtype and device as the inputs, and nothing detached:" -> float64 kept; on 'meta' the result stays there
#   "the decoder's loss must reach the encoder through them." -> gradients reach outputs and hidden_state
#   "The inputs are left as they were." -> the encoder's outputs after the call
# Classes: each kind of mistake, and the check that catches it.
#   value -> enc_outputs entry by entry, outputs[t][b] at [b][t] (left time-major; a zero initial state)
#   dtype -> float64 kept (a float32 buffer filled step by step)
#   device -> on the 'meta' device the result stays there (a buffer made without device=)
#   pass-through -> hidden_state of every layer and the lengths, as given (the lengths dropped; the top layer only)
#   state -> the caller's outputs keep their shape and values (transposed in place, transpose_)
#   gradient -> gradients reach the encoder's outputs and final state unchanged (outputs or state .detach()ed)
#   type -> n/a: a list and a tuple of three are both right (variants.toml); each entry is checked as a tensor or None
#   edge -> enc_valid_lens=None passed on as None (a copy of the lengths that fails on None)
#   symmetry -> T_src = 4, B = 3, N = 5, every entry different: a reshape for the transpose mixes steps and examples
#   train-eval -> n/a: a function without a module, dropout or mode
#   efficiency -> n/a: the contract promises no time or memory bound (a transpose is a view)
import torch as _torch

_T = checks.trusted
_f64 = _T.float64
_out = _T.arange(4 * 3 * 5, dtype=_f64).reshape(4, 3, 5) / 7  # (T_src, B, N): every entry different
_hid = -_T.arange(2 * 3 * 5, dtype=_f64).reshape(2, 3, 5) / 3  # (L, B, N)
_lens = _T.tensor([4, 1, 2])
_out_before = _out.tolist()
_st = init_state((_out, _hid), _lens)
checks.check_true(
    tuple(_out.shape) == (4, 3, 5) and _out.tolist() == _out_before,
    "the encoder's outputs are left as they were, (T_src, B, N) (hidden)",
    hint="outputs.transpose(0, 1) returns a new view; transpose_ would change the caller's tensor",
)
checks.check_true(
    isinstance(_st, (list, tuple)) and len(_st) == 3,
    "init_state returns [enc_outputs, hidden_state, enc_valid_lens] as a list or a tuple (hidden, T_src = 4, B = 3)",
    hint="return the three in a list (or a tuple)",
)
_rows = _out.tolist()
_expected = _T.tensor([[_rows[t][b] for t in range(4)] for b in range(3)], dtype=_f64)  # (B, T_src, N)
checks.check_shape(
    _st[0], (3, 4, 5), "enc_outputs (hidden, T_src = 4, B = 3, N = 5)", hint="(T_src, B, N) -> (B, T_src, N)"
)
checks.check_close(
    _st[0],
    _expected,
    "enc_outputs (hidden, float64)",
    atol=0,
    rtol=0,
    hint="enc_outputs[b, t] must be outputs[t, b]: transpose, do not reshape",
)
checks.check_true(_st[0].dtype == _f64, "enc_outputs keeps the float64 dtype", hint="do not convert the outputs")
checks.check_close(
    _st[1],
    _hid,
    "hidden_state (hidden, L = 2)",
    atol=0,
    rtol=0,
    hint="the encoder's final state of every layer, unchanged, is the decoder's initial state",
)
checks.check_close(_st[2], _lens, "enc_valid_lens (hidden)", atol=0, rtol=0, hint="return the lengths you were given")
_st_none = init_state((_out, _hid))
checks.check_true(_st_none[2] is None, "enc_valid_lens=None is passed on as None", hint="return the lengths as given")
_meta = init_state(
    (_T.zeros(6, 2, 3, device="meta"), _T.zeros(3, 2, 3, device="meta")), _T.zeros(2, dtype=_T.long, device="meta")
)
checks.check_true(
    _meta[0].device.type == "meta" and tuple(_meta[0].shape) == (2, 6, 3),
    "on the 'meta' device (as on a GPU), enc_outputs stays there, of shape (B, T_src, N)",
    hint="use only tensor operations of the outputs themselves (transpose); create nothing on the CPU",
)
# Gradients: the decoder is trained through this state, and the loss must reach the encoder through both the outputs
# (attention's keys and values) and the final state (the decoder's first state).
_o_g, _h_g = _out.clone().requires_grad_(), _hid.clone().requires_grad_()
_st_g = init_state((_o_g, _h_g), _lens)
_hint_g = "return the outputs and the state as tensor operations of the inputs: no .detach(), .data or torch.no_grad()"
checks.check_true(
    getattr(_st_g[0], "requires_grad", False) is True and getattr(_st_g[1], "requires_grad", False) is True,
    "enc_outputs and hidden_state of an encoder being trained carry its gradient (hidden)",
    hint=_hint_g,
)
_gen = _T.Generator().manual_seed(1141)
_R0 = _T.randn(3, 4, 5, generator=_gen, dtype=_f64)  # (B, T_src, N)
_R1 = _T.randn(2, 3, 5, generator=_gen, dtype=_f64)  # (L, B, N)
_g_out, _g_hid = _torch.autograd.grad((_st_g[0] * _R0).sum() + (_st_g[1] * _R1).sum(), (_o_g, _h_g), allow_unused=True)
checks.check_true(_g_out is not None and _g_hid is not None, "the gradient reaches the encoder (hidden)", hint=_hint_g)
checks.check_close(
    _g_out, _R0.transpose(0, 1), "the gradient of the encoder's outputs (hidden)", atol=0, rtol=0, hint=_hint_g
)
checks.check_close(_g_hid, _R1, "the gradient of the encoder's final state (hidden)", atol=0, rtol=0, hint=_hint_g)
