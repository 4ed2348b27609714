"""Mistake: the count is for one example, whatever the batch size (passes the visible test, where batch = 1)."""


def attention_flops(n_q, n_k, d, d_v=None, batch=1):
    d_v = d if d_v is None else d_v
    pairs = n_q * n_k
    flops = {"scores": 2 * pairs * d, "scale": pairs, "softmax": 5 * pairs, "weighted_sum": 2 * pairs * d_v}
    flops["total"] = sum(flops.values())
    return flops
