# Hidden: prefix lengths 0, 1, 4 and 8 of T = 8, and an encoder-decoder with T_src = 6, T_tgt = 3, B = 3 (a zero
# length among them), against masks built by loops; no call to qkv's masks.
# Contract: the page's sentences each check relies on.
#   "T: int; prefix_len: int in [0, T]. Returns a bool (T, T) tensor with" -> prefix lengths 0, 1, 4, 8 of T = 8
#   "mask[i, j] = (j <= i) or (j < prefix_len): the prefix is bidirectional," -> every entry, against loops
#   "src_valid_lens: long (B,). Returns (enc, dec, cross), all bool and all" -> bool dtypes, lengths 6, 2, 0
#   "on src_valid_lens' device:" -> 'meta' as the default device around CPU lengths, then lengths on 'meta'
#   "enc (B, T_src, T_src), enc[b, i, j] = j < src_valid_lens[b];" -> enc against loops
#   "dec (T_tgt, T_tgt), dec[i, j] = j <= i;" -> dec against loops
#   "cross (B, T_tgt, T_src), cross[b, i, j] = j < src_valid_lens[b]." -> cross against loops
#   "the grader refuses an answer that calls the course's own version of it" -> qkv.pretraining's masks not called
# Classes: each kind of mistake, and the check that catches it.
#   value -> every entry of the four masks against masks built by loops
#   dtype -> all bool (a causal mask made as the tril of a tensor of ones is float)
#   device -> encoder_decoder_masks on the lengths' device, 'meta' as a second device (masks_on_the_default_device)
#   pass-through -> src_valid_lens 6, 2, 0 in enc and cross; prefix_len 0, 1, 4 and 8
#   state -> n/a: new tensors made from sizes and lengths; there is nothing to keep or change
#   gradient -> n/a: boolean masks; nothing is trained through them
#   type -> n/a: the outputs are tensors; their dtype is the dtype class
#   edge -> prefix_len 0 (causal) and T (bidirectional); a source length of 0
#   symmetry -> T_src = 6 and T_tgt = 3: a cross mask (B, T_src, T_tgt), or the prefix as a column, differs
#   train-eval -> n/a: functions with no training behaviour
#   efficiency -> n/a: the contract promises no time or memory beyond the masks
from _common import _T, _is_tensor, _loop_mask, _qp  # the section's shared helpers (the assembler inlines _common.py)
from _shared import _device_probe  # the course's shared probes (the assembler inlines autograder/sections/_shared.py)

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
with checks.forbid_reference(encoder_decoder_masks, *_refs):
    _problem = _device_probe(
        lambda: encoder_decoder_masks(6, 3, _T.tensor(_lens, device="cpu")),
        lambda: encoder_decoder_masks(6, 3, _T.tensor(_lens, device="meta")),
        "encoder_decoder_masks",
    )
checks.check_true(
    _problem is None,
    "encoder_decoder_masks makes its masks on src_valid_lens' device (hidden)",
    hint=f"{_problem}; torch.arange(T_src, device=src_valid_lens.device), and the same for T_tgt",
)
