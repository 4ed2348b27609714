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
