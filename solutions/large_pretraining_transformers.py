"""Answers to the stubs of book/large-pretraining-transformers.md (D2L 11.9), by grade_id = function or class name.

The bodies are pasted into the notebook by the assembler, so they use only the notebook's names: ``torch`` and
``IGNORE_INDEX`` (-100, the label of a position with nothing to predict). Each answer is written out: the references
in ``qkv.pretraining`` and ``qkv.corruption`` have richer signatures (vocabularies, batches of prefixes, exact
counts), so the stubs ask for the core of each idea.
"""

import torch

IGNORE_INDEX = -100

__all__ = [
    "bidirectional_mask",
    "causal_mask",
    "prefix_lm_mask",
    "encoder_decoder_masks",
    "mask_tokens",
    "spans_to_example",
    "span_noise",
    "next_token_pairs",
    "sampling_distribution",
]


def bidirectional_mask(T, valid_lens=None):
    keep = torch.ones(T, T, dtype=torch.bool)  # (Q, K): every query sees every key
    if valid_lens is None:
        return keep
    keys = torch.arange(T, device=valid_lens.device)  # (K,)
    valid = keys[None, :] < valid_lens[:, None]  # (1, K) < (B, 1) -> (B, K)
    return keep.to(valid_lens.device)[None, :, :] & valid[:, None, :]  # (1, Q, K) & (B, 1, K) -> (B, Q, K)


def causal_mask(T, valid_lens=None):
    device = None if valid_lens is None else valid_lens.device
    pos = torch.arange(T, device=device)  # (T,)
    keep = pos[None, :] <= pos[:, None]  # (1, K) <= (Q, 1) -> (Q, K): key j <= query i
    if valid_lens is None:
        return keep
    valid = pos[None, :] < valid_lens[:, None]  # (1, K) < (B, 1) -> (B, K)
    return keep[None, :, :] & valid[:, None, :]  # (1, Q, K) & (B, 1, K) -> (B, Q, K)


def prefix_lm_mask(T, prefix_len):
    pos = torch.arange(T)  # (T,)
    causal = pos[None, :] <= pos[:, None]  # (Q, K): key j <= query i
    in_prefix = pos < prefix_len  # (K,): keys inside the prefix
    return causal | in_prefix[None, :]  # (Q, K) | (1, K) -> (Q, K)


def encoder_decoder_masks(T_src, T_tgt, src_valid_lens):
    device = src_valid_lens.device
    src_keys = torch.arange(T_src, device=device) < src_valid_lens[:, None]  # (1, S) < (B, 1) -> (B, S)
    enc = src_keys[:, None, :].expand(-1, T_src, -1)  # (B, 1, S) -> (B, S, S)
    pos = torch.arange(T_tgt, device=device)  # (T,)
    dec = pos[None, :] <= pos[:, None]  # (T, T): key j <= query i
    cross = src_keys[:, None, :].expand(-1, T_tgt, -1)  # (B, 1, S) -> (B, T, S)
    return enc, dec, cross


def mask_tokens(tokens, mask_id, vocab_size, num_special, generator=None):
    chosen = (torch.rand(tokens.shape, generator=generator) < 0.15) & (tokens >= num_special)  # (B, T)
    u = torch.rand(tokens.shape, generator=generator)  # (B, T): one draw per token for the 80/10/10 split
    random_ids = torch.randint(num_special, vocab_size, tokens.shape, generator=generator)  # (B, T)
    inputs = torch.where(chosen & (u < 0.8), mask_id, tokens)  # 80%: <mask>
    inputs = torch.where(chosen & (u >= 0.8) & (u < 0.9), random_ids, inputs)  # 10%: a random token
    labels = torch.where(chosen, tokens, IGNORE_INDEX)  # (B, T): the original only where chosen
    return inputs, labels


def spans_to_example(tokens, noise, sentinel_ids):
    inputs, targets, k = [], [], 0
    for t in range(len(tokens)):
        if noise[t] and (t == 0 or not noise[t - 1]):  # the first token of a span
            inputs.append(sentinel_ids[k])
            targets.append(sentinel_ids[k])
            k += 1
        if noise[t]:
            targets.append(tokens[t])
        else:
            inputs.append(tokens[t])
    targets.append(sentinel_ids[k])  # the closing sentinel
    return torch.tensor(inputs, dtype=torch.long), torch.tensor(targets, dtype=torch.long)


def span_noise(T, generator=None):
    n = min(max(round(0.15 * T), 1), T - 1)  # noise tokens
    S = max(round(n / 3), 1)  # spans, of mean length n / S
    # S span lengths >= 1 summing to n, and S + 1 gaps of kept tokens, the inner ones >= 1, summing to T - n.
    cuts = torch.randperm(n - 1, generator=generator)[: S - 1].sort().values + 1  # (S - 1,)
    spans = torch.diff(torch.cat([torch.tensor([0]), cuts, torch.tensor([n])]))  # (S,)
    free = T - n - (S - 1)  # kept tokens left once every inner gap has one
    bars = torch.randperm(free + S, generator=generator)[:S].sort().values  # (S,)
    edges = torch.cat([torch.tensor([-1]), bars, torch.tensor([free + S])])  # (S + 2,)
    gaps = torch.diff(edges) - 1  # (S + 1,): >= 0, summing to free
    gaps[1:S] += 1  # the inner gaps keep one token at least
    noise = torch.zeros(T, dtype=torch.bool)
    start = 0
    for k in range(S):
        start += int(gaps[k])
        noise[start : start + int(spans[k])] = True
        start += int(spans[k])
    return noise


def next_token_pairs(corpus, num_steps):
    n = max((len(corpus) - 1) // num_steps, 0)  # whole windows, each needing one more token for its last label
    X = corpus[: n * num_steps].reshape(n, num_steps)  # (n * T,) -> (n, T)
    Y = corpus[1 : n * num_steps + 1].reshape(n, num_steps)  # (n * T,) -> (n, T): X shifted by one
    return X, Y


def sampling_distribution(logits, temperature=1.0, top_k=None):
    scaled = logits / temperature  # (B, V)
    if top_k is not None:
        kth = torch.topk(scaled, top_k, dim=-1).values[..., -1:]  # (B, k) -> (B, 1): the k-th largest
        scaled = scaled.masked_fill(scaled < kth, float("-inf"))  # (B, V)
    return torch.softmax(scaled, dim=-1)  # (B, V)
