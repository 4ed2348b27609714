# Hidden: float64, other sizes (V = 9, E = 3, N = 5, L = 3, B = 4, T = 6, T_src = 7), our own weights copied into
# the student's layers, and a reference written out here step by step from the equations (PyTorch's GRU cell,
# additive attention, masked softmax): the weights of every step, the logits and the final state. Masking is also
# checked by perturbing the padded source positions (nothing may change); in evaluation mode dropout does nothing;
# in training mode the given layers drop out at the rate passed (0.4), as qkv's decoder with the same seed; the
# gradients reach the encoder's outputs, the initial state and every parameter (the embedding too); the class is the
# student's own. (Runs in the notebook, after its visible test.)
# Contract: the page's sentences each check relies on.
#   "Your own loop (not ref.Seq2SeqAttentionDecoder's)" -> the class and its forward are the student's own
#   "in any dtype the layers have (float64 too)" -> float64 logits
#   "on their device." -> CPU logits with 'meta' as the default device
#   "The list holds this call's steps only: it starts empty at each call." -> one entry after a one-token call
#   "Gradients reach enc_outputs and the initial hidden_state through every" -> gradients against autograd
#   "step (nothing detached)." -> the gradients of every parameter, the embedding's too
#   "enc_valid_lens (B,) or None]." -> None: every source position counts
#   "The layers are given:" -> the parameters are the given layers' (L = 3); training mode: their dropout 0.4
#   "query = the top layer's hidden_state, (B, 1, N)" -> weights of step 1, valid positions
#   "context = self.attention(query, enc_outputs, enc_outputs, enc_valid_lens)" -> masking: step 1, perturbed
#   "Stores in self._attention_weights a list of every step's" -> one entry per step
#   "self.attention.attention_weights, each (B, 1, T_src)." -> weights of each step
#   "started empty at each call" -> one entry per step of this call
#   "For each step t' in order" -> weights of every step
#   "one GRU step gives the new hidden_state" -> weights of every step, logits
#   "GRU input = [context, embedding of X[:, t']] concatenated on the last axis" -> logits
#   "(context first)" -> logits
#   "Returns the logits self.dense(outputs), (B, T, V)" -> logits
#   "and the new state [enc_outputs, hidden_state after the last step, enc_valid_lens]" -> the returned state
#   "hidden_state after the last step" -> one token at a time equals the whole sequence
# Classes: each kind of mistake, and the check that catches it.
#   value -> weights of every step, logits and final state against the equations (the first layer's state as query)
#   dtype -> float64 logits to 1e-10 (outputs collected in a float32 buffer)
#   device -> CPU layers and inputs with 'meta' as the default device: a buffer made without device= lands on 'meta'
#   pass-through -> lengths reach the attention: padding changes nothing; dropout 0.4 and L = 3 reach the layers
#   state -> the attention-weights list holds this call's steps only (appended to the previous call's list)
#   gradient -> gradients reach enc_outputs, the initial state and every parameter (state or embedding detached)
#   type -> attention_weights is a list, one tensor per step (the steps stacked into one tensor)
#   edge -> enc_valid_lens=None (a call on the lengths that fails on None); one token at a time
#   symmetry -> E = 3 and N = 5 differ and weights are random: [embedding, context] for [context, embedding] shows
#   train-eval -> n/a: forward has no dropout or mode of its own; the given layers carry them
#   efficiency -> n/a: the contract promises no bound beyond one step per token, which the loop is by construction
import torch as _torch
from _shared import _device_probe  # the course's shared probes (the assembler inlines _shared.py)

import qkv.bahdanau as _qb

_T = checks.trusted
_f64 = _T.float64
_rng_state = _torch.get_rng_state()  # restored at the end: the cells after this one draw as if it had not run
_V, _E, _N, _L, _B, _S, _Tgt = 9, 3, 5, 3, 4, 7, 6
_g = _T.Generator().manual_seed(1142)


def _rand(*shape):
    return _T.randn(*shape, generator=_g, dtype=_f64) * 0.6


_P = {
    "embedding.weight": _rand(_V, _E),
    "attention.W_q.weight": _rand(_N, _N),
    "attention.W_k.weight": _rand(_N, _N),
    "attention.w_v.weight": _rand(1, _N),
    "dense.weight": _rand(_V, _N),
    "dense.bias": _rand(_V),
}
for _l in range(_L):
    _P[f"rnn.weight_ih_l{_l}"] = _rand(3 * _N, _N + _E if _l == 0 else _N)
    _P[f"rnn.weight_hh_l{_l}"] = _rand(3 * _N, _N)
    _P[f"rnn.bias_ih_l{_l}"] = _rand(3 * _N)
    _P[f"rnn.bias_hh_l{_l}"] = _rand(3 * _N)


def _sigmoid(x):
    return 1 / (1 + _T.exp(-x))


def _reference(enc, hidden, lens, X, P=_P):
    """Logits (B, T, V), weights (B, T, S) and the final state (L, B, N), one step at a time, with parameters P."""
    h = [hidden[l] for l in range(_L)]  # L x (B, N)
    keys = _T.matmul(enc, P["attention.W_k.weight"].T)  # (B, S, N) @ (N, N) -> (B, S, N)
    keep = _T.tensor([[s < n for s in range(_S)] for n in lens])  # (B, S)
    logits, weights = [], []
    for t in range(X.shape[1]):
        q = _T.matmul(h[-1], P["attention.W_q.weight"].T)  # (B, N): the top layer's state is the query
        feats = _T.tanh(q[:, None, :] + keys)  # (B, 1, N) + (B, S, N) -> (B, S, N)
        scores = _T.matmul(feats, P["attention.w_v.weight"][0])  # (B, S, N) @ (N,) -> (B, S)
        scores = _T.where(keep, scores, _T.tensor(float("-inf"), dtype=_f64))
        e = _T.exp(scores - scores.max(dim=1, keepdim=True).values)  # (B, S), 0 where masked
        a = e / e.sum(dim=1, keepdim=True)  # (B, S)
        weights.append(a)
        context = _T.matmul(a[:, None, :], enc)[:, 0]  # (B, 1, S) @ (B, S, N) -> (B, N)
        inp = _T.cat([context, P["embedding.weight"][X[:, t]]], dim=1)  # (B, N + E): context first
        for l in range(_L):
            gi = _T.matmul(inp, P[f"rnn.weight_ih_l{l}"].T) + P[f"rnn.bias_ih_l{l}"]  # (B, 3N)
            gh = _T.matmul(h[l], P[f"rnn.weight_hh_l{l}"].T) + P[f"rnn.bias_hh_l{l}"]  # (B, 3N)
            r = _sigmoid(gi[:, :_N] + gh[:, :_N])
            z = _sigmoid(gi[:, _N : 2 * _N] + gh[:, _N : 2 * _N])
            n = _T.tanh(gi[:, 2 * _N :] + r * gh[:, 2 * _N :])
            h[l] = (1 - z) * n + z * h[l]
            inp = h[l]
        logits.append(_T.matmul(inp, P["dense.weight"].T) + P["dense.bias"])  # (B, V)
    return _T.stack(logits, dim=1), _T.stack(weights, dim=1), _T.stack(h)


checks.check_true(
    not any(c is _qb.Seq2SeqAttentionDecoder for c in BahdanauDecoder.__mro__)
    and BahdanauDecoder.forward is not _qb.Seq2SeqAttentionDecoder.forward,
    "BahdanauDecoder.forward is your own",
    hint="write the loop; do not reuse qkv's decoder",
)
with checks.forbid_reference(BahdanauDecoder, (_qb, "Seq2SeqAttentionDecoder")):
    _dec = BahdanauDecoder(_V, _E, _N, _L, dropout=0.4)
    _dec.double()
    _dec.eval()
    _params = dict(_dec.named_parameters())
    checks.check_true(
        sorted(_params) == sorted(_P),
        "the decoder's parameters are the given layers' (embedding, attention, rnn, dense)",
        hint="keep __init__ as given",
    )
    with _torch.no_grad():
        for _name, _value in _P.items():
            _params[_name].copy_(_value)
    _enc = _rand(_B, _S, _N)
    _hid = _rand(_L, _B, _N)
    _lens = [_S, 1, 3, 5]
    _X = _T.randint(0, _V, (_B, _Tgt), generator=_g)
    _Y_ref, _W_ref, _h_ref = _reference(_enc, _hid, _lens, _X)
    _Y, _state = _dec(_X, [_enc, _hid, _T.tensor(_lens)])
    _W = _dec.attention_weights
    checks.check_true(
        getattr(_Y, "dtype", None) == _f64,
        f"the logits of a float64 decoder are float64 (hidden); they are {getattr(_Y, 'dtype', type(_Y).__name__)}",
        hint="make no buffer of your own (torch.zeros without dtype=): collect the steps in a list and torch.cat",
    )
    checks.check_true(
        isinstance(_W, list) and len(_W) == _Tgt,
        f"attention_weights holds one entry per step ({_Tgt} steps, hidden)",
        hint="append every step's weights to self._attention_weights, started empty",
    )
    _keep = _T.tensor([[[s < n for s in range(_S)]] for n in _lens])  # (B, 1, S)
    checks.check_close(
        _W[0],
        _W_ref[:, :1],
        "attention weights of step 1 (hidden, float64)",
        atol=1e-10,
        rtol=0,
        regions={"padded source positions": ~_keep, "valid source positions": _keep},
        hint={
            "padded source positions": "pass enc_valid_lens to self.attention",
            "valid source positions": "the query is the top layer's state, hidden_state[-1]",
        },
    )
    checks.check_close(
        _T.cat(_W, dim=1),
        _W_ref,
        "attention weights of every step (hidden, float64)",
        atol=1e-10,
        rtol=0,
        hint="carry the GRU's new state from step to step: it is the next query",
    )
    checks.check_close(
        _Y,
        _Y_ref,
        "logits (hidden, float64)",
        atol=1e-10,
        rtol=0,
        hint="GRU input: [context, embedding], context first",
    )
    checks.check_close(
        _state[1],
        _h_ref,
        "the returned hidden_state (hidden)",
        atol=1e-10,
        rtol=0,
        hint="return the state after the last step",
    )
    checks.check_true(
        _state[0] is _enc and _state[2] is not None,
        "the returned state carries the encoder outputs and the lengths on",
        hint="return [enc_outputs, hidden_state, enc_valid_lens]",
    )
    # Masking by perturbation: what lies past a source's valid length must change nothing.
    _noisy = _enc.clone()
    for _b, _n in enumerate(_lens):
        _noisy[_b, _n:] = 100.0 * _rand(_S - _n, _N)
    _Y2, _ = _dec(_X, [_noisy, _hid, _T.tensor(_lens)])
    checks.check_true(
        isinstance(_dec.attention_weights, list) and len(_dec.attention_weights) == _Tgt,
        f"after a second call, attention_weights holds that call's {_Tgt} steps only (hidden)",
        hint="start self._attention_weights as a new empty list at the top of forward",
    )
    checks.check_close(
        _Y2,
        _Y,
        "logits with the padded source positions changed (hidden)",
        atol=1e-10,
        rtol=0,
        hint="padding must get zero weight: pass enc_valid_lens to self.attention",
    )
    # One step at a time, with the state carried by the caller, is the same as the whole sequence at once.
    _st = [_enc, _hid, _T.tensor(_lens)]
    _steps = []
    for _t in range(_Tgt):
        _y, _st = _dec(_X[:, _t : _t + 1], _st)
        _steps.append(_y)
    checks.check_close(
        _T.cat(_steps, dim=1),
        _Y_ref,
        "logits decoded one token at a time (hidden)",
        atol=1e-10,
        rtol=0,
        hint="return the state after the last step, so that the next call goes on from it",
    )
    checks.check_true(
        isinstance(_dec.attention_weights, list) and len(_dec.attention_weights) == 1,
        "after a call with one token, attention_weights holds that one step (hidden); it holds "
        f"{len(_dec.attention_weights) if isinstance(_dec.attention_weights, list) else _dec.attention_weights}",
        hint="start self._attention_weights as a new empty list at the top of forward, not once in __init__",
    )
    # No padding: enc_valid_lens = None lets every source position count.
    _Y_all, _W_all, _h_all = _reference(_enc, _hid, [_S] * _B, _X)
    _Y3, _st3 = _dec(_X, [_enc, _hid, None])
    checks.check_close(
        _Y3,
        _Y_all,
        "logits with enc_valid_lens=None (hidden)",
        atol=1e-10,
        rtol=0,
        hint="pass enc_valid_lens to self.attention as it is: None means no mask",
    )
    checks.check_true(_st3[2] is None, "enc_valid_lens=None is returned as None", hint="return the lengths as given")
    # Gradients: the decoder is trained through; the loss must reach the encoder's outputs (through attention at
    # every step) and the initial state (through the recurrence), as in the reference written with torch.
    _gen = _T.Generator().manual_seed(1144)
    _probe = _T.randn(_B, _Tgt, _V, generator=_gen, dtype=_f64)
    _leaves = [_enc.clone().requires_grad_(), _hid.clone().requires_grad_()]
    _Yg, _ = _dec(_X, [_leaves[0], _leaves[1], _T.tensor(_lens)])
    _hint_g = (
        "carry the GRU's state from step to step as it is, and use the embedding and context as they are (no "
        ".detach()): the loss must reach every step and every layer"
    )
    checks.check_true(
        getattr(_Yg, "requires_grad", False) is True,
        "the logits of an encoder's outputs that require grad carry a gradient (hidden)",
        hint=_hint_g,
    )
    try:
        _got = _torch.autograd.grad((_Yg * _probe).sum(), _leaves + [_params[_n] for _n in _P], allow_unused=True)
    except RuntimeError as _e:  # e.g. a tensor autograd needs was modified in place
        _got = None
        checks.check_true(
            False,
            f"backpropagating through the decoder failed (hidden): {str(_e).splitlines()[0]}",
            hint="no in-place operation on a tensor the gradient needs (x += ..., x[...] = ...): write y = x + ...",
        )
    _ref_leaves = [_enc.clone().requires_grad_(), _hid.clone().requires_grad_()]
    _ref_P = {_n: _p.clone().requires_grad_() for _n, _p in _P.items()}
    _ref = _torch.autograd.grad(
        (_reference(*_ref_leaves, _lens, _X, _ref_P)[0] * _probe).sum(), _ref_leaves + list(_ref_P.values())
    )
    _what_g = ["enc_outputs", "the initial hidden_state"] + [f"the parameter {_n}" for _n in _P]
    for _nm, _a, _b in zip(_what_g, _got, _ref):
        checks.check_true(_a is not None, f"the gradient reaches {_nm} (hidden)", hint=_hint_g)
        checks.check_close(_a, _b, f"the gradient of {_nm} (hidden, float64)", atol=1e-10, rtol=0, hint=_hint_g)
    # Devices: every tensor the answer makes must be on the inputs' device (_common.py: _device_probe).
    _lens_t = _T.tensor(_lens)
    _dec_meta = BahdanauDecoder(_V, _E, _N, _L, dropout=0.4).double().to("meta").eval()  # shapes only, no weights
    _err = _device_probe(
        lambda: _dec(_X, [_enc, _hid, _lens_t])[0],
        lambda: _dec_meta(_X.to("meta"), [_t.to("meta") for _t in (_enc, _hid, _lens_t)])[0],
        "the decoder",
    )
    checks.check_true(
        _err is None,
        f"the logits are made on the device of the decoder and its inputs (hidden): {_err}",
        hint="make every new tensor on the inputs' device (device=X.device), or collect the steps in a list",
    )
# Training mode: the given layers drop out at the rate passed to __init__ (0.4: the attention's weights and between
# the GRU's 3 layers), so with the same seed the logits are those of qkv's decoder with the same weights and rate.
_ref_dec = _qb.Seq2SeqAttentionDecoder(_V, _E, _N, _L, dropout=0.4).double()
_ref_dec.load_state_dict(_dec.state_dict())
_dec.train()
_ref_dec.train()
_T.manual_seed(1145)
_Y_train, _ = _dec(_X, [_enc, _hid, _T.tensor(_lens)])
_T.manual_seed(1145)
_Y_train_ref, _ = _ref_dec(_X, [_enc, _hid, _T.tensor(_lens)])
_dec.eval()
checks.check_close(
    _Y_train,
    _Y_train_ref,
    "logits in training mode with dropout 0.4 (hidden: qkv's decoder, the same weights and seed)",
    atol=1e-10,
    rtol=0,
    hint="keep __init__ as given: the attention and the GRU take the dropout rate and num_layers passed in",
)
_torch.set_rng_state(_rng_state)
