# Hidden: float64, inputs with a large offset (pre-norm keeps it on the residual path, post-norm removes it); the
# answer against PyTorch's nn.TransformerEncoderLayer(norm_first=True, activation="gelu", dropout 0) holding the
# same weights, with and without padding (valid_lens as a key padding mask; the valid rows compared).
# Contract: the page's sentences each check relies on.
#   "self.ln1 = nn.LayerNorm(norm_shape); self.attention = MultiHeadAttention(num_hiddens, num_heads, dropout," -> names
#   "self.ln2 = nn.LayerNorm(norm_shape); self.mlp = ref.ViTMLP( mlp_num_hiddens, num_hiddens, dropout," -> names
#   "(B, T, N), equation (eq-prenorm)," -> against nn.TransformerEncoderLayer(norm_first=True)
#   "the layer norms do not see it, so the block's output moves by exactly that number." -> inputs near 50
#   "valid_lens passed on to the self-attention." -> padding, as a key padding mask
#   "Your own code: no call to ref.ViTBlock." -> the reference is forbidden
#   "Nothing is detached." -> the gradients of X and of ln1's weight
#   "MultiHeadAttention(num_hiddens, num_heads, dropout, use_bias," -> use_bias=True: biases; dropout in training
#   "mlp_num_hiddens, num_hiddens, dropout, in_features=num_hiddens)." -> the MLP's dropout, in training mode
# Classes: each kind of mistake, and the check that catches it.
#   value -> against nn.TransformerEncoderLayer(norm_first=True) holding the same weights, inputs near 50
#   dtype -> n/a: the block computes in its parameters' dtype (float64 here) and makes no tensor of its own
#   device -> n/a: forward makes no tensor; its submodules and X carry the device
#   pass-through -> valid_lens as a key padding mask; use_bias=True gives the projections biases; dropout reaches both
#   state -> n/a: forward keeps nothing from one call to the next
#   gradient -> backward: the gradients of X and of ln1's weight against PyTorch's layer
#   type -> n/a: one tensor out, of X's shape (check_close refuses anything else)
#   edge -> valid_lens=None, then lengths with padding
#   symmetry -> ln1 and ln2 with different weights (at initialisation both are ones and zeros): swapped norms show
#   train-eval -> training mode, dropout 0.3, against the block written out with the same masks
#   efficiency -> n/a: the contract promises no time or memory beyond the sublayers'
from _common import (  # the section's shared helpers (the assembler inlines _common.py)
    _T,
    _block_by_hand,
    _block_weights,
    _draw,
    _load,
    _qv,
    _torch,
    _torch_block,
)

_g = _T.Generator().manual_seed(1184)
with checks.forbid_reference(ViTBlock, (_qv, "ViTBlock")):
    _blk = ViTBlock(8, 8, 12, 2, 0.0).double().eval()
    _w = _block_weights(_g, "", 8, 12)
    _load(_blk, _w, "ViTBlock(8, 8, 12, 2, 0.0)")
    _ref = _torch_block(_w, "", 8, 2, 12)
    _X = 50.0 + _draw(_g, 3, 5, 8, scale=1.0)  # (B, T, N)
    with _torch.no_grad():
        _want = _ref(_X)
        _got = _blk(_X)
    checks.check_close(
        _got,
        _want,
        "ViTBlock (hidden, float64, inputs near 50) against nn.TransformerEncoderLayer(norm_first=True)",
        atol=1e-8,
        rtol=0,
        hint="pre-norm: X = X + attention(ln1(X)), then X + mlp(ln2(X)); the residual path has no norm",
    )
    _lens = _T.tensor([2, 5, 3])
    _pad = _T.arange(5)[None, :] >= _lens[:, None]  # (B, T): True where padding
    _X2 = _X.clone()
    _X2[_pad] = -300.0  # padding that must not be seen
    with _torch.no_grad():
        _want = _ref(_X2, src_key_padding_mask=_pad)
        _got = _blk(_X2, _lens)
    checks.check_close(
        _got[~_pad],
        _want[~_pad],
        "ViTBlock with valid_lens (hidden, valid positions)",
        atol=1e-8,
        rtol=0,
        hint="pass valid_lens on to the attention",
    )
    # the projections' biases (use_bias=True), then the gradients, in evaluation mode
    _blk = ViTBlock(8, 8, 12, 2, 0.3, use_bias=True).double().eval()
    _w = _block_weights(_g, "", 8, 12, bias=True)
    _load(_blk, _w, "ViTBlock(8, 8, 12, 2, 0.3, use_bias=True)")
    _ref = _torch_block(_w, "", 8, 2, 12)
    _X = _draw(_g, 3, 5, 8, scale=1.0).requires_grad_()  # (B, T, N)
    _Xr = _X.detach().clone().requires_grad_()
    _G = _draw(_g, 3, 5, 8, scale=1.0)  # the gradient of some loss with respect to the output
    _got, _want = _blk(_X), _ref(_Xr)
    checks.check_close(
        _got,
        _want,
        "ViTBlock(..., use_bias=True) in evaluation mode (hidden, float64, with the projections' biases)",
        atol=1e-8,
        rtol=0,
        hint="pass use_bias on to MultiHeadAttention(num_hiddens, num_heads, dropout, use_bias, ...)",
    )
    _got.backward(_G)
    _want.backward(_G)
    checks.check_close(
        _X.grad,
        _Xr.grad,
        "the gradient of the input of ViTBlock (hidden, float64)",
        atol=1e-8,
        rtol=0,
        hint="nothing detached: the gradient flows through the residual path and through both sublayers",
    )
    checks.check_close(
        _blk.ln1.weight.grad,
        _ref.norm1.weight.grad,
        "the gradient of ln1's weight (hidden, float64)",
        atol=1e-8,
        rtol=0,
        hint="the attention's output must stay in the graph: no .detach(), no torch.no_grad()",
    )
    # training mode: dropout 0.3 on the attention weights and after each layer of the MLP, nowhere else
    _blk.train()
    _X = _draw(_g, 3, 5, 8, scale=1.0)  # (B, T, N)
    _T.manual_seed(1189)
    with _torch.no_grad():
        _got = _blk(_X)
    _T.manual_seed(1189)
    with _torch.no_grad():
        _want = _block_by_hand(_w, "", _X, 2, 0.3)
checks.check_close(
    _got,
    _want,
    "ViTBlock(..., dropout=0.3) in training mode (hidden, the same dropout masks)",
    atol=1e-8,
    rtol=0,
    hint="pass dropout on to MultiHeadAttention and to ref.ViTMLP, and add no dropout of your own: "
    "the block's only dropouts are the attention's and the MLP's",
)
