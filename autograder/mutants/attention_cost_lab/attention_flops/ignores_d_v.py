"""Mistake: the weighted sum is counted with the key size d even when the values have another size d_v
(passes the visible test, where d_v = d)."""


def attention_flops(n_q, n_k, d, d_v=None, batch=1):
    pairs = batch * n_q * n_k
    flops = {"scores": 2 * pairs * d, "scale": pairs, "softmax": 5 * pairs, "weighted_sum": 2 * pairs * d}
    flops["total"] = sum(flops.values())
    return flops
