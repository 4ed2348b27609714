"""Mistake: the score matrix counted once (written), not written and read back, nor the weights."""


def attention_bytes(n_q, n_k, d, d_v=None, batch=1, dtype_bytes=4, materialize=True):
    d_v = d if d_v is None else d_v
    s = dtype_bytes * batch
    nbytes = {
        "queries": s * n_q * d,
        "keys": s * n_k * d,
        "values": s * n_k * d_v,
        "output": s * n_q * d_v,
        "scores_and_weights": s * n_q * n_k if materialize else 0,
    }
    nbytes["total"] = sum(nbytes.values())
    return nbytes
