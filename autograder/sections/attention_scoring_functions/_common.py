# Shared by the hidden tests of this section's attention exercises; the assembler puts it in front of each of them
# (autograder/assemble.py: hidden_tests), so every hidden block stays self-contained in its notebook cell.
import math as _math

import torch as _torch

_T = checks.trusted
_f64 = _T.float64


def _attend_ref(q, k, v, lens, score):
    """Weights and output of masked attention by explicit loops over nested lists q[b][i], k[b][j], v[b][j];
    query i of example b sees the first lens[b][i] keys."""
    weights, output = [], []
    for b in range(len(q)):
        w_b, o_b = [], []
        for i, qi in enumerate(q[b]):
            n, m = lens[b][i], len(k[b])
            s = [score(qi, kj) for kj in k[b][:n]]
            top = max(s)
            e = [_math.exp(x - top) for x in s]
            w = [x / sum(e) for x in e] + [0.0] * (m - n)
            w_b.append(w)
            o_b.append([sum(w[j] * v[b][j][c] for j in range(m)) for c in range(len(v[b][0]))])
        weights.append(w_b)
        output.append(o_b)
    return weights, output


def _check_dropout_on_weights(layer, queries, equal_keys, p):
    """Dropout must act on the weights. Equal keys give every query the weights 1/3, 1/3, 1/3, and the values 1, 10
    and 100 make each output tell which weights survived: (a + 10 b + 100 c) / (3 (1 - p)) with a, b, c in {0, 1}.
    Dropout on the output instead gives only 0 or 111 / (3 (1 - p)); no dropout gives 37."""
    values = _T.tensor([[[1.0], [10.0], [100.0]]], dtype=_f64)  # (1, K, 1)
    layer.train()
    _T.manual_seed(1139)
    out = layer(queries, equal_keys, values)
    checks.check_shape(out, (1, 64, 1), "output in training mode (hidden, 64 queries, 3 equal keys)")
    checks.check_close(
        layer.attention_weights,
        _T.ones(1, 64, 3, dtype=_f64) / 3,
        "attention_weights in training mode, with 3 equal keys",
        atol=1e-12,
        rtol=0,
        hint="store the weights as they are before dropout",
    )
    allowed = [(a + 10 * b + 100 * c) / (3 * (1 - p)) for a in (0, 1) for b in (0, 1) for c in (0, 1)]
    got = [row[0] for row in out[0].tolist()]
    checks.check_true(
        all(min(abs(g - x) for x in allowed) < 1e-9 for g in got),
        f"in training mode, each output is the values weighted by dropped-out weights (w / (1 - p) or 0, p = {p})",
        hint="keep nn.Dropout(dropout) with the rate passed as self.dropout, apply it to the attention weights, then "
        "multiply by the values",
    )
    checks.check_true(
        len({round(g, 6) for g in got}) > 2,
        "in training mode, dropout zeroes single weights, not whole outputs",
        hint="apply self.dropout to the attention weights, not to the output",
    )
    layer.eval()


def _keep_of(lens, K):
    """The (B, Q, K) mask of the valid keys for nested lists lens[b][i]."""
    return _T.tensor([[[j < n for j in range(K)] for n in row] for row in lens])


def _masked_torch(scores, keep):
    """Masked softmax of (B, Q, K) scores in trusted torch, differentiable: exp(-inf) = 0 past the valid keys."""
    return _T.softmax(_T.where(keep, scores, _T.tensor(float("-inf"), dtype=scores.dtype)), dim=-1)


_HINT_GRAD = (
    "compute with torch operations on the inputs, without .detach() (also not on the weights you store, when the "
    "output is made from them), torch.no_grad(), .data or .tolist()"
)


def _check_gradients(what, call, inputs, names, reference, params=(), hint=_HINT_GRAD):
    """The gradients of call(*inputs), a tuple of tensors, with respect to the inputs and params (name, parameter)
    equal those of reference(*inputs, *params), the same tuple computed here with trusted torch. Each result is dotted
    with a fixed random tensor and the sum differentiated, so every entry of every result counts."""
    leaves = [t.detach().clone().requires_grad_() for t in inputs]
    got = call(*leaves)
    checks.check_true(
        all(getattr(t, "requires_grad", False) is True for t in got),
        f"{what}: the results for inputs that require grad carry a gradient (hidden)",
        hint=hint,
    )
    gen = _T.Generator().manual_seed(1137)
    probes = [_T.randn(*t.shape, generator=gen, dtype=t.dtype) for t in got]
    targets = leaves + [p for _, p in params]
    try:
        grads = _torch.autograd.grad(sum((t * r).sum() for t, r in zip(got, probes)), targets, allow_unused=True)
    except RuntimeError as err:  # e.g. a tensor autograd needs was modified in place
        grads = None
        checks.check_true(
            False,
            f"{what}: backpropagating through the results failed (hidden): {str(err).splitlines()[0]}",
            hint="no in-place operation (x /= ..., x[...] = ...) on a tensor the gradient needs: write y = x / ...",
        )
    ref_leaves = [t.detach().clone().requires_grad_() for t in inputs] + [
        p.detach().clone().requires_grad_() for _, p in params
    ]
    expected = reference(*ref_leaves)
    ref_grads = _torch.autograd.grad(sum((t * r).sum() for t, r in zip(expected, probes)), ref_leaves)
    for name, a, b in zip(list(names) + [n for n, _ in params], grads, ref_grads):
        checks.check_true(a is not None, f"{what}: the gradient reaches the {name} (hidden)", hint=hint)
        checks.check_close(a, b, f"{what}: the gradient of the {name} (hidden, float64)", atol=1e-10, rtol=0, hint=hint)


def _check_inputs_unchanged(what, tensors, before):
    """The caller's tensors hold what they held before the call (``before``: their values as nested lists)."""
    checks.check_true(
        [t.tolist() for t in tensors] == before,
        f"{what} leaves the queries, keys and values as they were (hidden)",
        hint="do not scale or mask an input in place (queries /= ..., X[...] = ...): write q = queries / ..., or "
        "masked_fill, which return new tensors",
    )
