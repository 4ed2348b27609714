"""Answers to the stubs of book/queries-keys-values.md (D2L 11.1), by grade_id = function name."""

import torch


def attention_pooling(queries, keys, values, similarity):
    scores = similarity(queries, keys)  # (Q, K)
    weights = torch.softmax(scores, dim=-1)  # (Q, K), rows sum to 1
    return weights @ values, weights  # (Q, K) @ (K, v) -> (Q, v)


def sharp_similarity(queries, keys, beta=10.0):
    diffs = queries[:, None, :] - keys[None, :, :]  # (Q, 1, d) - (1, K, d) -> (Q, K, d)
    return -beta * (diffs**2).sum(dim=-1)  # (Q, K)


def averaging_similarity(queries, keys):
    return queries.new_zeros(queries.shape[0], keys.shape[0])  # (Q, K): equal scores give equal weights


def query_jacobian(weights, keys, beta=1.0):
    mean = weights @ keys  # (Q, K) @ (K, d) -> (Q, d): each query's output, the weighted mean of the keys
    second = torch.einsum("qk,kd,ke->qde", weights, keys, keys)  # (Q, d, d): sum_j p_qj k_j k_j^T
    outer = mean[:, :, None] * mean[:, None, :]  # (Q, d, 1) * (Q, 1, d) -> (Q, d, d)
    return beta * (second - outer)  # (Q, d, d): beta times the covariance of the keys under the weights
