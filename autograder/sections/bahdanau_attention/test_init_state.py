# Hidden: float64 inputs whose entries are all different, the result compared with an explicit loop
# (enc_outputs[b][t] = outputs[t][b]); the state and the lengths unchanged; None lengths stay None; on the 'meta'
# device (as on a GPU) the result stays there. (Runs in the notebook, after its visible test.)
# Contract: the page's sentences each check relies on.
#   "Returns the list [enc_outputs, hidden_state, enc_valid_lens]" -> a list of three
#   "the outputs batch-major, (B, T_src, N)" -> shape and entries, outputs[t][b] at [b][t]
#   "the final state (L, B, N) and the lengths, both as given" -> hidden_state and lengths unchanged
#   "enc_valid_lens: the source lengths (B,), or None (no padding)." -> None passed on as None
#   "Same dtype and device as the inputs." -> float64 kept; on 'meta' the result stays there
_T = checks.trusted
_f64 = _T.float64
_out = _T.arange(4 * 3 * 5, dtype=_f64).reshape(4, 3, 5) / 7  # (T_src, B, N): every entry different
_hid = -_T.arange(2 * 3 * 5, dtype=_f64).reshape(2, 3, 5) / 3  # (L, B, N)
_lens = _T.tensor([4, 1, 2])
_st = init_state((_out, _hid), _lens)
checks.check_true(
    isinstance(_st, (list, tuple)) and len(_st) == 3,
    "init_state returns [enc_outputs, hidden_state, enc_valid_lens] (hidden, T_src = 4, B = 3, N = 5)",
    hint="return a list of the three",
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
