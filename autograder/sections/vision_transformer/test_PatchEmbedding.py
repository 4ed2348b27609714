# Hidden: float64, a rectangular image with rectangular patches, 2 channels; the answer's convolution against an
# explicit reshape of the image into row-major patches times the same weights; the stored number of patches.
# Contract: the page's sentences each check relies on.
#   "sizes an int or a (height, width) pair;" -> a 9 x 8 image in 3 x 2 patches
#   "self.conv = nn.Conv2d(in_channels, num_hiddens, kernel_size=patch_size, stride=patch_size);" -> weights copied in
#   "self.num_patches = the number of patches, an int." -> num_patches == 12
#   "row i * (w / pw) + j holding the patch in row i, column j of the grid;" -> against an explicit cut
#   "X's dtype and device." -> float64
#   "Your own code: no call to ref.PatchEmbedding." -> the reference is forbidden
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
