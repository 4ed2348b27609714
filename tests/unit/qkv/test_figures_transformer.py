"""Tests for qkv.figures.transformer (D2L 11.7): the glance drawing, D2L's positions against ours when decoding
token by token, the decoding cost (exact FLOP counts against closed forms), the attention maps of a translation in
D2L's layout, and the post-norm / pre-norm gradients."""

import math

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

from qkv.figures import transformer as figures  # noqa: E402
from qkv.transformer import TransformerDecoder  # noqa: E402


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def test_glance_shows_both_stacks_with_their_sublayers_in_order():
    (ax,) = figures.glance().axes
    texts = [t.get_text() for t in ax.texts]
    assert texts.count("add & norm") == 5, "two add & norm in the encoder block, three in the decoder block"
    assert texts.count("position-wise FFN") == 2
    assert any("masked" in t for t in texts) and any("encoder-decoder" in t for t in texts)
    assert sum("sqrt{N}" in t for t in texts) == 2, (
        "both stacks scale their embeddings by sqrt(N), as the page writes it"
    )
    heights = {t: ax.texts[texts.index(t)].get_position()[1] for t in texts}
    assert heights["masked multi-head\nself-attention"] < heights["encoder-decoder\nattention"], "bottom up"


def _decoder(seed=0, N=16):
    torch.manual_seed(seed)
    return TransformerDecoder(vocab_size=11, num_hiddens=N, ffn_num_hiddens=20, num_heads=4, num_blks=2, dropout=0.0)


def test_token_by_token_with_true_positions_equals_one_call_and_d2l_positions_do_not():
    decoder = _decoder().eval()
    enc, tokens = torch.randn(2, 5, 16), torch.randint(0, 11, (2, 6))
    full, _ = decoder(tokens, decoder.init_state(enc))
    ours = figures.decode_token_by_token(decoder, enc, tokens)
    d2l = figures.decode_token_by_token(decoder, enc, tokens, d2l_positions=True)
    torch.testing.assert_close(ours, full, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(d2l[:, :1], full[:, :1], atol=1e-5, rtol=1e-5)  # position 0 is right for token 0
    assert (d2l[:, 1:] - full[:, 1:]).abs().max() > 1e-2, "later tokens differ when all get position 0"


def test_decoding_cost_counts_flops_as_the_closed_forms_say():
    N, F, blocks, V, src = 16, 20, 2, 11, 5
    cost = figures.decoding_cost(
        num_steps=8,
        full_every=4,
        num_hiddens=N,
        ffn_num_hiddens=F,
        num_heads=4,
        num_blks=blocks,
        vocab_size=V,
        src_len=src,
    )
    assert cost["positions"] == list(range(1, 9)) and len(cost["ms_cached"]) == 8
    assert cost["full_positions"] == [1, 4, 8] and len(cost["ms_full"]) == 3
    assert all(t > 0 for t in cost["ms_cached"] + cost["ms_full"])
    assert cost["flop_positions"] == [1, 2, 4, 8]

    # One new token with n - 1 cached: per block, q, k, v, o of the self-attention (4 N^2 multiply-adds), the cross
    # attention's q and o (2 N^2; its keys and values are cached), scores and values over n own and src encoder
    # keys (2 N (n + src)), the FFN (2 N F); then the output layer (N V). FLOPs = 2 x multiply-adds.
    def cached(n):
        return 2 * (blocks * (6 * N * N + 2 * N * (n + src) + 2 * N * F) + N * V)

    def full(n):  # the whole prefix again (the encoder's keys and values are projected by init_state, not counted)
        per_block = n * (6 * N * N + 2 * N * F) + 2 * N * n * n + 2 * N * n * src
        return 2 * (blocks * per_block + n * N * V)

    assert cost["flops_cached"] == [cached(n) for n in cost["flop_positions"]]
    assert cost["flops_full"] == [full(n) for n in cost["flop_positions"]]
    slope = cost["flops_cached"][-1] - cost["flops_cached"][-2]
    assert slope == 4 * N * blocks * (8 - 4), "each cached token adds 4N FLOPs per block"
    figures.plot_decoding_cost(cost)


class _TinyData:
    """Enough of MTFraEng for translate(): build(), tgt_vocab and num_steps (a made-up vocabulary of 7 ids)."""

    num_steps = 5

    class _Vocab:
        idx_to_token = ["<pad>", "<bos>", "<eos>", "a", "b", "c", "."]

        def __getitem__(self, token):
            return self.idx_to_token.index(token)

        def to_tokens(self, ids):
            return [self.idx_to_token[i] for i in ids]

    tgt_vocab = src_vocab = _Vocab()

    def build(self, srcs, tgts):
        ids = [[self.src_vocab[t] for t in s.split()] + [2] for s in srcs]
        lens = torch.tensor([len(i) for i in ids])
        src = torch.tensor([i + [0] * (self.num_steps - len(i)) for i in ids])  # (B, T_src)
        tgt = torch.full((len(srcs), self.num_steps), 1)  # (B, T): <bos> first
        return src, tgt, lens, tgt


def test_translation_attention_has_d2l_layout_and_masks():
    from qkv.transformer import make_transformer

    torch.manual_seed(0)
    model = make_transformer(7, 7, num_hiddens=16, ffn_num_hiddens=8, num_heads=4, num_blks=2, dropout=0.0, tgt_pad=0)
    enc, dec_self, dec_cross, length = figures.translation_attention(model, _TinyData(), "a b .")
    assert length == 4  # three tokens and <eos>
    assert enc.shape == (2, 4, 5, 5), "(blocks, heads, steps, steps)"
    n = dec_self.shape[2]
    assert dec_self.shape == (2, 4, n, n) and dec_cross.shape == (2, 4, n, 5) and 1 <= n <= 5
    torch.testing.assert_close(enc.sum(-1), torch.ones(2, 4, 5))
    assert (enc[..., length:] == 0).all(), "no weight on source padding"
    assert (torch.triu(dec_self, diagonal=1) == 0).all(), "the decoder's self-attention sees no future"
    torch.testing.assert_close(dec_self.sum(-1), torch.ones(2, 4, n))
    torch.testing.assert_close(dec_cross.sum(-1), torch.ones(2, 4, n))
    assert (dec_cross[..., length:] == 0).all()


def test_norm_placement_layers_are_initialised_independently_and_alike_in_both_stacks():
    post = figures.norm_placement_layers(num_layers=3, num_hiddens=16, norm_first=False)
    pre = figures.norm_placement_layers(num_layers=3, num_hiddens=16, norm_first=True)
    assert [layer.norm_first for layer in post] == [False] * 3 and [layer.norm_first for layer in pre] == [True] * 3
    for a, b in zip(post, pre):
        for (name, p), q in zip(a.named_parameters(), b.parameters()):
            assert torch.equal(p, q), f"post-norm and pre-norm layers differ in {name}"
    w = [layer.self_attn.in_proj_weight for layer in post]
    assert not torch.equal(w[0], w[1]) and not torch.equal(w[1], w[2]), "layers must not be copies of one layer"


def test_norm_placement_gradients_are_per_layer_and_post_norm_larger():
    result = figures.norm_placement_gradients(num_layers=6, num_hiddens=16, batch_size=8)
    post, pre = result["grads"]["post-norm"], result["grads"]["pre-norm"]
    assert len(post) == len(pre) == 6 and all(math.isfinite(g) and g > 0 for g in post + pre)
    assert post != pre, "the placement of the norm changes the gradients"
    assert result["seconds"] > 0
    figures.plot_norm_placement(result)
