"""Large-scale pretraining with Transformers (D2L 11.9).

The three families of 11.9 differ above all in *who may attend to whom*:

- encoder-only (BERT): every token attends to every token, both directions;
- encoder-decoder (T5): the encoder is bidirectional over the input, the
  decoder is causal over the output and cross-attends to the whole input;
- decoder-only (GPT): every token attends to itself and the tokens before it,
  so the model can be trained to predict each next token in one pass.
  A prefix LM is in between: bidirectional inside a prefix, causal after it.

The mask builders below return boolean masks, True where a query may attend to
a key. **Rows are queries, columns are keys**: ``mask[..., i, j]`` says whether
position ``i`` may look at position ``j``. Without lengths a mask has shape
(T, T) and is shared by the whole batch; with ``valid_lens`` (B,) it has shape
(B, T, T) and the keys at or past an example's length (its padding) are
masked out for every query. Padded *queries* are not masked: their outputs are
meaningless and are ignored by the loss. Every mask can be passed as the
``valid_lens`` of :class:`qkv.multihead.MultiHeadAttention` or
:func:`qkv.attention.masked_softmax`.

:class:`DecoderOnlyLM` is a small GPT built on those masks.
Shape letters are those of the glossary in :mod:`qkv`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import torch
from torch import nn
from torch.nn import functional as F

from qkv._validate import positive_int
from qkv.multihead import MultiHeadAttention
from qkv.training import evaluating, fusable

__all__ = [
    "bidirectional_mask",
    "causal_mask",
    "prefix_lm_mask",
    "encoder_decoder_masks",
    "EncoderDecoderMasks",
    "GPTConfig",
    "DecoderOnlyBlock",
    "DecoderOnlyLM",
]


def _check_T(T, name: str = "T") -> int:
    if isinstance(T, bool) or not isinstance(T, int) or T < 1:
        raise ValueError(f"{name} must be a positive int (a number of positions), got {T!r}")
    return T


def _lengths(lens, T: int, name: str, device) -> torch.Tensor:
    """``lens`` as a 1-D long tensor of lengths in [0, T]."""
    lens = torch.as_tensor(lens, device=device)
    if lens.dtype == torch.bool or lens.is_floating_point() or lens.is_complex():
        raise TypeError(f"{name} must hold integer lengths, got dtype {lens.dtype}")
    if lens.dim() != 1:
        raise ValueError(f"{name} must have shape (B,), one length per example, got shape {tuple(lens.shape)}")
    if lens.numel() and (lens.min() < 0 or lens.max() > T):
        raise ValueError(f"{name} must lie in [0, {T}], got {lens.tolist()}")
    return lens.long()


def _pad_keys(mask: torch.Tensor, T_k: int, valid_lens, name: str, device) -> torch.Tensor:
    """AND a (Q, K) mask with "key < valid_len" per example, giving (B, Q, K); unchanged if no lengths."""
    if valid_lens is None:
        return mask
    lens = _lengths(valid_lens, T_k, name, device)
    keys_kept = torch.arange(T_k, device=device)[None, :] < lens[:, None]  # (1, K) < (B, 1) -> (B, K)
    return mask[None, :, :] & keys_kept[:, None, :]  # (1, Q, K) & (B, 1, K) -> (B, Q, K)


def bidirectional_mask(T: int, valid_lens=None, *, device=None) -> torch.Tensor:
    """Encoder-only (BERT) self-attention mask: every position sees every valid position (D2L 11.9.1).

    Returns (T, T), all True, or (B, T, T) masking the keys past ``valid_lens`` (B,).
    """
    T = _check_T(T)
    mask = torch.ones(T, T, dtype=torch.bool, device=device)  # (Q, K)
    return _pad_keys(mask, T, valid_lens, "valid_lens", device)


def causal_mask(T: int, valid_lens=None, *, device=None) -> torch.Tensor:
    """Decoder-only (GPT) self-attention mask: position i sees positions 0..i (D2L 11.9.3).

    ``mask[i, j] = j <= i`` (lower triangle, diagonal included), shape (T, T),
    or (B, T, T) with the keys past ``valid_lens`` (B,) masked as well.
    """
    T = _check_T(T)
    mask = torch.ones(T, T, dtype=torch.bool, device=device).tril()  # (Q, K)
    return _pad_keys(mask, T, valid_lens, "valid_lens", device)


def prefix_lm_mask(T: int, prefix_len, valid_lens=None, *, device=None) -> torch.Tensor:
    """Prefix-LM self-attention mask: bidirectional inside the prefix, causal after it (D2L 11.9).

    ``mask[i, j] = j <= i or j < prefix_len``: a prefix token sees the whole
    prefix (also the tokens after it in the prefix); a later token sees the
    prefix and the tokens up to itself. ``prefix_len`` is an int in [0, T]
    (shape (T, T) unless ``valid_lens`` is given) or a tensor (B,) of
    per-example prefix lengths (shape (B, T, T)). ``prefix_len`` 0 or 1 gives the
    causal mask; ``prefix_len = T`` the bidirectional one.
    """
    T = _check_T(T)
    causal = torch.ones(T, T, dtype=torch.bool, device=device).tril()  # (Q, K)
    if isinstance(prefix_len, torch.Tensor) and prefix_len.dim() == 0:
        prefix_len = prefix_len.item()
    if isinstance(prefix_len, int) and not isinstance(prefix_len, bool):
        if not 0 <= prefix_len <= T:
            raise ValueError(f"prefix_len must lie in [0, T = {T}], got {prefix_len}")
        in_prefix = torch.arange(T, device=device) < prefix_len  # (K,)
        mask = causal | in_prefix[None, :]  # (Q, K) | (1, K) -> (Q, K)
    else:
        prefix = _lengths(prefix_len, T, "prefix_len", device)
        in_prefix = torch.arange(T, device=device)[None, :] < prefix[:, None]  # (1, K) < (B, 1) -> (B, K)
        mask = causal[None, :, :] | in_prefix[:, None, :]  # (1, Q, K) | (B, 1, K) -> (B, Q, K)
        if valid_lens is not None:
            lens = _lengths(valid_lens, T, "valid_lens", device)
            if lens.shape != prefix.shape:
                raise ValueError(
                    f"prefix_len and valid_lens need one entry per example; got {prefix.numel()} and {lens.numel()}"
                )
            keys_kept = torch.arange(T, device=device)[None, :] < lens[:, None]  # (B, K)
            mask = mask & keys_kept[:, None, :]  # (B, Q, K) & (B, 1, K) -> (B, Q, K)
        return mask
    return _pad_keys(mask, T, valid_lens, "valid_lens", device)


class EncoderDecoderMasks(NamedTuple):
    """The three attention masks of an encoder-decoder (T5) model (D2L 11.9.2)."""

    encoder: torch.Tensor  # (T_src, T_src) or (B, T_src, T_src): encoder self-attention, bidirectional
    decoder: torch.Tensor  # (T_tgt, T_tgt) or (B, T_tgt, T_tgt): decoder self-attention, causal
    cross: torch.Tensor  # (T_tgt, T_src) or (B, T_tgt, T_src): decoder queries on encoder keys


def encoder_decoder_masks(
    T_src: int, T_tgt: int, src_valid_lens=None, tgt_valid_lens=None, *, device=None
) -> EncoderDecoderMasks:
    """Masks of an encoder-decoder (T5) model: (encoder self, decoder self, cross) (D2L 11.9.2).

    The encoder sees the whole valid input; the decoder sees the output
    causally; every decoder position may attend to every valid input position
    (the cross mask is (T_tgt, T_src): queries from the target, keys from the
    source). ``src_valid_lens`` pads the encoder's and the cross-attention's
    keys, ``tgt_valid_lens`` the decoder's. Returns an :class:`EncoderDecoderMasks`,
    a named tuple that unpacks as ``enc_mask, dec_mask, cross_mask``.
    """
    T_src, T_tgt = _check_T(T_src, "T_src"), _check_T(T_tgt, "T_tgt")
    cross = torch.ones(T_tgt, T_src, dtype=torch.bool, device=device)  # (T_tgt, T_src)
    return EncoderDecoderMasks(
        encoder=bidirectional_mask(T_src, src_valid_lens, device=device),
        decoder=causal_mask(T_tgt, tgt_valid_lens, device=device),
        cross=_pad_keys(cross, T_src, src_valid_lens, "src_valid_lens", device),
    )


@dataclass
class GPTConfig:
    """Hyper-parameters of a :class:`DecoderOnlyLM` (D2L 11.9.3).

    The defaults are ours, a model small enough to train on a CPU in seconds;
    GPT-2 small has ``num_hiddens=768, num_heads=12, num_blks=12,
    ffn_num_hiddens=3072, max_len=1024``. ``tie_weights`` shares the output
    head's weight with the token embedding; ``use_bias`` adds biases to the
    attention projections; ``lr`` and ``weight_decay`` configure AdamW.
    """

    vocab_size: int
    num_hiddens: int = 64
    num_heads: int = 4
    num_blks: int = 2
    ffn_num_hiddens: int = 256
    dropout: float = 0.1
    max_len: int = 128
    tie_weights: bool = True
    use_bias: bool = False
    lr: float = 3e-3
    weight_decay: float = 0.01

    def __post_init__(self):
        for name in ("vocab_size", "num_hiddens", "num_heads", "num_blks", "ffn_num_hiddens", "max_len"):
            setattr(self, name, positive_int(getattr(self, name), f"GPTConfig.{name}"))
        if self.num_hiddens % self.num_heads:
            raise ValueError(f"num_hiddens = {self.num_hiddens} must be divisible by num_heads = {self.num_heads}")
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"dropout must lie in [0, 1), got {self.dropout}")


class DecoderOnlyBlock(nn.Module):
    """A pre-norm Transformer decoder block without cross-attention, as in GPT (D2L 11.9.3).

    ``X = X + dropout(MultiHeadAttention(LN1(X), mask))`` then
    ``X = X + FFN(LN2(X))`` with FFN = Linear, GELU, Linear, dropout.
    ``forward(X, mask)``: (B, T, N) -> (B, T, N); ``mask`` is a boolean mask
    (T, T) or (B, T, T), usually :func:`causal_mask`.
    """

    def __init__(self, num_hiddens: int, num_heads: int, ffn_num_hiddens: int, dropout: float, use_bias: bool = False):
        super().__init__()
        self.ln1 = nn.LayerNorm(num_hiddens)
        self.attention = MultiHeadAttention(
            num_hiddens,
            num_heads,
            dropout,
            use_bias,
            query_size=num_hiddens,
            key_size=num_hiddens,
            value_size=num_hiddens,
        )
        self.dropout = nn.Dropout(dropout)
        self.ln2 = nn.LayerNorm(num_hiddens)
        self.ffn = nn.Sequential(
            nn.Linear(num_hiddens, ffn_num_hiddens),
            nn.GELU(),
            nn.Linear(ffn_num_hiddens, num_hiddens),
            nn.Dropout(dropout),
        )

    def forward(self, X: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
        Y = self.ln1(X)
        X = X + self.dropout(self.attention(Y, Y, Y, mask))  # (B, T, N)
        return X + self.ffn(self.ln2(X))  # (B, T, N) -> (B, T, F) -> (B, T, N)


class DecoderOnlyLM(nn.Module):
    """A small decoder-only (GPT-style) language model (D2L 11.9.3).

    Token embedding plus a learned positional embedding (``max_len`` rows),
    dropout, ``num_blks`` causal :class:`DecoderOnlyBlock`, a final LayerNorm and a
    linear head to the vocabulary (tied to the token embedding if
    ``config.tie_weights``). ``forward(X)``: token ids (B, T) with T <= max_len ->
    next-token logits (B, T, V): position t is trained to predict token t + 1.
    """

    def __init__(self, config: GPTConfig):
        super().__init__()
        if not isinstance(config, GPTConfig):
            raise TypeError(f"DecoderOnlyLM takes a GPTConfig, got {type(config).__name__}")
        self.config = config
        c = config
        self.token_embedding = nn.Embedding(c.vocab_size, c.num_hiddens)
        self.pos_embedding = nn.Embedding(c.max_len, c.num_hiddens)
        self.dropout = nn.Dropout(c.dropout)
        self.blks = nn.ModuleList(
            DecoderOnlyBlock(c.num_hiddens, c.num_heads, c.ffn_num_hiddens, c.dropout, c.use_bias)
            for _ in range(c.num_blks)
        )
        self.ln_f = nn.LayerNorm(c.num_hiddens)
        self.head = nn.Linear(c.num_hiddens, c.vocab_size, bias=False)
        self.apply(self._init_weights)
        if c.tie_weights:
            self.head.weight = self.token_embedding.weight  # (V, N): one parameter, used twice

    @staticmethod
    def _init_weights(module: nn.Module) -> None:
        # Small normal weights, as GPT-2 does; PyTorch's default N(0, 1) embeddings would make tied logits huge.
        if isinstance(module, nn.Linear | nn.Embedding):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)
        if isinstance(module, nn.Linear) and module.bias is not None:
            nn.init.zeros_(module.bias)

    def forward(self, X: torch.Tensor, valid_lens=None, prefix_len=None) -> torch.Tensor:
        """Token ids X (B, T) -> logits (B, T, V).

        ``valid_lens`` (B,) masks padding keys; ``prefix_len`` (int or (B,))
        switches to the prefix-LM mask of :func:`prefix_lm_mask`.
        """
        if X.dim() != 2 or X.dtype not in (torch.long, torch.int, torch.int16, torch.uint8, torch.int8):
            raise ValueError(f"DecoderOnlyLM expects integer token ids of shape (B, T), got {X.dtype} {tuple(X.shape)}")
        B, T = X.shape
        if T == 0 or T > self.config.max_len:
            raise ValueError(
                f"sequence length T = {T} must lie in [1, max_len = {self.config.max_len}]; "
                "crop the input to its last max_len tokens or build the model with a larger max_len"
            )
        if X.min() < 0 or X.max() >= self.config.vocab_size:
            raise ValueError(
                f"token ids must lie in [0, vocab_size = {self.config.vocab_size}), "
                f"got ids from {X.min().item()} to {X.max().item()}"
            )
        if prefix_len is None:
            mask = causal_mask(T, valid_lens, device=X.device)  # (T, T) or (B, T, T)
        else:
            mask = prefix_lm_mask(T, prefix_len, valid_lens, device=X.device)
        positions = torch.arange(T, device=X.device)  # (T,)
        H = self.dropout(self.token_embedding(X) + self.pos_embedding(positions))  # (B, T, N) + (T, N)
        for blk in self.blks:
            H = blk(H, mask)  # (B, T, N)
        return self.head(self.ln_f(H))  # (B, T, N) -> (B, T, V)

    def loss(self, Y_hat: torch.Tensor, Y: torch.Tensor, averaged: bool = True) -> torch.Tensor:
        """Cross-entropy of logits (B, T, V) against next tokens (B, T) (D2L 11.9.3)."""
        if Y_hat.shape[:-1] != Y.shape:
            raise ValueError(f"logits {tuple(Y_hat.shape)} and labels {tuple(Y.shape)} must agree on (B, T)")
        V = Y_hat.shape[-1]
        loss = F.cross_entropy(Y_hat.reshape(-1, V), Y.reshape(-1), reduction="none")  # (B * T, V) -> (B * T,)
        return loss.mean() if averaged else loss.reshape(Y.shape)  # (B * T,) -> (B, T)

    def configure_optimizers(self) -> torch.optim.Optimizer:
        """AdamW, fused where it can be (:func:`qkv.training.fusable`); weight decay on the weight matrices and
        embeddings only, not on biases or LayerNorm."""
        decay = [p for p in self.parameters() if p.dim() >= 2]
        no_decay = [p for p in self.parameters() if p.dim() < 2]
        groups = [
            {"params": decay, "weight_decay": self.config.weight_decay},
            {"params": no_decay, "weight_decay": 0.0},
        ]
        return torch.optim.AdamW(groups, lr=self.config.lr, fused=fusable(self))

    def generate(
        self,
        prompt_ids: torch.Tensor,
        max_new_tokens: int,
        temperature: float = 1.0,
        top_k=None,
        generator: torch.Generator | None = None,
        greedy: bool = False,
    ) -> torch.Tensor:
        """Extend ``prompt_ids`` (T,) or (B, T) by ``max_new_tokens`` sampled tokens (D2L 11.9.3).

        Each step feeds the last ``max_len`` tokens, divides the last position's
        logits by ``temperature``, keeps the ``top_k`` largest (all if None) and
        samples from their softmax with ``generator``. ``temperature=0`` or
        ``greedy=True`` takes the argmax instead. The model is run in eval mode
        (no dropout) and its mode restored. Returns the prompt followed by the
        new tokens: (T + max_new_tokens,) or (B, T + max_new_tokens).
        """
        if isinstance(max_new_tokens, bool) or not isinstance(max_new_tokens, int) or max_new_tokens < 0:
            raise ValueError(f"max_new_tokens must be a non-negative int, got {max_new_tokens!r}")
        if temperature < 0:
            raise ValueError(f"temperature must be >= 0 (0 means greedy), got {temperature}")
        if top_k is not None and (isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 1):
            raise ValueError(f"top_k must be None or a positive int, got {top_k!r}")
        prompt_ids = torch.as_tensor(prompt_ids)
        unbatched = prompt_ids.dim() == 1
        ids = prompt_ids[None] if unbatched else prompt_ids  # (T,) -> (1, T)
        if ids.dim() != 2 or ids.shape[1] == 0:
            raise ValueError(f"prompt_ids must be (T,) or (B, T) with T >= 1, got shape {tuple(prompt_ids.shape)}")
        ids = ids.to(self.head.weight.device)
        with evaluating(self):  # no dropout; every part's mode given back after
            for _ in range(max_new_tokens):
                logits = self(ids[:, -self.config.max_len :])[:, -1, :]  # (B, T, V) -> (B, V)
                if greedy or temperature == 0:
                    next_id = logits.argmax(dim=-1, keepdim=True)  # (B, 1)
                else:
                    logits = logits / temperature
                    if top_k is not None and top_k < logits.shape[-1]:
                        kth = torch.topk(logits, top_k, dim=-1).values[:, -1:]  # (B, k) -> (B, 1)
                        logits = logits.masked_fill(logits < kth, float("-inf"))
                    probs = F.softmax(logits, dim=-1)  # (B, V)
                    next_id = torch.multinomial(probs, 1, generator=generator)  # (B, 1)
                ids = torch.cat((ids, next_id), dim=1)  # (B, T) ++ (B, 1) -> (B, T + 1)
        return ids[0] if unbatched else ids
