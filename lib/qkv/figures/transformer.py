"""The figures of D2L 11.7, The Transformer Architecture (``book/transformer.md``); ``glance()`` opens the section.

Besides the drawing, the helpers the section's demonstrations need, all built on :mod:`qkv.transformer` (never on a
student's answers): decoding token by token with D2L's positions or ours (:func:`decode_token_by_token`), the cost of
decoding with and without the key/value cache (:func:`decoding_cost`), the attention weights of one translation in
D2L's layout (:func:`translation_attention`), and the post-norm / pre-norm experiment
(:func:`norm_placement_gradients`).
"""

from __future__ import annotations

import math
import statistics
import time

import matplotlib.pyplot as plt
import torch
from torch import nn
from torch.utils.flop_counter import FlopCounterMode

from qkv.costlab import one_thread
from qkv.figures._draw import arrow, box, canvas
from qkv.training import evaluating
from qkv.transformer import TransformerDecoder

__all__ = [
    "glance",
    "decode_token_by_token",
    "decoding_cost",
    "plot_decoding_cost",
    "translation_attention",
    "decode_with_attention",
    "norm_placement_layers",
    "norm_placement_gradients",
    "plot_norm_placement",
]


def glance():
    """D2L 11.7 at a glance: the encoder and decoder stacks, their sublayers, and where the encoder's outputs go."""
    fig, ax = canvas((8.6, 4.6), (0, 17.2), (0, 9.4))
    blue, orange, green, grey = "#cfe3ff", "#ffe2b8", "#d5f2d0", "#eeeeee"
    # encoder (left) and decoder (right): sublayers from the bottom up
    enc = [
        ("multi-head\nself-attention", orange),
        ("add & norm", grey),
        ("position-wise FFN", blue),
        ("add & norm", grey),
    ]
    dec = [
        ("masked multi-head\nself-attention", orange),
        ("add & norm", grey),
        ("encoder-decoder\nattention", orange),
        ("add & norm", grey),
        ("position-wise FFN", blue),
        ("add & norm", grey),
    ]
    for x, parts, y0, label in ((4.0, enc, 3.2, "encoder block x L"), (12.6, dec, 2.2, "decoder block x L")):
        ys = [y0 + 1.05 * i for i in range(len(parts))]
        ax.add_patch(plt.Rectangle((x - 2.6, ys[0] - 0.65), 5.2, ys[-1] - ys[0] + 1.3, fc="none", ec="0.5", ls="--"))
        if x < 8:
            ax.text(x, ys[-1] + 0.85, label, fontsize=9, color="0.35", ha="center")
        else:
            ax.text(x + 2.75, ys[-1] + 0.2, label, fontsize=9, color="0.35", ha="left")
        for (text, color), y in zip(parts, ys):
            box(
                ax, x, y, 4.4 if "add" not in text else 3.2, 0.8 if "\n" not in text else 0.9, text, color, fontsize=8.5
            )
        for y1, y2 in zip(ys, ys[1:]):
            arrow(ax, (x, y1 + 0.45), (x, y2 - 0.42), width=1.0)
        box(ax, x, ys[0] - 1.6, 5.0, 0.9, r"embedding $\times\sqrt{N}$ + positional encoding", green, fontsize=8.5)
        arrow(ax, (x, ys[0] - 1.15), (x, ys[0] - 0.47), width=1.0)
        if x < 8:
            ax.text(x, ys[0] - 2.45, "source tokens", ha="center", fontsize=9)
            top = ys[-1]
        else:
            ax.text(x, ys[0] - 2.45, "target tokens so far (shifted right)", ha="center", fontsize=9)
            box(ax, x, ys[-1] + 1.2, 3.6, 0.7, "linear -> next-token scores", blue, fontsize=8.5)
            arrow(ax, (x, ys[-1] + 0.4), (x, ys[-1] + 0.85), width=1.0)
            arrow(ax, (4.0 + 2.6, top), (x - 2.2, ys[2]), width=1.3, rad=-0.2)
            ax.text(8.4, top + 0.45, "keys and values:\nthe encoder's outputs", fontsize=8.5, ha="center")
    return fig


def decode_token_by_token(decoder: TransformerDecoder, enc_outputs, tokens, d2l_positions: bool = False):
    """Logits (B, T, V) of ``decoder`` fed ``tokens`` (B, T) one at a time, with its key/value cache (D2L 11.7.5),
    in eval mode (the decoder's mode given back after).

    With ``d2l_positions`` every token gets the positional encoding of position 0, as D2L's decoder gives it when
    tokens arrive one at a time; otherwise the decoder's own rule, the number of tokens already cached.
    """
    state, steps = decoder.init_state(enc_outputs), []
    with evaluating(decoder):
        for t in range(tokens.shape[1]):
            if d2l_positions:
                X = decoder.embedding(tokens[:, t : t + 1]) * math.sqrt(decoder.num_hiddens)  # (B, 1, N)
                X = decoder.pos_encoding(X, 0)  # + P[0], whatever t is
                for blk in decoder.blks:
                    X, state = blk(X, state)  # (B, 1, N)
                steps.append(decoder.dense(X))  # (B, 1, V)
            else:
                logits, state = decoder(tokens[:, t : t + 1], state)  # (B, 1, V)
                steps.append(logits)
    return torch.cat(steps, dim=1)  # (B, T, V)


def _count_flops(fn, *args) -> int:
    with FlopCounterMode(display=False) as counter:
        fn(*args)
    return counter.get_total_flops()


@torch.no_grad()
def decoding_cost(
    num_steps: int = 256,
    full_every: int = 16,
    num_hiddens: int = 256,
    ffn_num_hiddens: int = 64,
    num_heads: int = 4,
    num_blks: int = 2,
    vocab_size: int = 200,
    src_len: int = 10,
    seed: int = 0,
    repeats: int = 3,
) -> dict:
    """Time and count greedy decoding of ``num_steps`` tokens with and without the key/value cache (D2L 11.7).

    An untrained decoder of the translator's size decodes one sequence greedily, with its cache (one token per
    call), and again without it (the whole prefix from a fresh state, at every ``full_every``-th position, to
    keep the figure to a few seconds). Times are taken as the attention-cost lab takes them: on one thread, with
    that thread's CPU clock (:func:`qkv.costlab.one_thread`, which a busy machine does not stretch), the median of
    ``repeats`` runs, after one untimed run. Returns a dict: ``positions`` (1 .. num_steps, the length of the
    prefix including the new token) and ``ms_cached`` (milliseconds for that token with the cache);
    ``full_positions`` and ``ms_full`` (the same without it); and, at ``flop_positions`` (1, 2, 4, ...), the FLOPs
    of that token counted by :class:`torch.utils.flop_counter.FlopCounterMode` (``flops_cached``, ``flops_full``).
    """
    torch.manual_seed(seed)
    decoder = TransformerDecoder(vocab_size, num_hiddens, ffn_num_hiddens, num_heads, num_blks, 0.0).eval()
    enc_outputs = torch.randn(1, src_len, num_hiddens)  # (B, T_src, N)

    def decode(clock) -> tuple[list[torch.Tensor], list[float]]:
        tokens = [torch.zeros(1, 1, dtype=torch.long)]  # [(B, 1)]: <bos> stands as token 0
        state, ms = decoder.init_state(enc_outputs), []
        for _ in range(num_steps):
            start = clock()
            logits, state = decoder(tokens[-1], state)  # (B, 1, V): one new token
            ms.append(1000 * (clock() - start))
            tokens.append(logits.argmax(dim=-1))  # (B, 1)
        return tokens, ms

    full_positions = [1, *range(full_every, num_steps + 1, full_every)]
    with one_thread() as clock:
        runs = [decode(clock) for _ in range(repeats + 1)][1:]  # the first run warms up
        tokens = runs[0][0]
        ms_cached = [statistics.median(times) for times in zip(*(ms for _, ms in runs))]
        sequence = torch.cat(tokens, dim=1)  # (B, num_steps + 1)
        ms_full = []
        for n in full_positions:
            times = []
            for _ in range(repeats + 1):
                start = clock()
                decoder(sequence[:, :n], decoder.init_state(enc_outputs))  # (B, n, V): the whole prefix again
                times.append(1000 * (clock() - start))
            ms_full.append(statistics.median(times[1:]))
    flop_positions = [2**k for k in range(int(math.log2(num_steps)) + 1)]
    flops_cached, flops_full = [], []
    for n in flop_positions:
        state = decoder.init_state(enc_outputs)
        if n > 1:
            _, state = decoder(sequence[:, : n - 1], state)  # cache the first n - 1 tokens
        flops_cached.append(_count_flops(decoder, sequence[:, n - 1 : n], state))
        flops_full.append(_count_flops(decoder, sequence[:, :n], decoder.init_state(enc_outputs)))
    return {
        "positions": list(range(1, num_steps + 1)),
        "ms_cached": ms_cached,
        "full_positions": full_positions,
        "ms_full": ms_full,
        "flop_positions": flop_positions,
        "flops_cached": flops_cached,
        "flops_full": flops_full,
    }


def plot_decoding_cost(cost: dict):
    """Two panels: milliseconds per token against its position, and FLOPs per token on log axes."""
    fig, (left, right) = plt.subplots(1, 2, figsize=(8, 3))
    left.plot(cost["full_positions"], cost["ms_full"], "o-", ms=3, label="whole prefix again")
    left.plot(cost["positions"], cost["ms_cached"], ".", ms=3, label="key/value cache")
    left.set_xlabel("position of the new token")
    left.set_ylabel("ms for that token")
    left.legend()
    right.loglog(cost["flop_positions"], cost["flops_full"], "o-", label="whole prefix again")
    right.loglog(cost["flop_positions"], cost["flops_cached"], "s-", label="key/value cache")
    right.set_xlabel("position of the new token")
    right.set_ylabel("FLOPs for that token")
    right.legend()
    fig.tight_layout()
    return fig


@torch.no_grad()
def translation_attention(model, data, sentence: str, num_steps: int | None = None):
    """The attention weights of one greedy translation of ``sentence``, in D2L's layout (D2L 11.7.6).

    Returns ``(encoder, decoder_self, decoder_cross, length)``: the encoder's self-attention (L, H, T_src, T_src);
    the decoder's self-attention (L, H, n, n), row ``t`` over the tokens 0 .. t it had seen (the upper triangle
    zero); its encoder-decoder attention (L, H, n, T_src); and the source's valid length. ``n`` counts the decoded
    tokens up to and including ``<eos>``.
    """
    return decode_with_attention(model, data, sentence, num_steps)[1:]


def decode_with_attention(model, data, sentence: str, num_steps: int | None = None):
    """One greedy decoding of ``sentence``: ``(translation, encoder, decoder_self, decoder_cross, length)``, the
    translation (a string) and the weights :func:`translation_attention` returns, from the same decoding
    (D2L 11.7.6)."""
    from qkv.translate import translate

    num_steps = num_steps or data.num_steps
    ((translation, steps),) = translate(model, data, [sentence], num_steps=num_steps)
    src, _, src_valid_len, _ = data.build([sentence], [sentence])
    device = next(model.parameters()).device
    with evaluating(model):  # as the translation ran: no dropout in the weights
        model.encoder(src.to(device), src_valid_len.to(device))  # sets encoder.attention_weights for this sentence
    L = len(model.encoder.attention_weights)
    H = model.encoder.blks[0].attention.num_heads
    enc = torch.stack([w.reshape(H, *w.shape[-2:]) for w in model.encoder.attention_weights])  # (L, H, T, T)
    n = len(steps)
    dec_self = torch.zeros(L, H, n, n)
    dec_cross = torch.zeros(L, H, n, enc.shape[-1])
    for t, (self_w, cross_w) in enumerate(steps):  # step t: [[per block (H, 1, t + 1)], [per block (H, 1, T_src)]]
        for i in range(L):
            dec_self[i, :, t, : t + 1] = self_w[i].reshape(H, -1)  # (H, 1, t + 1) -> (H, t + 1)
            dec_cross[i, :, t] = cross_w[i].reshape(H, -1)  # (H, 1, T_src) -> (H, T_src)
    return translation, enc, dec_self, dec_cross, int(src_valid_len[0])


def norm_placement_layers(
    num_layers: int = 18, num_hiddens: int = 64, num_heads: int = 4, norm_first: bool = False, seed: int = 0
) -> nn.ModuleList:
    """``num_layers`` of PyTorch's ``nn.TransformerEncoderLayer`` (dropout 0, FFN 4 N), each initialised on its own.

    Layer ``i`` is built after ``torch.manual_seed(seed + i)``: its weights are drawn independently of the other
    layers' (``nn.TransformerEncoder(layer, n)`` would deep-copy one layer, so that all ``n`` start identical), and
    a post-norm and a pre-norm stack of the same ``seed`` get the same weights, layer for layer.
    """
    layers = []
    for i in range(num_layers):
        torch.manual_seed(seed + i)
        layers.append(
            nn.TransformerEncoderLayer(
                num_hiddens, num_heads, 4 * num_hiddens, dropout=0.0, batch_first=True, norm_first=norm_first
            )
        )
    return nn.ModuleList(layers)


def norm_placement_gradients(
    num_layers: int = 18,
    num_hiddens: int = 64,
    num_heads: int = 4,
    batch_size: int = 32,
    length: int = 10,
    vocab_size: int = 10,
    seed: int = 0,
) -> dict:
    """Gradient norms per layer at initialisation of a post-norm and a pre-norm stack (D2L 11.7 exercise).

    Each model: an embedding, the ``num_layers`` independently initialised layers of :func:`norm_placement_layers`
    (``norm_first`` False, then True; the same weights in both) and a linear read-out (pre-norm with a final layer
    norm before it, as pre-norm models have). One batch of random sequences, the loss of predicting each sequence
    reversed, one backward pass. Returns ``grads`` (name -> the norm of each layer's parameter gradient, bottom
    layer first) and ``seconds``.
    """
    start, grads = time.perf_counter(), {}
    for name, norm_first in (("post-norm", False), ("pre-norm", True)):
        layers = norm_placement_layers(num_layers, num_hiddens, num_heads, norm_first, seed)
        torch.manual_seed(seed + num_layers)  # the embedding and the read-out, after the layers
        embed = nn.Embedding(vocab_size, num_hiddens)
        final = nn.LayerNorm(num_hiddens) if norm_first else nn.Identity()
        head = nn.Linear(num_hiddens, vocab_size)
        gen = torch.Generator().manual_seed(seed)
        X = torch.randint(0, vocab_size, (batch_size, length), generator=gen)  # (B, T)
        Z = embed(X)  # (B, T) -> (B, T, N)
        for layer in layers:
            Z = layer(Z)  # (B, T, N)
        logits = head(final(Z))  # (B, T, N) -> (B, T, V)
        nn.functional.cross_entropy(logits.reshape(-1, vocab_size), X.flip(1).reshape(-1)).backward()
        grads[name] = [math.sqrt(sum(float((p.grad**2).sum()) for p in blk.parameters())) for blk in layers]
    return {"grads": grads, "seconds": time.perf_counter() - start}


def plot_norm_placement(result: dict):
    """The gradient norm of each layer's parameters, bottom layer first, for each placement of the norm."""
    fig, ax = plt.subplots(figsize=(5, 3))
    for (name, norms), fmt in zip(result["grads"].items(), ("o-", "s-")):
        ax.semilogy(range(1, len(norms) + 1), norms, fmt, ms=4, label=name)
    ax.set_xlabel("layer (1 = next to the input)")
    ax.set_ylabel("gradient norm at initialisation")
    ax.legend()
    fig.tight_layout()
    return fig
