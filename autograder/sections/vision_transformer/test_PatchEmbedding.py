# Hidden: float64, a rectangular image with rectangular patches, 2 channels; the answer's convolution against an
# explicit reshape of the image into row-major patches times the same weights; the stored number of patches.
# Contract: the page's sentences each check relies on.
#   "sizes an int or a (height, width) pair;" -> a 9 x 8 image in 3 x 2 patches; 12 and 4
#   "self.conv = nn.Conv2d(in_channels, num_hiddens, kernel_size=patch_size, stride=patch_size);" -> weights copied in
#   "self.num_patches = the number of patches, an int." -> num_patches == 12, of type int
#   "row i * (w / pw) + j holding the patch in row i, column j of the grid;" -> against an explicit cut
#   "X's dtype and device." -> float64; the CPU with 'meta' as the default device
#   "Your own code: no call to ref.PatchEmbedding." -> the reference is forbidden
#   "Nothing is detached: the ViT trains through it." -> the gradient of the convolution's weight
# Classes: each kind of mistake, and the check that catches it.
#   value -> against an explicit row-major cut of the image times the same weights
#   dtype -> a float64 image and module give a float64 output (X's dtype)
#   device -> 'meta' as the default device around a CPU module and image: the output is on the CPU
#   pass-through -> 2 input channels, 5 features, 3 x 2 patches: the convolution loads by name and shape
#   state -> n/a: forward keeps nothing from one call to the next
#   gradient -> backward: the gradient of the convolution's weight against the explicit cut's
#   type -> num_patches is an int (a float makes the ViT's torch.randn(1, P + 1, N) fail)
#   edge -> int sizes (a 12 x 12 image in 4 x 4 patches) beside pairs
#   symmetry -> a 3 x 4 grid of rectangular patches: a grid read column by column, or a square count, differ
#   train-eval -> n/a: no dropout, no training behaviour
#   efficiency -> n/a: the contract promises no time or memory beyond the convolution's
from _common import (  # the section's shared helpers (the assembler inlines _common.py)
    _T,
    _draw,
    _f64,
    _load,
    _patches,
    _qv,
    _torch,
)

_g = _T.Generator().manual_seed(1181)
with checks.forbid_reference(PatchEmbedding, (_qv, "PatchEmbedding")):
    _emb = PatchEmbedding((9, 8), (3, 2), 5, in_channels=2).double()
    _w = {"conv.weight": _draw(_g, 5, 2, 3, 2), "conv.bias": _draw(_g, 5)}
    _load(_emb, _w, "PatchEmbedding((9, 8), (3, 2), 5, in_channels=2)")
    checks.check_true(
        getattr(_emb, "num_patches", None) == 12,
        "PatchEmbedding((9, 8), (3, 2), ...).num_patches == 12 (hidden)",
        hint="store self.num_patches = (9 / 3) * (8 / 2)",
    )
    _X = _draw(_g, 3, 2, 9, 8, scale=1.0)  # (B, C, H, W)
    _want = _patches(_X, 3, 2) @ _w["conv.weight"].reshape(5, -1).T + _w["conv.bias"]  # (B, P, C ph pw) @ (., N)
    _got = _emb(_X)
    checks.check_shape(_got, (3, 12, 5), "PatchEmbedding (hidden, 9 x 8 image, 3 x 2 patches)")
    checks.check_close(
        _got,
        _want,
        "PatchEmbedding (hidden, float64, patches in row-major order)",
        atol=1e-10,
        rtol=0,
        hint="one Conv2d with kernel_size = stride = patch_size, then flatten(2) and transpose(1, 2): "
        "patch (i, j) of the grid goes to row i * (W / pw) + j",
    )
    checks.check_true(
        type(getattr(_emb, "num_patches", None)) is int,
        f"PatchEmbedding(...).num_patches is an int (hidden; got {type(getattr(_emb, 'num_patches', None)).__name__})",
        hint="integer division: (h // ph) * (w // pw); the ViT makes torch.randn(1, P + 1, N) with it",
    )
    checks.check_true(
        _got.dtype == _f64,
        f"PatchEmbedding on a float64 image (float64 module) returns float64 (hidden; got {_got.dtype})",
        hint="return the convolution's output, reshaped: no .float(), no tensor of the default dtype",
    )
    with _torch.device("meta"):  # new tensors default to 'meta' around a CPU module and a CPU image
        try:
            _where = str(_emb(_X).device)
        except Exception as _e:  # report what the student's code raised, in one line
            _where = f"an error ({type(_e).__name__})"
    checks.check_true(
        _where == "cpu",
        f"PatchEmbedding keeps X's device with 'meta' as the default device (hidden; got {_where})",
        hint="call no tensor factory in forward (the convolution's output, flattened and transposed, is the answer)",
    )
    _G = _draw(_g, 3, 12, 5, scale=1.0)  # the gradient of some loss with respect to the tokens
    _emb.zero_grad()
    _tok = _emb(_X)
    checks.check_true(
        _tok.requires_grad,
        "PatchEmbedding's tokens carry a gradient back to the convolution (hidden; they are detached)",
        hint="nothing detached: no .detach(), .data or torch.no_grad() in forward",
    )
    _tok.backward(_G)
    _W = _w["conv.weight"].clone().requires_grad_()
    (_patches(_X, 3, 2) @ _W.reshape(5, -1).T).backward(_G)  # (B, P, C ph pw) @ (C ph pw, N)
    checks.check_close(
        _emb.conv.weight.grad,
        _W.grad,
        "the gradient of PatchEmbedding's convolution weight (hidden, float64)",
        atol=1e-10,
        rtol=0,
        hint="nothing detached: no .detach(), .data or torch.no_grad() in forward",
    )
    # int sizes: a square image in square patches
    _emb = PatchEmbedding(12, 4, 3, in_channels=1).double()
    _w = {"conv.weight": _draw(_g, 3, 1, 4, 4), "conv.bias": _draw(_g, 3)}
    _load(_emb, _w, "PatchEmbedding(12, 4, 3, in_channels=1)")
    _X = _draw(_g, 2, 1, 12, 12, scale=1.0)  # (B, C, H, W)
    checks.check_true(
        getattr(_emb, "num_patches", None) == 9,
        "PatchEmbedding(12, 4, ...).num_patches == 9 (hidden, int sizes)",
        hint="an int n is the pair (n, n)",
    )
    checks.check_close(
        _emb(_X),
        _patches(_X, 4, 4) @ _w["conv.weight"].reshape(3, -1).T + _w["conv.bias"],
        "PatchEmbedding (hidden, float64, int sizes: a 12 x 12 image in 4 x 4 patches)",
        atol=1e-10,
        rtol=0,
    )
