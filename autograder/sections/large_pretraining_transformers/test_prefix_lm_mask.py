# Hidden: prefix lengths 0, 1, 4 and 8 of T = 8, and an encoder-decoder with T_src = 6, T_tgt = 3, B = 3 (a zero
# length among them), against masks built by loops; no call to qkv's masks.
_refs = [(_qp, n) for n in ("prefix_lm_mask", "encoder_decoder_masks", "causal_mask", "bidirectional_mask")]
with checks.forbid_reference(prefix_lm_mask, *_refs):
    for _P in (0, 1, 4, 8):
        _m = prefix_lm_mask(8, _P)
        _is_tensor(_m, f"prefix_lm_mask(8, {_P}) (hidden)", (_T.bool,), "return a bool tensor")
        checks.check_close(
            _m,
            _loop_mask(8, 8, lambda i, j, P=_P: j <= i or j < P),
            f"prefix_lm_mask(8, {_P}) (hidden)",
            hint="a key in the prefix is seen by every query; after it, causal",
        )
_lens = [6, 2, 0]
with checks.forbid_reference(encoder_decoder_masks, *_refs):
    _enc, _dec, _cross = encoder_decoder_masks(6, 3, _T.tensor(_lens))
for _name, _x in [("enc", _enc), ("dec", _dec), ("cross", _cross)]:
    _is_tensor(_x, f"{_name} (hidden)", (_T.bool,), "return bool tensors")
checks.check_close(
    _enc,
    _T.stack([_loop_mask(6, 6, lambda i, j, L=L: j < L) for L in _lens]),
    "enc (hidden, T_src = 6, lengths 6, 2, 0)",
    hint="bidirectional over the valid source keys",
)
checks.check_close(_dec, _loop_mask(3, 3, lambda i, j: j <= i), "dec (hidden, T_tgt = 3)", hint="causal")
checks.check_close(
    _cross,
    _T.stack([_loop_mask(3, 6, lambda i, j, L=L: j < L) for L in _lens]),
    "cross (hidden, 3 target queries x 6 source keys)",
    hint="(B, T_tgt, T_src); every target query sees every valid source key",
)
