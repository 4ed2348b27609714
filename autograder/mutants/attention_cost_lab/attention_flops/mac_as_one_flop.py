"""Mistake: a multiply-add counted as 1 FLOP, so both matrix products are half the convention's count."""


def attention_flops(n_q, n_k, d, d_v=None, batch=1):
    d_v = d if d_v is None else d_v
    pairs = batch * n_q * n_k
    flops = {"scores": pairs * d, "scale": pairs, "softmax": 5 * pairs, "weighted_sum": pairs * d_v}
    flops["total"] = sum(flops.values())
    return flops
