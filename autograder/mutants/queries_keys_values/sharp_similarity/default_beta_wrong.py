"""Mistake: right formula, but the default sharpness is 1 instead of 10 (passes the visible test)."""


def sharp_similarity(queries, keys, beta=1.0):
    diffs = queries[:, None, :] - keys[None, :, :]
    return -beta * (diffs**2).sum(dim=-1)
