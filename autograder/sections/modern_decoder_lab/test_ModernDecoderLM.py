# Hidden: against the course's ModernDecoderLM with the same weights, loaded by name, for two configurations (2
# blocks, 2 of 4 key/value heads, tied; 3 blocks, 1 key/value head, rope_base 100, eps 0.01, SwiGLU of 24, untied);
# decoding in chunks of 5, 4 and 3 through the caches against one call; the caches' number and shapes; the list of
# caches passed in unchanged; a ValueError past max_len and for no tokens; the weights drawn with standard deviation
# 0.02; no call to the reference.
# Contract: the page's sentences each check relies on.
#   "self.token_embedding = nn.Embedding(vocab_size, num_hiddens);" -> names and shapes by load_exact
#   "self.blks = nn.ModuleList of num_blks modern.ModernDecoderBlock(" -> 2 and 3 blocks, by name
#   "num_hiddens, num_heads, num_kv_heads, ffn_num_hiddens, max_len," -> G = 2 and 1, SwiGLU of 24: the shapes
#   "rope_base, eps);" -> rope_base 100 and eps 0.01 against the reference
#   "self.norm_f = modern.RMSNorm(num_hiddens, eps);" -> the final norm, by name
#   "self.head = nn.Linear(num_hiddens, vocab_size, bias=False), its" -> no head bias
#   "weight the embedding's own when config.tie_weights." -> tied: the same tensor; untied: two
#   "the linear layers and the embedding drawn from N(0, 0.02^2)." -> the embedding, W_q, a W_down: std 0.02
#   "the previous call returned, one LayerCache per" -> chunks of 5, 4 and 3; one cache per block
#   "start) -> (logits (B, T, vocab_size), the new list of caches)." -> logits against the reference
#   "ValueError if the cached and new tokens together are more than" -> 12 cached + 1 new with max_len 12
#   "max_len, or if T is 0." -> an empty X
# Classes: each kind of mistake, and the check that catches it.
#   value -> logits against the reference (no_final_norm); the linear layers' initialisation (embedding_only_init)
#   dtype -> n/a: the modules follow .double(); float64 logits are checked with the values
#   device -> n/a: decode makes no tensor of its own; its modules follow .to(device)
#   pass-through -> num_kv_heads, rope_base, eps and ffn_num_hiddens reach the blocks (kv_heads_ignored)
#   state -> the list of caches passed in unchanged (caches_written_in_place)
#   gradient -> n/a: embedding, the course's blocks and a linear head; nothing invites cutting the graph
#   type -> the head tied to the embedding when tie_weights, and not otherwise (head_never_tied)
#   edge -> a ValueError past max_len and for an empty X (no_length_check)
#   symmetry -> each block gets its own cache, in order: 3 blocks (caches_in_reverse)
#   train-eval -> n/a: no dropout, the same in both modes
#   efficiency -> n/a: the contract promises no time or memory
from _common import _T, _f64, _load, _md  # the section's shared helpers (the assembler inlines _common.py)

_g = _T.Generator().manual_seed(2604)

_configs = (
    ModernConfig(vocab_size=13, num_hiddens=16, num_heads=4, num_kv_heads=2, num_blks=2, max_len=12),
    ModernConfig(
        vocab_size=13,
        num_hiddens=24,
        num_heads=4,
        num_kv_heads=1,
        num_blks=3,
        ffn_num_hiddens=24,
        max_len=12,
        rope_base=100.0,
        eps=0.01,
        tie_weights=False,
    ),  # fmt: skip
)
_refs = [_md.ModernDecoderLM(_c).double() for _c in _configs]  # built before the answer runs

with checks.forbid_reference(ModernDecoderLM, (_md, "ModernDecoderLM")):
    _big = ModernDecoderLM(ModernConfig(vocab_size=500, num_hiddens=80, num_blks=1))
    _parts = {
        "the embedding": _big.token_embedding.weight,
        "W_q of block 0": _big.blks[0].W_q.weight,
        "SwiGLU's W_down of block 0": _big.blks[0].ffn.W_down.weight,
    }
    for _part, _weight in _parts.items():
        _std = float(_weight.detach().std())
        checks.check_true(
            abs(_std - 0.02) < 0.002,
            f"{_part} drawn with standard deviation 0.02 (hidden), got {_std:.4f}",
            hint="nn.init.normal_(weight, mean=0.0, std=0.02), each nn.Linear and nn.Embedding",
        )
    for _c, _ref in zip(_configs, _refs):
        _lm = ModernDecoderLM(_c).double()
        _what = f"ModernDecoderLM({_c.num_blks} blocks, {_c.num_kv_heads} key/value heads)"
        checks.check_true(
            (_lm.head.weight is _lm.token_embedding.weight) == _c.tie_weights,
            f"{_what}: the head {'is' if _c.tie_weights else 'is not'} the embedding's weight (hidden)",
            hint="self.head.weight = self.token_embedding.weight only when config.tie_weights",
        )
        _w = {k: _T.randn(v.shape, generator=_g, dtype=_f64) * 0.3 for k, v in _ref.state_dict().items()}
        if _c.tie_weights:
            _w["head.weight"] = _w["token_embedding.weight"]
        _load(_lm, _w, f"{_what}: the docstring's parts, by name (hidden)")
        _ref.load_state_dict(_w)
        _X = _T.randint(0, 13, (2, 12), generator=_g)
        _want = _ref(_X)
        checks.check_close(_lm(_X), _want, f"{_what}(X) against the course's model (hidden)", atol=1e-9, rtol=1e-7,
                           hint="embedding, the blocks, norm_f, head")  # fmt: skip
        _pieces, _caches, _start = [], None, 0
        for _size in (5, 4, 3):
            _before = None if _caches is None else list(_caches)
            _logits, _new = _lm.decode(_X[:, _start : _start + _size], _caches)
            if _before is not None:
                checks.check_true(
                    len(_caches) == len(_before) and all(a is b for a, b in zip(_caches, _before)),
                    "the list of caches passed in is not changed (hidden)",
                    hint="build a new list of caches; do not write into the one given",
                )
            checks.check_true(len(_new) == _c.num_blks, f"one cache per block, {_c.num_blks} (hidden)")
            _pieces.append(_logits)
            _caches, _start = _new, _start + _size
        checks.check_close(_T.cat(_pieces, dim=1), _want, f"{_what} decoded in chunks of 5, 4 and 3 (hidden)",
                           atol=1e-9, rtol=1e-7, hint="block i gets caches[i]; new ones in order")  # fmt: skip
        for _bad, _after, _why in ((_X[:, :1], _caches, "12 cached + 1 new > max_len"),
                                   (_X[:, :0], None, "no tokens")):  # fmt: skip
            try:
                _lm.decode(_bad, _after)
                _refused = False
            except ValueError:
                _refused = True
            checks.check_true(_refused, f"decode raises a ValueError for {_why} (hidden)")
