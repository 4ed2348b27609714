# Hidden: our own model (other sizes, dropout 0.5, left in training mode), decoded here by an independent greedy
# loop in evaluation mode: the tokens and every step's weights for another <bos> id and number of steps; int64
# tokens; the training mode restored (and evaluation mode kept when the model was in it); no autograd graph kept;
# tensors made where the source is: with 'meta' as PyTorch's default device around a CPU model and source, a <bos>
# made without device= reaches the decoder on 'meta' (on a GPU: an error), which a hook reports before any 'meta'
# arithmetic runs (that would cost seconds); a right answer makes nothing on 'meta'. Then a source on 'meta' (its
# encoder replaced, so nothing computes there): a <bos> made on a device named in the code (device="cpu") shows.
# (Runs in the notebook, after its visible test.)
# Contract: the page's sentences each check relies on.
#   "Decodes num_steps tokens greedily from <bos>" -> tokens for another <bos> and number of steps
#   "each step's argmax fed back as the next input" -> tokens
#   "in evaluation mode and without gradients" -> weights of step 1 (dropout off); no autograd graph
#   "the model's training mode is restored afterwards" -> training mode back; evaluation mode kept
#   "tokens (B, num_steps), int64" -> shape and dtype of the tokens
#   "weights (B, num_steps, T_src), row s the attention weights of step s" -> the weights
#   "Start with a (B, 1) tensor of `bos`, made on the source's device." -> <bos> on src's device, src on CPU or 'meta'
#   "Both on src's device." -> the tokens fed to the decoder are on the source's device
#   "src: source tokens (B, T_src); src_valid_len: (B,); bos: the id of <bos>." -> one source, B = 1, one step
# Classes: each kind of mistake, and the check that catches it.
#   value -> tokens and every step's weights against a greedy loop written here (<bos> at every step)
#   dtype -> int64 tokens (the argmax's ids, not floats)
#   device -> 'meta' default device, then a source on 'meta': the decoder's inputs on the source's (device="cpu")
#   pass-through -> <bos> = 3, 7 steps and the source lengths given (the lengths not passed to init_state)
#   state -> the model is left in the mode it had, training or evaluation (evaluation mode not undone)
#   gradient -> n/a: decoding is not trained through; that it keeps no graph is the efficiency check
#   type -> tokens and weights are tensors (every step's weights returned as the list they were kept in)
#   edge -> one source and one step: shapes (1, 1) and (1, 1, T_src) (each step's weights squeezed, then stacked)
#   symmetry -> B = 4, 7 steps, T_src = 6 differ: tokens or weights stacked step-major have the wrong shape
#   train-eval -> in evaluation mode while decoding: the weights of step 1 with dropout 0.5 off (no model.eval())
#   efficiency -> no autograd graph kept on the weights (decoding without torch.no_grad())
import torch as _torch

import qkv.bahdanau as _qb

_T = checks.trusted
_g = _T.Generator().manual_seed(1143)
_T.manual_seed(1143)
_model = _qb.make_bahdanau(10, 12, embed_size=5, num_hiddens=7, num_layers=3, dropout=0.5, tgt_pad=0)
_model.double()
_src = _T.randint(0, 10, (4, 6), generator=_g)  # (B, T_src)
_lens = _T.tensor([6, 1, 4, 2])


def _greedy(model, src, lens, bos, steps):
    """Tokens (B, steps) and weights (B, steps, T_src), written out here; the model is ours."""
    model.eval()
    with _torch.no_grad():
        state = model.decoder.init_state(model.encoder(src, lens), lens)
        token = _T.tensor([[bos]] * src.shape[0])  # (B, 1)
        tokens, weights = [], []
        for _ in range(steps):
            Y, state = model.decoder(token, state)  # (B, 1, V)
            token = Y.argmax(dim=-1)  # (B, 1)
            tokens.append(token)
            weights.append(model.decoder.attention_weights[-1])  # (B, 1, T_src)
    return _T.cat(tokens, dim=1), _T.cat(weights, dim=1)


_tok_ref, _w_ref = _greedy(_model, _src, _lens, 3, 7)
_model.train()
_tok, _w = predict_with_attention(_model, _src, _lens, 3, 7)
checks.check_true(
    _model.training is True, "the model is back in training mode afterwards (hidden)", hint="restore model.training"
)
checks.check_shape(_tok, (4, 7), "tokens (hidden, B = 4, num_steps = 7)")
checks.check_true(_tok.dtype == _T.long, "tokens are int64 (torch.long)", hint="the argmax's ids, as they are")
checks.check_true(
    type(_w) is type(_tok) is type(_T.zeros(0)),
    f"tokens and weights are tensors (hidden); got {type(_tok).__name__} and {type(_w).__name__}",
    hint="concatenate the steps: torch.cat(tokens, dim=1), torch.cat(weights, dim=1)",
)
checks.check_shape(
    _w, (4, 7, 6), "weights (hidden, B = 4, num_steps = 7, T_src = 6)", hint="every step's weights, along dim 1"
)
checks.check_close(_w[:, 0], _w_ref[:, 0], "weights of step 1 (hidden)", atol=1e-10, rtol=0, hint="model.eval() first")
checks.check_close(
    _tok, _tok_ref, "tokens (hidden, <bos> = 3)", atol=0, rtol=0, hint="feed each argmax back, with the new state"
)
checks.check_close(_w, _w_ref, "weights of every step (hidden)", atol=1e-10, rtol=0, hint="keep every step's weights")
_model.eval()
predict_with_attention(_model, _src, _lens, 3, 2)
checks.check_true(
    _model.training is False,
    "a model in evaluation mode stays in it (hidden)",
    hint="restore the mode the model had: model.train(was_training)",
)


# Decoding needs no gradients: weights that still carry a graph keep every step's activations alive.
checks.check_true(
    _w.requires_grad is False and _w.grad_fn is None,
    "the returned weights carry no autograd graph (hidden)",
    hint="decode under torch.no_grad()",
)

# One source and one step: nothing may be squeezed away.
_tok1_ref, _w1_ref = _greedy(_model, _src[:1], _lens[:1], 3, 1)
_tok1, _w1 = predict_with_attention(_model, _src[:1], _lens[:1], 3, 1)
checks.check_shape(_tok1, (1, 1), "tokens of one source, one step (hidden)", hint="keep the batch axis: no .squeeze()")
checks.check_shape(
    _w1, (1, 1, 6), "weights of one source, one step (hidden)", hint="keep every axis: no .squeeze() of the weights"
)
checks.check_close(_w1, _w1_ref, "weights of one source, one step (hidden)", atol=1e-10, rtol=0)


class _OffDevice(Exception):
    pass


def _input_on_cpu(module, args):
    if args[0].device.type != "cpu":
        raise _OffDevice


_hook = _model.decoder.register_forward_pre_hook(_input_on_cpu)
_on_device = True
try:
    with _torch.device("meta"):
        predict_with_attention(_model, _src, _lens, 3, 2)
except _OffDevice:
    _on_device = False
except Exception:  # e.g. a <bos> made on the default device, then moved: .to(src.device) from 'meta' cannot copy
    _on_device = True  # the decoder's inputs were on the source's device as far as the hook saw; a GPU allows a move
finally:
    _hook.remove()
checks.check_true(
    _on_device,
    "the decoder's input tokens are made on the source's device (hidden: made without device=, they land elsewhere)",
    hint="make the <bos> tensor with device=src.device",
)

# The same with the source on 'meta' (as on a GPU): a <bos> made on a named device (device="cpu") lands there. The
# encoder is replaced by one that makes its outputs on the source's device, and the hook stops the call before the
# decoder computes anything, so no arithmetic runs on 'meta' (that would cost seconds).
_seen = []


def _record_device(module, args):
    _seen.append(args[0].device.type)
    raise _OffDevice


def _encode_where_src_is(src, *args, **kwargs):
    """The encoder's (outputs (T_src, B, N), state (L, B, N)), zeros made on the source's device."""
    outputs = _T.zeros(src.shape[1], src.shape[0], 7, dtype=_T.float64, device=src.device)
    return outputs, _T.zeros(3, src.shape[0], 7, dtype=_T.float64, device=src.device)


_hook = _model.decoder.register_forward_pre_hook(_record_device)
_model.encoder.forward = _encode_where_src_is
try:
    predict_with_attention(_model, _src.to("meta"), _lens.to("meta"), 3, 2)
except Exception:  # the hook's stop, or an operation 'meta' lacks before the decoder: only what the hook saw counts
    pass
finally:
    _hook.remove()
    del _model.encoder.forward
checks.check_true(
    _seen[:1] in ([], ["meta"]),
    f"the decoder's input tokens are made on the source's device (hidden: a source on 'meta', as on a GPU, gave "
    f"<bos> on {_seen[:1]})",
    hint="make the <bos> tensor with device=src.device, not on a device named in the code",
)
