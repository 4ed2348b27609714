"""The decoder block of a 2026 language model, assembled (the modern-decoder lab, after D2L 11.9).

11.9's :class:`qkv.pretraining.DecoderOnlyLM` is GPT-2's decoder: learned positions, pre-norm LayerNorm, a GELU
MLP, biases. The open models of 2023-2026 (Llama 2 and 3, Mistral, Qwen, Gemma, OLMo) changed four things, each
taught in a section of the chapter or introduced here:

- **RMSNorm** (Zhang and Sennrich, 2019) instead of LayerNorm: divide by the root mean square, no mean subtracted, a
  learned scale and no shift (:class:`RMSNorm`);
- **SwiGLU** (Shazeer, 2020) instead of the GELU MLP: a gated feed-forward network with three weight matrices and a
  hidden width of about 8/3 of the model width, so that it has the parameters of a 4x GELU MLP (:class:`SwiGLU`);
- **rotary positions** (Su et al., 2021; D2L 11.6.3, :class:`qkv.positional.RotaryPositionalEmbedding`) on the
  queries and keys of every block, instead of a learned table added to the input;
- **grouped-query attention** (Ainslie et al., 2023; 11.5, :func:`qkv.multihead.grouped_query_attention`) with a
  **key/value cache** (11.7) that holds only the shared key/value heads.

Every linear layer is without bias. :class:`ModernDecoderBlock` assembles them; :class:`ModernDecoderLM` has the
interface of 11.9's ``DecoderOnlyLM`` (``forward``, ``loss``, ``configure_optimizers``, ``generate``), with
``decode`` for cached decoding and nucleus (top-p) sampling (Holtzman et al., 2020; :func:`top_p_distribution`)
beside top-k.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import torch
import torch.nn.functional as F
from torch import nn

from qkv._validate import positive_int
from qkv.lm import next_token_distribution
from qkv.multihead import grouped_query_attention
from qkv.positional import RotaryPositionalEmbedding
from qkv.pretraining import DecoderOnlyLM
from qkv.training import evaluating

__all__ = [
    "SWIGLU_MULTIPLE",
    "swiglu_hiddens",
    "RMSNorm",
    "SwiGLU",
    "LayerCache",
    "ModernDecoderBlock",
    "ModernConfig",
    "CachedLM",
    "ModernDecoderLM",
    "top_p_distribution",
]

#: SwiGLU's hidden width is rounded up to a multiple of this (Llama rounds to 256 at its sizes; 16 suits ours).
SWIGLU_MULTIPLE = 16


def swiglu_hiddens(num_hiddens: int, multiple_of: int = SWIGLU_MULTIPLE) -> int:
    """SwiGLU's hidden width for model width ``num_hiddens``: 8/3 of it, rounded up to a multiple of ``multiple_of``.

    A GELU MLP of width 4N has two N x 4N matrices, 8N^2 weights; SwiGLU has three N x F matrices, so F = 8N/3 keeps
    the count (Shazeer, 2020; Llama's rule). ``swiglu_hiddens(64) == 176`` (170.7 rounded up to a multiple of 16).
    """
    num_hiddens, multiple_of = positive_int(num_hiddens, "num_hiddens"), positive_int(multiple_of, "multiple_of")
    return -(-8 * num_hiddens // (3 * multiple_of)) * multiple_of  # ceil(8N / 3m) * m, in whole numbers


class RMSNorm(nn.Module):
    """Root-mean-square normalisation (Zhang and Sennrich, 2019), the norm of Llama-style decoders.

    ``RMSNorm(num_hiddens, eps=1e-6)``; ``forward(X)`` with X (..., num_hiddens) returns
    ``X / sqrt(mean(X**2, last axis) + eps) * weight``, in X's dtype (a half-precision X is normalised in float32,
    then cast back). Unlike LayerNorm it subtracts no mean and has no shift; ``weight`` (num_hiddens,) starts at
    ones. The same function as ``torch.nn.RMSNorm(num_hiddens, eps=eps)``.
    """

    def __init__(self, num_hiddens: int, eps: float = 1e-6):
        super().__init__()
        num_hiddens = positive_int(num_hiddens, "num_hiddens")
        if not eps > 0:
            raise ValueError(f"eps must be a positive number (it keeps a zero vector from dividing by 0), got {eps!r}")
        self.eps = float(eps)
        self.weight = nn.Parameter(torch.ones(num_hiddens))

    def forward(self, X: torch.Tensor) -> torch.Tensor:
        if X.shape[-1] != self.weight.shape[0]:
            raise ValueError(f"RMSNorm({self.weight.shape[0]}) got inputs whose last axis is {X.shape[-1]}")
        wide = X.float() if X.dtype in (torch.float16, torch.bfloat16) else X  # (..., N)
        scale = torch.rsqrt(wide.pow(2).mean(dim=-1, keepdim=True) + self.eps)  # (..., N) -> (..., 1)
        return (wide * scale).to(X.dtype) * self.weight.to(X.dtype)  # (..., N) * (..., 1) * (N,) -> (..., N)

    def extra_repr(self) -> str:
        return f"{self.weight.shape[0]}, eps={self.eps:g}"


class SwiGLU(nn.Module):
    """The gated feed-forward network of Llama-style decoders (Shazeer, 2020).

    ``SwiGLU(num_hiddens, ffn_num_hiddens=None)``; ``forward(X)`` with X (..., N) returns
    ``W_down(silu(W_gate(X)) * W_up(X))``, (..., N): the SiLU of one projection gates another, element by element.
    ``W_gate`` and ``W_up`` map N to F features and ``W_down`` maps F back to N, all without bias; F is
    ``ffn_num_hiddens``, or :func:`swiglu_hiddens` of N when None.
    """

    def __init__(self, num_hiddens: int, ffn_num_hiddens: int | None = None):
        super().__init__()
        N = positive_int(num_hiddens, "num_hiddens")
        F_ = swiglu_hiddens(N) if ffn_num_hiddens is None else positive_int(ffn_num_hiddens, "ffn_num_hiddens")
        self.W_gate = nn.Linear(N, F_, bias=False)
        self.W_up = nn.Linear(N, F_, bias=False)
        self.W_down = nn.Linear(F_, N, bias=False)

    def forward(self, X: torch.Tensor) -> torch.Tensor:
        gated = F.silu(self.W_gate(X)) * self.W_up(X)  # (..., N) -> (..., F) * (..., F) -> (..., F)
        return self.W_down(gated)  # (..., F) -> (..., N)


class LayerCache(NamedTuple):
    """What one :class:`ModernDecoderBlock` keeps between decoding calls: the rotated keys and the values of every
    token so far, (B, G, T_past, h) each, for the G key/value heads only (grouped-query attention's saving)."""

    keys: torch.Tensor
    values: torch.Tensor


class ModernDecoderBlock(nn.Module):
    """A Llama-style decoder block: pre-norm RMSNorm, causal grouped-query attention with rotary positions, SwiGLU.

    ``ModernDecoderBlock(num_hiddens, num_heads, num_kv_heads, ffn_num_hiddens=None, max_len=1024,
    rope_base=10000.0, eps=1e-6)``. With h = num_hiddens / num_heads and G = num_kv_heads (num_heads a multiple of
    G), ``forward(X, cache=None)`` for X (B, T, N) returns ``(Y, new_cache)``:

    - ``A = attn_norm(X)``; queries ``W_q(A)`` as H heads, keys ``W_k(A)`` and values ``W_v(A)`` as G heads of h
      features (every linear layer without bias);
    - the queries and keys turned by ``rotary`` (:class:`qkv.positional.RotaryPositionalEmbedding`) as positions
      ``T_past .. T_past + T - 1``, where ``T_past`` is the number of tokens in ``cache`` (0 without one);
    - the keys and values appended to the cache's, and attention by
      :func:`qkv.multihead.grouped_query_attention`, each token seeing every cached token and the tokens of X up to
      itself (causal);
    - ``X = X + W_o(heads joined)``, then ``Y = X + ffn(ffn_norm(X))`` with :class:`SwiGLU`.

    ``new_cache`` is a :class:`LayerCache` of the keys and values of all ``T_past + T`` tokens; a new tensor each
    call, the old cache left as it was. Run token by token from an empty cache, the outputs equal those of one call
    on the whole sequence. No dropout: decoders of this kind are pretrained without it.
    """

    def __init__(
        self,
        num_hiddens: int,
        num_heads: int,
        num_kv_heads: int,
        ffn_num_hiddens: int | None = None,
        max_len: int = 1024,
        rope_base: float = 10000.0,
        eps: float = 1e-6,
    ):
        super().__init__()
        N, H, G = (positive_int(v, n) for v, n in ((num_hiddens, "num_hiddens"), (num_heads, "num_heads"),
                                                   (num_kv_heads, "num_kv_heads")))  # fmt: skip
        if N % H:
            raise ValueError(f"num_hiddens = {N} must be divisible by num_heads = {H}")
        if H % G:
            raise ValueError(f"num_heads = {H} must be a multiple of num_kv_heads = {G}: each key/value head serves "
                             "the same number of query heads")  # fmt: skip
        h = N // H
        self.num_heads, self.num_kv_heads, self.head_dim = H, G, h
        self.attn_norm = RMSNorm(N, eps)
        self.W_q = nn.Linear(N, H * h, bias=False)
        self.W_k = nn.Linear(N, G * h, bias=False)
        self.W_v = nn.Linear(N, G * h, bias=False)
        self.W_o = nn.Linear(H * h, N, bias=False)
        self.rotary = RotaryPositionalEmbedding(h, rope_base, max_len)
        self.ffn_norm = RMSNorm(N, eps)
        self.ffn = SwiGLU(N, ffn_num_hiddens)

    def forward(self, X: torch.Tensor, cache: LayerCache | None = None) -> tuple[torch.Tensor, LayerCache]:
        B, T, _ = X.shape
        H, G, h = self.num_heads, self.num_kv_heads, self.head_dim
        past = 0 if cache is None else cache.keys.shape[2]
        A = self.attn_norm(X)  # (B, T, N)
        queries = self.W_q(A).reshape(B, T, H, h).transpose(1, 2)  # (B, T, H*h) -> (B, T, H, h) -> (B, H, T, h)
        keys = self.W_k(A).reshape(B, T, G, h).transpose(1, 2)  # (B, T, G*h) -> (B, G, T, h)
        values = self.W_v(A).reshape(B, T, G, h).transpose(1, 2)  # (B, T, G*h) -> (B, G, T, h)
        queries = self.rotary(queries, offset=past)  # (B, H, T, h), positions past .. past + T - 1
        keys = self.rotary(keys, offset=past)  # (B, G, T, h)
        if cache is not None:
            keys = torch.cat((cache.keys, keys), dim=2)  # (B, G, T_past, h) + (B, G, T, h) -> (B, G, K, h)
            values = torch.cat((cache.values, values), dim=2)  # (B, G, K, h), K = T_past + T
        seen = torch.arange(past + 1, past + T + 1, device=X.device).expand(B, T)  # (B, T): token t sees past + t + 1
        heads = grouped_query_attention(queries, keys, values, seen)  # (B, H, T, h)
        X = X + self.W_o(heads.transpose(1, 2).reshape(B, T, H * h))  # (B, H, T, h) -> (B, T, H*h) -> (B, T, N)
        return X + self.ffn(self.ffn_norm(X)), LayerCache(keys, values)  # (B, T, N)


@dataclass
class ModernConfig:
    """Hyper-parameters of a :class:`ModernDecoderLM` (the modern-decoder lab).

    The fields of 11.9's :class:`qkv.pretraining.GPTConfig` that still apply, plus ``num_kv_heads`` (grouped-query
    attention), ``rope_base`` (rotary positions) and ``eps`` (RMSNorm). ``ffn_num_hiddens=None`` takes
    :func:`swiglu_hiddens` of ``num_hiddens``. No dropout and no biases, as in the decoders it follows.
    """

    vocab_size: int
    num_hiddens: int = 64
    num_heads: int = 4
    num_kv_heads: int = 2
    num_blks: int = 2
    ffn_num_hiddens: int | None = None
    max_len: int = 128
    rope_base: float = 10000.0
    eps: float = 1e-6
    tie_weights: bool = True
    lr: float = 3e-3
    weight_decay: float = 0.01

    def __post_init__(self):
        for name in ("vocab_size", "num_hiddens", "num_heads", "num_kv_heads", "num_blks", "max_len"):
            setattr(self, name, positive_int(getattr(self, name), f"ModernConfig.{name}"))
        if self.num_hiddens % self.num_heads:
            raise ValueError(f"num_hiddens = {self.num_hiddens} must be divisible by num_heads = {self.num_heads}")
        if self.num_heads % self.num_kv_heads:
            raise ValueError(f"num_heads = {self.num_heads} must be a multiple of num_kv_heads = {self.num_kv_heads}")


def top_p_distribution(logits: torch.Tensor, top_p: float, temperature: float = 1.0) -> torch.Tensor:
    """Nucleus sampling's distribution of the next token (Holtzman et al., 2020): logits (..., V) -> probabilities.

    With ``p = softmax(logits / temperature)``, the nucleus is the smallest set of the most likely tokens whose
    probabilities sum to at least ``top_p``: tokens are taken from the most likely down, each while the total of
    those taken before it is below ``top_p``, so the most likely token is always in, and the token that reaches
    ``top_p`` is in too. Ties: a token as likely as the least likely one taken is taken as well, so the set never
    depends on the order of equal probabilities. The result is ``p`` on the nucleus, 0 elsewhere, divided by its
    sum. ``top_p`` in (0, 1]; ``top_p = 1`` keeps every token. ``temperature`` > 0.
    """
    if isinstance(top_p, bool) or not isinstance(top_p, int | float) or not 0 < top_p <= 1:
        raise ValueError(f"top_p must be a number in (0, 1], got {top_p!r}")
    if not temperature > 0:
        raise ValueError(f"temperature must be > 0, got {temperature!r}")
    probs = torch.softmax(logits.double() / temperature, dim=-1)  # (..., V), in float64: sums near top_p are exact
    ordered = probs.sort(dim=-1, descending=True).values  # (..., V)
    before = ordered.cumsum(dim=-1) - ordered  # (..., V): the total of the tokens more likely than each
    taken = ordered.masked_fill(before >= top_p, float("inf"))  # (..., V): inf where not taken
    least = taken.min(dim=-1, keepdim=True).values  # (..., 1): the least likely token taken
    kept = probs.masked_fill(probs < least, 0.0)  # (..., V)
    return (kept / kept.sum(dim=-1, keepdim=True)).to(logits.dtype)  # (..., V)


class CachedLM(nn.Module):
    """What a language model with a key/value cache has besides its layers: ``forward``, ``loss``,
    ``configure_optimizers`` and ``generate``, all through ``decode`` (11.9's ``DecoderOnlyLM`` interface).

    A subclass defines ``config`` (with ``max_len``, ``lr`` and ``weight_decay``), ``head`` (the output layer) and
    ``decode(X, caches=None) -> (logits, caches)``: the logits (B, T, V) of tokens X (B, T) that follow ``caches``
    (None: the start of the text) and the caches after them.
    """

    def forward(self, X: torch.Tensor) -> torch.Tensor:
        """Token ids X (B, T) -> logits (B, T, V): position t is trained to predict token t + 1."""
        return self.decode(X)[0]

    # The same loss and optimiser as 11.9's GPT: its methods, not copies (they read only ``self.parameters()`` and
    # ``self.config.lr`` / ``weight_decay``).
    loss = DecoderOnlyLM.loss
    configure_optimizers = DecoderOnlyLM.configure_optimizers

    def generate(
        self,
        prompt_ids: torch.Tensor,
        max_new_tokens: int,
        temperature: float = 1.0,
        top_k=None,
        top_p=None,
        generator: torch.Generator | None = None,
        greedy: bool = False,
    ) -> torch.Tensor:
        """Extend ``prompt_ids`` (T,) or (B, T) by ``max_new_tokens`` sampled tokens, with the key/value cache.

        The prompt's last ``max_len`` tokens go through in one call, then one token per call through the caches;
        when the context would pass ``max_len`` the window slides and the caches start again from its last
        ``max_len`` tokens (what 11.9's ``generate`` sees). Sampling as 11.9's: logits divided by ``temperature``,
        the ``top_k`` largest kept, then the nucleus of :func:`top_p_distribution` when ``top_p`` is given;
        ``greedy=True`` or ``temperature=0`` takes the argmax. Eval mode, restored after. Returns the prompt and the
        new tokens: (T + max_new_tokens,) or (B, T + max_new_tokens).
        """
        if isinstance(max_new_tokens, bool) or not isinstance(max_new_tokens, int) or max_new_tokens < 0:
            raise ValueError(f"max_new_tokens must be a non-negative int, got {max_new_tokens!r}")
        if temperature < 0:
            raise ValueError(f"temperature must be >= 0 (0 means greedy), got {temperature}")
        if top_k is not None and (isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 1):
            raise ValueError(f"top_k must be None or a positive int, got {top_k!r}")
        if top_p is not None:
            top_p_distribution(torch.zeros(1), top_p)  # the same check, before any work
        prompt_ids = torch.as_tensor(prompt_ids)
        unbatched = prompt_ids.dim() == 1
        ids = prompt_ids[None] if unbatched else prompt_ids  # (T,) -> (1, T)
        if ids.dim() != 2 or ids.shape[1] == 0:
            raise ValueError(f"prompt_ids must be (T,) or (B, T) with T >= 1, got shape {tuple(prompt_ids.shape)}")
        ids, L = ids.to(self.head.weight.device), self.config.max_len
        caches = None
        with evaluating(self), torch.no_grad():
            for _ in range(max_new_tokens):
                if caches is None:
                    logits, caches = self.decode(ids[:, -L:])  # the whole window at once
                else:
                    logits, caches = self.decode(ids[:, -1:], caches)  # the newest token only
                logits = logits[:, -1, :]  # (B, T, V) -> (B, V)
                if greedy or temperature == 0:
                    next_id = logits.argmax(dim=-1, keepdim=True)  # (B, 1)
                else:
                    probs = next_token_distribution(logits, temperature, top_k)  # (B, V): 11.9's top-k sampling
                    if top_p is not None:
                        probs = top_p_distribution(probs.log(), top_p)  # (B, V): then the nucleus of what is left
                    next_id = torch.multinomial(probs, 1, generator=generator)  # (B, 1)
                ids = torch.cat((ids, next_id), dim=1)  # (B, T) ++ (B, 1) -> (B, T + 1)
                if ids.shape[1] > L:  # the next call would pass max_len: slide the window, start the caches again
                    caches = None
        return ids[0] if unbatched else ids


class ModernDecoderLM(CachedLM):
    """A language model of :class:`ModernDecoderBlock` blocks, with 11.9's ``DecoderOnlyLM`` interface.

    Token embedding (no positional table: positions enter through the rotary queries and keys), ``num_blks``
    blocks, a final :class:`RMSNorm` and a linear head to the vocabulary without bias, tied to the embedding if
    ``config.tie_weights``. ``forward(X)``: token ids (B, T), 1 <= T <= max_len -> next-token logits (B, T, V).
    ``decode(X, caches=None)``: the same logits for tokens that follow the ``caches`` (one :class:`LayerCache` per
    block, as the last call returned), and the new caches. ``loss``, ``configure_optimizers`` and ``generate`` as in
    ``DecoderOnlyLM``; ``generate`` decodes with the cache and takes ``top_p`` beside ``top_k``.
    """

    def __init__(self, config: ModernConfig):
        super().__init__()
        if not isinstance(config, ModernConfig):
            raise TypeError(f"ModernDecoderLM takes a ModernConfig, got {type(config).__name__}")
        self.config = c = config
        self.token_embedding = nn.Embedding(c.vocab_size, c.num_hiddens)
        self.blks = nn.ModuleList(
            ModernDecoderBlock(
                c.num_hiddens, c.num_heads, c.num_kv_heads, c.ffn_num_hiddens, c.max_len, c.rope_base, c.eps
            )
            for _ in range(c.num_blks)
        )
        self.norm_f = RMSNorm(c.num_hiddens, c.eps)
        self.head = nn.Linear(c.num_hiddens, c.vocab_size, bias=False)
        self.apply(self._init_weights)
        if c.tie_weights:
            self.head.weight = self.token_embedding.weight  # (V, N): one parameter, used twice

    @staticmethod
    def _init_weights(module: nn.Module) -> None:
        if isinstance(module, nn.Linear | nn.Embedding):  # as 11.9's GPT: small normal weights
            nn.init.normal_(module.weight, mean=0.0, std=0.02)

    def _check(self, X: torch.Tensor, past: int) -> None:
        if X.dim() != 2 or X.dtype not in (torch.long, torch.int, torch.int16, torch.uint8, torch.int8):
            raise ValueError(
                f"ModernDecoderLM expects integer token ids of shape (B, T), got {X.dtype} {tuple(X.shape)}"
            )
        T, L = X.shape[1], self.config.max_len
        if T == 0 or past + T > L:
            raise ValueError(
                f"{past} cached + {T} new tokens must be between 1 and max_len = {L}; "
                "crop the input to its last max_len tokens (and start a new cache) or build a larger max_len"
            )
        if X.min() < 0 or X.max() >= self.config.vocab_size:
            raise ValueError(
                f"token ids must lie in [0, vocab_size = {self.config.vocab_size}), "
                f"got ids from {X.min().item()} to {X.max().item()}"
            )

    def decode(self, X: torch.Tensor, caches=None) -> tuple[torch.Tensor, list[LayerCache]]:
        """Logits (B, T, V) of tokens X (B, T) that follow ``caches`` (None: the start), and the new caches."""
        caches = [None] * len(self.blks) if caches is None else list(caches)
        if len(caches) != len(self.blks):
            raise ValueError(f"caches must hold one LayerCache per block ({len(self.blks)}), got {len(caches)}")
        self._check(X, 0 if caches[0] is None else caches[0].keys.shape[2])
        H = self.token_embedding(X)  # (B, T) -> (B, T, N)
        new = []
        for blk, cache in zip(self.blks, caches):
            H, cache = blk(H, cache)  # (B, T, N)
            new.append(cache)
        return self.head(self.norm_f(H)), new  # (B, T, N) -> (B, T, V)
