"""Mistake: the softmax counted as exp, sum and divide (3 per score), forgetting the maximum and its subtraction."""


def attention_flops(n_q, n_k, d, d_v=None, batch=1):
    d_v = d if d_v is None else d_v
    pairs = batch * n_q * n_k
    flops = {"scores": 2 * pairs * d, "scale": pairs, "softmax": 3 * pairs, "weighted_sum": 2 * pairs * d_v}
    flops["total"] = sum(flops.values())
    return flops
