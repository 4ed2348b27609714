# Hidden: V = 50 with 5 special ids (mask id 3), 64 x 300 tokens of which about 10% special, seed 2024; the rates
# against their probabilities by exact binomial tests (_shared._rate_problem: a right answer fails one less than once
# in 1e8 gradings): 15% chosen, and among the chosen 80% <mask>, 10% random (drawn uniformly from the ordinary ids,
# so 1 in 45 equals the original) and 10% kept; the chosen counts per row spread as independent draws do (a fixed
# count per row has the same mean and no spread: _shared._spread_problem); with V = 8 and 5 special ids, the random
# draws reach each of the 3 ordinary ids, the first and the last included (a right answer misses one with
# probability below 3 (1 - 0.15 * 0.1 * 2 / 9)^19200 < 1e-27); the generator alone decides the result.
# Contract: the page's sentences each check relies on.
#   "ids < num_special are special tokens and are never chosen." -> specials never chosen or changed
#   "Each other token is chosen with probability 0.15, independently;" -> share chosen; spread of the rows' counts
#   "a chosen token becomes mask_id with probability 0.8," -> share made <mask>
#   "a random id drawn uniformly from [num_special, vocab_size)" -> ids in range; V = 8: ids 5, 6 and 7 all reached
#   "with probability 0.1," -> share replaced (1 in 45 is the original)
#   "and stays as it is otherwise." -> share unchanged
#   "Draw every random number with `generator` (CPU), in the order you like" -> same generator state, same result
#   "the same generator state gives the same result, but no particular draw is expected" -> two calls, one seed
#   "only these probabilities and rules are graded, never one exact draw." -> rates and rules only; no draw compared
#   "(tokens itself is left unchanged)" -> tokens after the call
#   "labels the original token where chosen and IGNORE_INDEX (-100) elsewhere." -> labels; long dtypes
#   "the grader refuses an answer that calls the course's own version of it" -> qkv.corruption.mask_tokens not called
# Classes: each kind of mistake, and the check that catches it.
#   value -> the rates (15% chosen, spread per row; 80% <mask>, 10% random, 10% kept) and labels only where chosen
#   dtype -> inputs and labels are long tensors
#   device -> n/a: every draw is the CPU generator's; the contract names no other device
#   pass-through -> generator (the same state gives the same result); num_special (random ids from [num_special, V))
#   state -> tokens itself is unchanged after the call
#   gradient -> n/a: token ids; nothing is trained through them
#   type -> n/a: two tensors; their dtype is the dtype class
#   edge -> special tokens (about 10% of them): never chosen or changed
#   symmetry -> n/a: the contract treats the two 10% cases alike (which range of u draws the random id is free)
#   train-eval -> n/a: a function with no training behaviour
#   efficiency -> n/a: the contract promises no time or memory
from _common import _T, _is_tensor, _qc  # the section's shared helpers (the assembler inlines _common.py)
from _shared import _rate_problem, _spread_problem  # the course's laws of random draws (assembler inlines _shared.py)

_g = _T.Generator().manual_seed(2024)
_tok = _T.randint(5, 50, (64, 300), generator=_g)
_spec = _T.rand(64, 300, generator=_g) < 0.1  # (B, T)
_tok = _T.where(_spec, _T.randint(0, 5, (64, 300), generator=_g), _tok)
_special = _tok < 5
_kept_tok = _tok.clone()
with checks.forbid_reference(mask_tokens, (_qc, "mask_tokens")):
    _inp, _lab = mask_tokens(_tok, 3, 50, 5, generator=_T.Generator().manual_seed(7))
    _inp2, _lab2 = mask_tokens(_tok, 3, 50, 5, generator=_T.Generator().manual_seed(7))
checks.check_close(
    _tok,
    _kept_tok,
    "tokens after the call (hidden)",
    atol=0,
    rtol=0,
    hint="build new tensors; do not write into tokens",
)
_is_tensor(_inp, "inputs (hidden)", (_T.long,), "long token ids")
_is_tensor(_lab, "labels (hidden)", (_T.long,), "long labels, -100 where not chosen")
checks.check_shape(_inp, (64, 300), "inputs (hidden)")
checks.check_true(
    bool((_inp == _inp2).all()) and bool((_lab == _lab2).all()),
    "the same generator state gives the same result (hidden)",
    hint="draw every random number with generator=generator",
)
_ch = (_lab != -100).tolist()
_t, _i, _l = _tok.tolist(), _inp.tolist(), _lab.tolist()
_n_ord = _n_ch = _n_mask = _n_same = _n_rand = 0
_row_chosen, _row_ordinary = [0] * 64, [0] * 64
for _b in range(64):
    for _s in range(300):
        _tt, _ii, _ll, _c = _t[_b][_s], _i[_b][_s], _l[_b][_s], _ch[_b][_s]
        if _tt < 5:
            checks.check_true(
                not _c and _ii == _tt,
                "special tokens are never chosen or changed (hidden)",
                hint="ids < num_special are special",
            )
            continue
        _n_ord += 1
        _row_ordinary[_b] += 1
        if not _c:
            checks.check_true(
                _ii == _tt and _ll == -100,
                "a token that is not chosen stays, label -100 (hidden)",
                hint="the 80/10/10 rule applies to chosen tokens only; labels only there",
            )
            continue
        checks.check_true(_ll == _tt, "a chosen token's label is the original token (hidden)")
        _n_ch += 1
        _row_chosen[_b] += 1
        if _ii == 3:
            _n_mask += 1
        elif _ii == _tt:
            _n_same += 1
        else:
            _n_rand += 1
            checks.check_true(
                5 <= _ii < 50,
                "random replacements are ordinary ids (hidden)",
                hint="torch.randint(num_special, vocab_size, ...)",
            )


for _count, _total, _p, _what, _hint in [
    (_n_ch, _n_ord, 0.15, "share of ordinary tokens chosen", "choose each with probability 0.15"),
    (_n_mask, _n_ch, 0.8, "share of chosen tokens made <mask>", "u < 0.8: <mask>"),
    (_n_rand, _n_ch, 0.1 * 44 / 45, "share of chosen tokens replaced by another token", "0.8 <= u < 0.9"),
    (_n_same, _n_ch, 0.1 + 0.1 / 45, "share of chosen tokens left unchanged", "0.9 <= u: unchanged"),
]:
    _problem = _rate_problem(_count, _total, _p, _what)
    checks.check_true(_problem is None, f"{_problem} (hidden)", hint=_hint)
_problem = _spread_problem(_row_chosen, _row_ordinary, 0.15, "ordinary tokens chosen per row")
checks.check_true(
    _problem is None,
    f"{_problem} (hidden)",
    hint="draw one uniform number per token and compare it with 0.15: each token is chosen on its own",
)
# V = 8, ids 0-4 special: every token ordinary, the random draws from {5, 6, 7}; each must appear.
_few = _T.randint(5, 8, (64, 300), generator=_T.Generator().manual_seed(11))
_inp3, _ = mask_tokens(_few, 3, 8, 5, generator=_T.Generator().manual_seed(12))
_seen = set(_inp3[(_inp3 != _few) & (_inp3 != 3)].tolist())
checks.check_true(
    _seen == {5, 6, 7},
    f"with vocab_size 8 and num_special 5, the random replacements are {sorted(_seen)}, not all of 5, 6 and 7 (hidden)",
    hint="draw uniformly from [num_special, vocab_size): torch.randint's high end is excluded, so pass vocab_size",
)
