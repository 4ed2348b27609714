"""Mistake: the values and the output counted with the key size d instead of d_v (passes the visible test)."""


def attention_bytes(n_q, n_k, d, d_v=None, batch=1, dtype_bytes=4, materialize=True):
    s = dtype_bytes * batch
    nbytes = {
        "queries": s * n_q * d,
        "keys": s * n_k * d,
        "values": s * n_k * d,
        "output": s * n_q * d,
        "scores_and_weights": 4 * s * n_q * n_k if materialize else 0,
    }
    nbytes["total"] = sum(nbytes.values())
    return nbytes
