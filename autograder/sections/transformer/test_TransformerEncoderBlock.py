# Hidden: float64 against PyTorch's nn.TransformerEncoderLayer (post-norm, ReLU, dropout 0, batch_first) with our
# weights copied into both, with and without attention biases, with padding and without; X's gradient against
# PyTorch's layer; in training mode the dropout calls of the reference block (the same random masks in the same
# order); no call to the reference.
# (Runs in the notebook, after its visible test: checks and the answers are defined there.)
# Contract: the page's sentences each check relies on.
#   "self.attention = MultiHeadAttention(num_hiddens, num_heads, dropout, use_bias," -> with and without biases
#   "self.addnorm1 = ref.AddNorm(num_hiddens, dropout);" -> our weights loaded by name
#   "self.ffn = ref.PositionWiseFFN(ffn_num_hiddens, num_hiddens, in_features=num_hiddens);" -> our weights, by name
#   "self.addnorm2 = ref.AddNorm(num_hiddens, dropout)." -> our weights loaded by name
#   "(B, T, N), in X's dtype: self-attention, add & norm, FFN, add & norm" -> float64 vs nn.TransformerEncoderLayer
#   "(post-norm)." -> vs post-norm nn.TransformerEncoderLayer; training mode: the reference's dropout masks
#   "pass `valid_lens` on, so that no position attends to padding" -> lengths [7, 2, 5]
#   "from the course's components: `MultiHeadAttention`" -> no call to the reference block
#   "gradients reach X through the queries, the keys and the values of the self-attention alike." -> X's gradient
# Classes: each kind of mistake, and the check that catches it.
#   value -> float64 against nn.TransformerEncoderLayer with our weights (pre_norm, ffn_of_input)
#   dtype -> n/a: the block makes no tensor of its own; its modules follow .double() and keep X's dtype
#   device -> n/a: the block makes no tensor of its own; its modules follow .to(device)
#   pass-through -> use_bias, valid_lens and dropout reach the parts (ignores_use_bias, attention_without_dropout)
#   state -> n/a: forward keeps nothing between calls and changes no input
#   gradient -> X's gradient against nn.TransformerEncoderLayer's (detach_input@...: X into self.attention)
#   type -> the parts are the course's modules, with the docstring's names (torch_attention)
#   edge -> n/a: valid_lens goes to MultiHeadAttention as it is; None and lengths are both run
#   symmetry -> n/a: one order of sublayers, checked against PyTorch's; the lengths [7, 2, 5] differ per example
#   train-eval -> the reference block's dropout masks in training mode (addnorm_arguments_swapped)
#   efficiency -> n/a: the contract promises no cost
from _common import (  # the section's shared helpers (the assembler inlines _common.py)
    _T,
    _draw,
    _ffn_weights,
    _grad,
    _load,
    _mha_weights,
    _norm_weights,
    _padding_mask,
    _qt,
    _torch_encoder_layer,
)

_g = _T.Generator().manual_seed(1174)
_N, _H, _F = 16, 4, 24
_X = _draw(_g, 3, 7, _N, scale=1.0)  # (B, T, N)
_lens = _T.tensor([7, 2, 5])
_ours = _qt.TransformerEncoderBlock(_N, _F, _H, 0.3).double().train()  # the reference, for training mode
with checks.forbid_reference(TransformerEncoderBlock, (_qt, "TransformerEncoderBlock")):
    for _bias in (False, True):
        _blk = TransformerEncoderBlock(_N, _F, _H, 0.0, use_bias=_bias).double().eval()
        _w = {
            **_mha_weights(_g, "attention", _N, _bias),
            **_norm_weights(_g, "addnorm1", _N),
            **_ffn_weights(_g, "ffn", _N, _F),
            **_norm_weights(_g, "addnorm2", _N),
        }
        _load(_blk, _w, f"TransformerEncoderBlock(16, 24, 4, 0.0, use_bias={_bias})")
        _layer = _torch_encoder_layer(_w, _N, _H, _F)
        for _name, _arg, _kpm in (
            ("no padding", None, None),
            ("lengths [7, 2, 5]", _lens, _padding_mask(_lens, _H, 7, 7)),
        ):
            checks.check_close(
                _blk(_X, _arg),
                _layer(_X, src_mask=_kpm),
                f"block output (hidden, float64, use_bias={_bias}, {_name}) vs nn.TransformerEncoderLayer",
                atol=1e-8,
                rtol=0,
                hint="Y = addnorm1(X, attention(X, X, X, valid_lens)); addnorm2(Y, ffn(Y)): post-norm",
            )
    # The gradient: the block is trained, and X reaches the output through the queries, the keys and the values of
    # the self-attention (and the residual). Against autograd through PyTorch's layer (the last one, with biases).
    _Gout = _draw(_g, 3, 7, _N, scale=1.0)
    _Xg, _Xr = _X.clone().requires_grad_(), _X.clone().requires_grad_()
    (_blk(_Xg, _lens) * _Gout).sum().backward()
    (_layer(_Xr, src_mask=_padding_mask(_lens, _H, 7, 7)) * _Gout).sum().backward()
    checks.check_close(
        _grad(_Xg),
        _Xr.grad,
        "the gradient of X (hidden, float64, lengths [7, 2, 5]) vs nn.TransformerEncoderLayer",
        atol=1e-8,
        rtol=0,
        hint="keep X in the graph: attention(X, X, X, valid_lens), with no .detach() or .data on any of the three",
    )
    _blk = TransformerEncoderBlock(_N, _F, _H, 0.3).double().train()
    _blk.load_state_dict(_ours.state_dict())
    _T.manual_seed(1175)
    _got = _blk(_X, _lens)
    _T.manual_seed(1175)
    _want = _ours(_X, _lens)
    checks.check_close(
        _got,
        _want,
        "block output in training mode (hidden, dropout 0.3, same seed)",
        atol=1e-8,
        rtol=0,
        hint="pass dropout to every part; addnorm(X, sublayer(X)): the sublayer's output second",
    )
