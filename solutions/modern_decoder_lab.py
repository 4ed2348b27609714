"""Answers to the stubs of book/modern-decoder-lab.md (the modern-decoder lab, after D2L 11.9), by grade_id =
function or class name.

The bodies are pasted into the notebook by the assembler, so they use only the notebook's names: ``torch``, ``nn``,
``F`` (``torch.nn.functional``), ``RotaryPositionalEmbedding`` (``qkv.positional``), ``grouped_query_attention``
(``qkv.multihead``), ``LayerCache``, ``ModernConfig`` and ``CachedLM`` (``qkv.modern_decoder``) and ``modern`` (the
course's ``qkv.modern_decoder``). The block builds on ``modern.RMSNorm`` and ``modern.SwiGLU`` and the language
model on ``modern.ModernDecoderBlock`` and ``modern.RMSNorm``, as their stubs ask, never on the student's own
Exercises 1 to 3. They are written out here, not ``qkv``'s bodies: those check their arguments with helpers the
notebook does not import.
"""

import torch
import torch.nn.functional as F
from torch import nn

from qkv import modern_decoder as modern
from qkv.modern_decoder import CachedLM, LayerCache
from qkv.multihead import grouped_query_attention
from qkv.positional import RotaryPositionalEmbedding

__all__ = ["RMSNorm", "swiglu_hiddens", "SwiGLU", "ModernDecoderBlock", "ModernDecoderLM", "top_p_distribution"]


class RMSNorm(nn.Module):
    def __init__(self, num_hiddens, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(num_hiddens))

    def forward(self, X):
        wide = X.float() if X.dtype in (torch.float16, torch.bfloat16) else X  # (..., N)
        scale = torch.rsqrt(wide.pow(2).mean(dim=-1, keepdim=True) + self.eps)  # (..., N) -> (..., 1)
        return (wide * scale).to(X.dtype) * self.weight.to(X.dtype)  # (..., N)


def swiglu_hiddens(num_hiddens, multiple_of=16):
    return -(-8 * num_hiddens // (3 * multiple_of)) * multiple_of  # ceil(8N / 3m) * m, in whole numbers


class SwiGLU(nn.Module):
    def __init__(self, num_hiddens, ffn_num_hiddens=None):
        super().__init__()
        hiddens = swiglu_hiddens(num_hiddens) if ffn_num_hiddens is None else ffn_num_hiddens
        self.W_gate = nn.Linear(num_hiddens, hiddens, bias=False)
        self.W_up = nn.Linear(num_hiddens, hiddens, bias=False)
        self.W_down = nn.Linear(hiddens, num_hiddens, bias=False)

    def forward(self, X):
        return self.W_down(F.silu(self.W_gate(X)) * self.W_up(X))  # (..., N) -> (..., F) -> (..., N)


class ModernDecoderBlock(nn.Module):
    def __init__(
        self, num_hiddens, num_heads, num_kv_heads, ffn_num_hiddens=None, max_len=1024, rope_base=10000.0, eps=1e-6
    ):
        super().__init__()
        head_dim = num_hiddens // num_heads
        self.num_heads, self.num_kv_heads, self.head_dim = num_heads, num_kv_heads, head_dim
        self.attn_norm = modern.RMSNorm(num_hiddens, eps)
        self.W_q = nn.Linear(num_hiddens, num_heads * head_dim, bias=False)
        self.W_k = nn.Linear(num_hiddens, num_kv_heads * head_dim, bias=False)
        self.W_v = nn.Linear(num_hiddens, num_kv_heads * head_dim, bias=False)
        self.W_o = nn.Linear(num_heads * head_dim, num_hiddens, bias=False)
        self.rotary = RotaryPositionalEmbedding(head_dim, rope_base, max_len)
        self.ffn_norm = modern.RMSNorm(num_hiddens, eps)
        self.ffn = modern.SwiGLU(num_hiddens, ffn_num_hiddens)

    def forward(self, X, cache=None):
        B, T, _ = X.shape
        H, G, h = self.num_heads, self.num_kv_heads, self.head_dim
        past = 0 if cache is None else cache.keys.shape[2]
        A = self.attn_norm(X)  # (B, T, N)
        queries = self.W_q(A).reshape(B, T, H, h).transpose(1, 2)  # (B, T, H*h) -> (B, H, T, h)
        keys = self.W_k(A).reshape(B, T, G, h).transpose(1, 2)  # (B, T, G*h) -> (B, G, T, h)
        values = self.W_v(A).reshape(B, T, G, h).transpose(1, 2)  # (B, G, T, h)
        queries = self.rotary(queries, offset=past)  # positions past .. past + T - 1
        keys = self.rotary(keys, offset=past)
        if cache is not None:
            keys = torch.cat((cache.keys, keys), dim=2)  # (B, G, T_past + T, h)
            values = torch.cat((cache.values, values), dim=2)
        seen = torch.arange(past + 1, past + T + 1, device=X.device).expand(B, T)  # (B, T)
        heads = grouped_query_attention(queries, keys, values, seen)  # (B, H, T, h)
        X = X + self.W_o(heads.transpose(1, 2).reshape(B, T, H * h))  # (B, T, N)
        return X + self.ffn(self.ffn_norm(X)), LayerCache(keys, values)


class ModernDecoderLM(CachedLM):
    def __init__(self, config):
        super().__init__()
        self.config = c = config
        self.token_embedding = nn.Embedding(c.vocab_size, c.num_hiddens)
        self.blks = nn.ModuleList(
            modern.ModernDecoderBlock(
                c.num_hiddens, c.num_heads, c.num_kv_heads, c.ffn_num_hiddens, c.max_len, c.rope_base, c.eps
            )
            for _ in range(c.num_blks)
        )
        self.norm_f = modern.RMSNorm(c.num_hiddens, c.eps)
        self.head = nn.Linear(c.num_hiddens, c.vocab_size, bias=False)
        for module in self.modules():
            if isinstance(module, nn.Linear | nn.Embedding):
                nn.init.normal_(module.weight, mean=0.0, std=0.02)
        if c.tie_weights:
            self.head.weight = self.token_embedding.weight  # (V, N): one parameter, used twice

    def decode(self, X, caches=None):
        if caches is None:
            caches = [None] * len(self.blks)
        past = 0 if caches[0] is None else caches[0].keys.shape[2]
        if X.shape[1] == 0 or past + X.shape[1] > self.config.max_len:
            raise ValueError(f"{past} cached + {X.shape[1]} new tokens must be between 1 and max_len")
        H = self.token_embedding(X)  # (B, T) -> (B, T, N)
        new = []
        for blk, cache in zip(self.blks, caches):
            H, cache = blk(H, cache)  # (B, T, N)
            new.append(cache)
        return self.head(self.norm_f(H)), new  # (B, T, N) -> (B, T, V)


def top_p_distribution(logits, top_p, temperature=1.0):
    if not 0 < top_p <= 1:
        raise ValueError(f"top_p must be in (0, 1], got {top_p}")
    probs = torch.softmax(logits.double() / temperature, dim=-1)  # (..., V)
    ordered = probs.sort(dim=-1, descending=True).values  # (..., V)
    before = ordered.cumsum(dim=-1) - ordered  # the total of the tokens more likely than each
    taken = ordered.masked_fill(before >= top_p, float("inf"))  # inf where not taken
    least = taken.min(dim=-1, keepdim=True).values  # (..., 1): the least likely token taken
    kept = probs.masked_fill(probs < least, 0.0)  # (..., V)
    return (kept / kept.sum(dim=-1, keepdim=True)).to(logits.dtype)
