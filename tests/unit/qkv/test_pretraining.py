"""Tests of qkv.pretraining (D2L 11.9): attention masks against loops, the decoder-only language model against the
same network built from PyTorch's own layers, padding, prefixes, generation and a small training run."""

from __future__ import annotations

import copy

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn

from qkv.attention import masked_softmax
from qkv.multihead import MultiHeadAttention
from qkv.pretraining import (
    DecoderOnlyLM,
    GPTConfig,
    bidirectional_mask,
    causal_mask,
    encoder_decoder_masks,
    prefix_lm_mask,
)

# ---------------------------------------------------------------- masks, against loops written here


def loop_mask(T_q, T_k, allowed, lens=None):
    """mask[b, i, j] = allowed(b, i, j) and j < lens[b], built one entry at a time."""
    B = 1 if lens is None else len(lens)
    mask = torch.zeros(B, T_q, T_k, dtype=torch.bool)
    for b in range(B):
        for i in range(T_q):
            for j in range(T_k):
                mask[b, i, j] = allowed(b, i, j) and (lens is None or j < lens[b])
    return mask if lens is not None else mask[0]


lengths = st.integers(1, 7).flatmap(
    lambda T: st.tuples(st.just(T), st.lists(st.integers(0, T), min_size=1, max_size=3))
)


@settings(max_examples=30, deadline=None)
@given(lengths)
def test_bidirectional_and_causal_masks_match_loops(T_lens):
    T, lens = T_lens
    assert torch.equal(bidirectional_mask(T), loop_mask(T, T, lambda b, i, j: True))
    assert torch.equal(bidirectional_mask(T, torch.tensor(lens)), loop_mask(T, T, lambda b, i, j: True, lens))
    assert torch.equal(causal_mask(T), loop_mask(T, T, lambda b, i, j: j <= i))
    assert torch.equal(causal_mask(T, torch.tensor(lens)), loop_mask(T, T, lambda b, i, j: j <= i, lens))


@settings(max_examples=30, deadline=None)
@given(lengths, st.data())
def test_prefix_lm_mask_matches_loop(T_lens, data):
    T, lens = T_lens
    p = data.draw(st.integers(0, T))
    assert torch.equal(prefix_lm_mask(T, p), loop_mask(T, T, lambda b, i, j: j <= i or j < p))
    assert torch.equal(prefix_lm_mask(T, p, lens), loop_mask(T, T, lambda b, i, j: j <= i or j < p, lens))
    prefixes = data.draw(st.lists(st.integers(0, T), min_size=len(lens), max_size=len(lens)))
    expected = loop_mask(T, T, lambda b, i, j: j <= i or j < prefixes[b], lens)
    assert torch.equal(prefix_lm_mask(T, torch.tensor(prefixes), torch.tensor(lens)), expected)
    no_pad = loop_mask(T, T, lambda b, i, j: j <= i or j < prefixes[b], [T] * len(lens))
    assert torch.equal(prefix_lm_mask(T, torch.tensor(prefixes)), no_pad)


def test_prefix_lm_mask_limits():
    """Prefix 0 or 1 is the causal mask, a prefix of T the bidirectional one."""
    for p in (0, 1):
        assert torch.equal(prefix_lm_mask(6, p), causal_mask(6))
    assert torch.equal(prefix_lm_mask(6, 6), bidirectional_mask(6))


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 6), st.integers(1, 6), st.data())
def test_encoder_decoder_masks_match_loops(T_src, T_tgt, data):
    B = data.draw(st.integers(1, 3))
    src = data.draw(st.lists(st.integers(0, T_src), min_size=B, max_size=B))
    tgt = data.draw(st.lists(st.integers(0, T_tgt), min_size=B, max_size=B))
    enc, dec, cross = encoder_decoder_masks(T_src, T_tgt, torch.tensor(src), torch.tensor(tgt))
    assert torch.equal(enc, loop_mask(T_src, T_src, lambda b, i, j: True, src))
    assert torch.equal(dec, loop_mask(T_tgt, T_tgt, lambda b, i, j: j <= i, tgt))
    assert torch.equal(cross, loop_mask(T_tgt, T_src, lambda b, i, j: True, src))  # rows: target queries
    masks = encoder_decoder_masks(T_src, T_tgt)
    assert masks.encoder.shape == (T_src, T_src) and masks.cross.shape == (T_tgt, T_src) and masks.cross.all()
    assert torch.equal(masks.decoder, loop_mask(T_tgt, T_tgt, lambda b, i, j: j <= i))


def test_mask_errors():
    with pytest.raises(ValueError, match="positive int"):
        causal_mask(0)
    with pytest.raises(ValueError, match=r"lie in \[0, 4\]"):
        causal_mask(4, torch.tensor([5]))
    with pytest.raises(TypeError, match="integer lengths"):
        bidirectional_mask(4, torch.tensor([2.0]))
    with pytest.raises(ValueError, match="shape \\(B,\\)"):
        bidirectional_mask(4, torch.tensor([[2]]))
    with pytest.raises(ValueError, match="prefix_len"):
        prefix_lm_mask(4, 5)
    with pytest.raises(ValueError, match="one entry per example"):
        prefix_lm_mask(4, torch.tensor([1, 2]), torch.tensor([4]))


@pytest.mark.parametrize(
    "mask",
    [
        causal_mask(5),
        causal_mask(5, torch.tensor([5, 3])),
        prefix_lm_mask(5, torch.tensor([2, 4]), [4, 5]),
        bidirectional_mask(5, torch.tensor([1, 4])),
    ],
    ids=["causal", "causal+pad", "prefix+pad", "bidirectional+pad"],
)
def test_masked_keys_get_exactly_zero_attention(mask):
    """Passed as valid_lens, a mask gives weight 0 where it is False, for every head; rows still sum to 1."""
    torch.manual_seed(0)
    B, T, N, H = 2, 5, 8, 2
    attention = MultiHeadAttention(N, H, dropout=0.0, query_size=N, key_size=N, value_size=N).eval()
    X = torch.randn(B, T, N)
    attention(X, X, X, mask)
    weights = attention.attention.attention_weights.reshape(B, H, T, T)  # (B * H, Q, K) -> (B, H, Q, K)
    full = mask.expand(B, T, T)[:, None]  # (B, 1, Q, K)
    assert torch.all(weights.masked_select(~full.expand_as(weights)) == 0)
    assert torch.all(weights.masked_select(full.expand_as(weights)) > 0)
    torch.testing.assert_close(weights.sum(-1), torch.ones(B, H, T))
    # masked_softmax takes the same masks directly.
    scores = torch.randn(B, T, T)
    probs = masked_softmax(scores, mask)
    assert torch.all(probs.masked_select(~mask.expand(B, T, T)) == 0)


# ---------------------------------------------------------------- the decoder-only LM


def tiny_lm(**kw) -> DecoderOnlyLM:
    args = dict(vocab_size=11, num_hiddens=16, num_heads=2, num_blks=2, ffn_num_hiddens=32, dropout=0.0, max_len=12)
    args.update(kw)
    return DecoderOnlyLM(GPTConfig(**args))


def test_forward_shape_and_tied_weights():
    torch.manual_seed(0)
    model = tiny_lm()
    X = torch.randint(0, 11, (3, 7))
    assert model(X).shape == (3, 7, 11)
    assert model.head.weight is model.token_embedding.weight
    untied = tiny_lm(tie_weights=False)
    assert untied.head.weight is not untied.token_embedding.weight
    n_tied, n_untied = (sum(p.numel() for p in m.parameters()) for m in (model, untied))
    assert n_untied - n_tied == 11 * 16


# ---------------------------------------------------------------- the decoder-only LM against PyTorch's own layers


@torch.no_grad()
def scramble(model: DecoderOnlyLM) -> DecoderOnlyLM:
    """Weights far from GPT-2's small init and LayerNorms far from the identity, so that every part of the
    computation (positions, residuals, norms, GELU's negative side, biases) moves the logits visibly."""
    for name, p in model.named_parameters():
        if (".ln" in name or name.startswith("ln_f")) and name.endswith("weight"):
            p.uniform_(0.5, 1.5)
        elif ".ln" in name or name.startswith("ln_f"):
            p.uniform_(-0.5, 0.5)
        else:
            p.normal_(0.0, 0.4)
    return model


@torch.no_grad()
def reference_gpt(model: DecoderOnlyLM) -> nn.ModuleDict:
    """The same network assembled from PyTorch built-ins, holding copies of ``model``'s weights.

    A pre-norm ``nn.TransformerEncoderLayer`` with GELU computes ``X + attn(LN1(X))`` then ``X + FFN(LN2(X))``,
    as a GPT block does; ``in_proj_weight`` (3N, N) stacks W_q, W_k, W_v, and torch splits heads the same way.
    """
    c = model.config
    ref = nn.ModuleDict(
        {
            "tokens": nn.Embedding.from_pretrained(model.token_embedding.weight.clone()),  # (V, N)
            "positions": nn.Embedding.from_pretrained(model.pos_embedding.weight.clone()),  # (max_len, N)
            "ln_f": nn.LayerNorm(c.num_hiddens),
            "head": nn.Linear(c.num_hiddens, c.vocab_size, bias=False),
            "layers": nn.ModuleList(),
        }
    )
    ref.ln_f.load_state_dict(model.ln_f.state_dict())
    ref.head.weight.copy_(model.head.weight)  # (V, N): the token embedding itself when the weights are tied
    for blk in model.blks:
        layer = nn.TransformerEncoderLayer(
            c.num_hiddens, c.num_heads, c.ffn_num_hiddens, 0.0, "gelu", batch_first=True, norm_first=True
        )
        att, zeros = blk.attention, torch.zeros(c.num_hiddens)
        layer.self_attn.in_proj_weight.copy_(torch.cat([att.W_q.weight, att.W_k.weight, att.W_v.weight]))  # (3N, N)
        biases = [W.bias if W.bias is not None else zeros for W in (att.W_q, att.W_k, att.W_v)]
        layer.self_attn.in_proj_bias.copy_(torch.cat(biases))  # (3N,)
        layer.self_attn.out_proj.weight.copy_(att.W_o.weight)
        layer.self_attn.out_proj.bias.copy_(att.W_o.bias if att.W_o.bias is not None else zeros)
        layer.linear1.load_state_dict(blk.ffn[0].state_dict())
        layer.linear2.load_state_dict(blk.ffn[2].state_dict())
        layer.norm1.load_state_dict(blk.ln1.state_dict())
        layer.norm2.load_state_dict(blk.ln2.state_dict())
        ref.layers.append(layer)
    return ref.double().train()  # dropout is 0; train mode keeps PyTorch off its fused inference path


def reference_logits(ref: nn.ModuleDict, X: torch.Tensor, valid_lens=None, prefix_len=None) -> torch.Tensor:
    """Logits (B, T, V) of :func:`reference_gpt`; the masks are built here, in torch's convention (True = blocked)."""
    B, T = X.shape
    i, j = torch.arange(T)[:, None], torch.arange(T)[None, :]  # queries (T, 1), keys (1, T)
    blocked = j > i  # (T, T): the future
    if prefix_len is not None:
        prefix = torch.as_tensor(prefix_len).reshape(-1, 1, 1)  # (1 or B, 1, 1)
        blocked = blocked & (j >= prefix)  # (1 or B, T, T): the prefix is visible from everywhere
        num_heads = ref.layers[0].self_attn.num_heads
        blocked = blocked.expand(B, T, T).repeat_interleave(num_heads, dim=0)  # (B * H, T, T), torch's layout
    padding = None if valid_lens is None else j >= torch.as_tensor(valid_lens)[:, None]  # (B, T)
    H = ref.tokens(X) + ref.positions(torch.arange(T))  # (B, T, N) + (T, N)
    for layer in ref.layers:
        H = layer(H, src_mask=blocked, src_key_padding_mask=padding)  # (B, T, N)
    return ref.head(ref.ln_f(H))  # (B, T, N) -> (B, T, V)


gpt_shapes = st.fixed_dictionaries(
    {
        "B": st.integers(1, 3),
        "T": st.integers(1, 9),
        "num_heads": st.sampled_from([1, 2, 4]),
        "head_size": st.integers(2, 5),
        "num_blks": st.integers(1, 2),
        "ffn_num_hiddens": st.integers(3, 20),
        "use_bias": st.booleans(),
        "tie_weights": st.booleans(),
        "padded": st.booleans(),
    }
)


@settings(max_examples=20, deadline=None)
@given(gpt_shapes, st.data())
def test_lm_matches_pytorch_reference(shape, data):
    """Logits equal those of the same network built from nn.TransformerEncoderLayer (pre-norm, GELU), with
    the causal mask and, when padded, a key-padding mask: at every position, padded queries included."""
    torch.manual_seed(data.draw(st.integers(0, 2**16), label="seed"))
    B, T, H = shape["B"], shape["T"], shape["num_heads"]
    model = tiny_lm(
        vocab_size=13,
        num_hiddens=H * shape["head_size"],
        num_heads=H,
        num_blks=shape["num_blks"],
        ffn_num_hiddens=shape["ffn_num_hiddens"],
        use_bias=shape["use_bias"],
        tie_weights=shape["tie_weights"],
        max_len=10,
    )
    model = scramble(model).double().eval()
    ref = reference_gpt(model)
    X = torch.randint(0, 13, (B, T))
    lens = torch.tensor(data.draw(st.lists(st.integers(1, T), min_size=B, max_size=B))) if shape["padded"] else None
    with torch.no_grad():
        got = model(X, lens)
    torch.testing.assert_close(got, reference_logits(ref, X, lens), atol=1e-9, rtol=1e-9)


@pytest.mark.parametrize("prefix_len", [3, torch.tensor([0, 5, 2])], ids=["shared", "per-example"])
@pytest.mark.parametrize("padded", [False, True])
def test_prefix_lm_matches_pytorch_reference(prefix_len, padded):
    """The prefix-LM mask gives the logits of the reference with the same mask, padding or not."""
    torch.manual_seed(1)
    model = scramble(tiny_lm(use_bias=True)).double().eval()
    X = torch.randint(0, 11, (3, 7))
    lens = torch.tensor([7, 4, 2]) if padded else None
    with torch.no_grad():
        got = model(X, lens, prefix_len=prefix_len)
    torch.testing.assert_close(got, reference_logits(reference_gpt(model), X, lens, prefix_len), atol=1e-9, rtol=1e-9)


def test_padding_tokens_are_invisible():
    """A token past valid_lens changes no other position's logits, padded positions included; with a prefix
    that covers the padding, the valid positions see the prefix but not the padding."""
    torch.manual_seed(0)
    model = scramble(tiny_lm()).eval()
    X = torch.randint(0, 11, (2, 8))
    lens = torch.tensor([4, 6])
    Z = X.clone()
    Z[0, 4], Z[1, 6] = (Z[0, 4] + 3) % 11, (Z[1, 6] + 5) % 11  # the first padding token of each example
    with torch.no_grad():
        base, changed = model(X, lens), model(Z, lens)
        others = torch.ones(2, 8, dtype=torch.bool)
        others[0, 4] = others[1, 6] = False
        torch.testing.assert_close(changed[others], base[others], atol=1e-6, rtol=0)
        assert (changed[~others] - base[~others]).abs().amax(-1).min() > 1e-3, "a position depends on its own token"
        # Prefix 8 = T: bidirectional, so without the lengths every position would see the padding.
        Z[0, 7], Z[1, 7] = (Z[0, 7] + 1) % 11, (Z[1, 7] + 2) % 11
        torch.testing.assert_close(model(Z, lens, prefix_len=8)[0, :4], model(X, lens, prefix_len=8)[0, :4])
        torch.testing.assert_close(model(Z, lens, prefix_len=8)[1, :6], model(X, lens, prefix_len=8)[1, :6])
        assert (model(Z, prefix_len=8)[:, :4] - model(X, prefix_len=8)[:, :4]).abs().max() > 1e-3


def test_logits_are_causal():
    """Changing tokens t+1.. never changes the logits at positions <= t, and does change position t+1."""
    torch.manual_seed(0)
    model = tiny_lm().eval()
    X = torch.randint(0, 11, (2, 10))
    base = model(X)
    for t in range(9):
        Z = X.clone()
        Z[:, t + 1 :] = (Z[:, t + 1 :] + 1 + torch.randint(0, 10, Z[:, t + 1 :].shape)) % 11  # every one differs
        out = model(Z)
        torch.testing.assert_close(out[:, : t + 1], base[:, : t + 1], atol=1e-6, rtol=0)
        assert not torch.allclose(out[:, t + 1], base[:, t + 1], atol=1e-4)


def test_prefix_lm_sees_the_whole_prefix():
    """With prefix 4, changing token 3 changes positions 0..2 too; tokens after the prefix stay causal."""
    torch.manual_seed(0)
    model = tiny_lm().eval()
    X = torch.randint(0, 11, (2, 8))
    Z = X.clone()
    Z[:, 3] = (Z[:, 3] + 1) % 11
    torch.testing.assert_close(model(Z)[:, :3], model(X)[:, :3], atol=1e-6, rtol=0)  # causal: unchanged
    changed = model(Z, prefix_len=4)[:, :3] - model(X, prefix_len=4)[:, :3]
    assert changed.abs().amax(dim=-1).min() > 1e-4, "every prefix position should see token 3"
    W = X.clone()
    W[:, 6] = (W[:, 6] + 1) % 11
    torch.testing.assert_close(model(W, prefix_len=4)[:, :6], model(X, prefix_len=4)[:, :6], atol=1e-6, rtol=0)
    # per-example prefixes: example 0 has prefix 4, example 1 is plain causal
    per_example = model(Z, prefix_len=torch.tensor([4, 0])) - model(X, prefix_len=torch.tensor([4, 0]))
    assert per_example[0, :3].abs().max() > 1e-4 and per_example[1, :3].abs().max() < 1e-6


def test_loss_and_optimizer():
    torch.manual_seed(0)
    model = tiny_lm(lr=1e-3, weight_decay=0.1)
    Y_hat, Y = torch.randn(2, 3, 11), torch.randint(0, 11, (2, 3))
    expected = -Y_hat.log_softmax(-1).gather(-1, Y[..., None]).squeeze(-1)  # (B, T)
    torch.testing.assert_close(model.loss(Y_hat, Y, averaged=False), expected)
    torch.testing.assert_close(model.loss(Y_hat, Y), expected.mean())
    opt = model.configure_optimizers()
    assert isinstance(opt, torch.optim.AdamW)
    decayed = {id(p) for g in opt.param_groups if g["weight_decay"] > 0 for p in g["params"]}
    assert id(model.blks[0].attention.W_q.weight) in decayed and id(model.ln_f.weight) not in decayed
    assert all(g["lr"] == 1e-3 for g in opt.param_groups)
    assert sum(len(g["params"]) for g in opt.param_groups) == len(list(model.parameters()))
    with pytest.raises(ValueError, match="agree on"):
        model.loss(Y_hat, Y[:, :2])


def test_the_fused_optimizers_step_as_the_plain_ones():
    """The GPT's AdamW and the GRU's Adam run fused (one kernel for every parameter); three steps of each move the
    weights as torch's plain per-parameter loop with the same groups and settings does, up to rounding."""
    from qkv.lm import GRULM, GRUConfig

    torch.manual_seed(0)
    for model in (tiny_lm(lr=1e-2, weight_decay=0.1), GRULM(GRUConfig(vocab_size=11, num_hiddens=8, num_embed=4))):
        twin, start = copy.deepcopy(model), copy.deepcopy(model)
        fused = model.configure_optimizers()
        assert all(g["fused"] for g in fused.param_groups), type(model).__name__
        plain = type(fused)(_twin_groups(model, twin, fused))
        for _ in range(3):
            X = torch.randint(0, 11, (2, 5))
            for m, opt in ((model, fused), (twin, plain)):
                m(X).square().mean().backward()
                opt.step()
                opt.zero_grad()
        for (name, p), q in zip(model.named_parameters(), twin.parameters()):
            torch.testing.assert_close(p, q, atol=1e-6, rtol=1e-5, msg=lambda m, n=name: f"{n}: {m}")
        moved = [not torch.equal(p, p0) for p, p0 in zip(model.parameters(), start.parameters())]
        assert all(moved), "every parameter should have taken the three steps"


def _twin_groups(model, twin, optimizer):
    """``optimizer``'s parameter groups for ``twin`` (a deep copy of ``model``), unfused, each setting kept."""
    index = {id(p): i for i, p in enumerate(model.parameters())}
    params = list(twin.parameters())
    groups = []
    for g in optimizer.param_groups:
        settings = {k: v for k, v in g.items() if k not in ("params", "fused", "foreach")}
        groups.append(settings | {"params": [params[index[id(p)]] for p in g["params"]], "foreach": False})
    return groups


def greedy_by_hand(model, ids, steps):
    for _ in range(steps):
        logits = model(ids[:, -model.config.max_len :])
        ids = torch.cat([ids, logits[:, -1].argmax(-1, keepdim=True)], dim=1)
    return ids


def test_generate_greedy_equals_explicit_loop_and_crops_context():
    """temperature 0 (or greedy=True) is the argmax loop; the context is cropped to max_len (12 here)."""
    torch.manual_seed(0)
    model = tiny_lm(dropout=0.3).eval()
    prompt = torch.randint(0, 11, (2, 9))
    expected = greedy_by_hand(model, prompt, 8)  # runs past max_len = 12
    model.train()  # generate must switch dropout off by itself and restore the mode
    assert torch.equal(model.generate(prompt, 8, temperature=0.0), expected)
    assert model.training
    assert torch.equal(model.generate(prompt, 8, greedy=True), expected)
    assert torch.equal(model.generate(prompt[0], 8, temperature=0), expected[0])  # unbatched
    long_prompt = torch.randint(0, 11, (1, 15))  # longer than max_len
    assert torch.equal(model.generate(long_prompt, 3, temperature=0), greedy_by_hand(model.eval(), long_prompt, 3))


def test_sampling_is_reproducible_and_top1_is_greedy():
    torch.manual_seed(0)
    model = tiny_lm()
    with torch.no_grad():  # spread the logits so that samples differ between seeds
        model.head.weight.mul_(20)
    prompt = torch.randint(0, 11, (4, 3))
    draws = [model.generate(prompt, 10, generator=torch.Generator().manual_seed(s)) for s in (1, 1, 2)]
    assert torch.equal(draws[0], draws[1])
    assert not torch.equal(draws[0], draws[2])
    top1 = model.generate(prompt, 10, top_k=1, generator=torch.Generator().manual_seed(3))
    assert torch.equal(top1, greedy_by_hand(model.eval(), prompt, 10))


@pytest.mark.parametrize("temperature, top_k", [(1.0, None), (0.5, None), (2.0, 3)])
def test_sampling_follows_the_tempered_top_k_softmax(temperature, top_k):
    """Frequencies of one sampled token match softmax(logits / temperature) over the top k."""
    torch.manual_seed(0)
    model = tiny_lm(vocab_size=6, tie_weights=False).eval()
    with torch.no_grad():  # logits of spread about 1: neither uniform nor one-hot
        model.head.weight.normal_(0.0, 0.3)
    prompt = torch.randint(0, 6, (1, 4))
    raw = model(prompt)[0, -1]
    logits = raw / temperature
    if top_k is not None:
        logits[logits < logits.topk(top_k).values[-1]] = float("-inf")
    expected = logits.softmax(-1)
    if temperature != 1.0:  # the case must tell temperatures apart
        assert (expected - raw.softmax(-1)).abs().max() > 0.06
    n = 2000
    tokens = model.generate(prompt.expand(n, -1), 1, temperature, top_k, torch.Generator().manual_seed(0))[:, -1]
    freq = torch.bincount(tokens, minlength=6).float() / n
    assert freq[expected == 0].sum() == 0
    torch.testing.assert_close(freq, expected, atol=0.035, rtol=0)  # about 3 standard deviations


def test_generate_and_forward_errors():
    model = tiny_lm()
    with pytest.raises(ValueError, match="max_len"):
        model(torch.zeros(1, 13, dtype=torch.long))
    with pytest.raises(ValueError, match="vocab_size"):
        model(torch.full((1, 3), 11))
    with pytest.raises(ValueError, match="integer token ids"):
        model(torch.zeros(1, 3))
    with pytest.raises(ValueError, match="temperature"):
        model.generate(torch.zeros(3, dtype=torch.long), 2, temperature=-1)
    with pytest.raises(ValueError, match="top_k"):
        model.generate(torch.zeros(3, dtype=torch.long), 2, top_k=0)
    with pytest.raises(ValueError, match="T >= 1"):
        model.generate(torch.zeros(1, 0, dtype=torch.long), 2)
    with pytest.raises(ValueError, match="divisible"):
        GPTConfig(vocab_size=5, num_hiddens=10, num_heads=3)
    with pytest.raises(TypeError, match="GPTConfig"):
        DecoderOnlyLM({"vocab_size": 5})


def test_lm_learns_a_context_dependent_sequence():
    """A repeating pattern where the token after 1 depends on what came two steps before: learnt to near-zero loss."""
    torch.manual_seed(0)
    pattern = torch.tensor([0, 1, 2, 3, 0, 1, 4, 5, 6, 1, 7])  # period 11; "1" is followed by 2, 4 or 7
    stream = pattern.repeat(20)
    T = 16
    model = tiny_lm(vocab_size=8, num_hiddens=32, num_heads=4, ffn_num_hiddens=64, max_len=T, lr=1e-2)
    opt = model.configure_optimizers()
    starts = torch.arange(len(stream) - T - 1)
    windows = torch.stack([stream[s : s + T + 1] for s in starts])  # (num_windows, T + 1)
    for _ in range(150):
        batch = windows[torch.randint(0, len(windows), (32,))]
        loss = model.loss(model(batch[:, :-1]), batch[:, 1:])
        opt.zero_grad()
        loss.backward()
        opt.step()
    model.eval()
    with torch.no_grad():
        per_token = model.loss(model(windows[:, :-1]), windows[:, 1:], averaged=False)  # (num_windows, T)
    # From position 3 on, the context always determines the next token.
    assert per_token[:, 3:].mean() < 0.05
    # At position 0 a window starting with "1" cannot know whether 2, 4 or 7 comes next: a causal model's mean
    # loss there is at least the entropy of those continuations (a model that peeks ahead gets below it), and a
    # model that learnt the stream's statistics gets close to it.
    after_one = windows[windows[:, 0] == 1, 1]
    p = torch.bincount(after_one).float() / len(after_one)
    entropy = -(p[p > 0] * p[p > 0].log()).sum()
    loss_after_one = per_token[windows[:, 0] == 1, 0].mean()
    assert entropy - 1e-4 <= loss_after_one < entropy + 0.15, (loss_after_one, entropy)
    continued = model.generate(stream[:5], 22, temperature=0)
    assert torch.equal(continued, stream[:27])
