# Hidden: float64, random positions; no <cls>: the patches with rows 1.. of the positional embedding, the blocks,
# the head on the mean over the P patches, against an independent computation (explicit patches, PyTorch's pre-norm
# encoder layers); checked in an example where <cls> or position 0 would change the answer.
# Contract: the page's sentences each check relies on.
#   "as a subclass of `ref.ViT` that keeps its parameters and changes `forward` only:" -> subclass; weights in
#   "self.patch_embedding, plus self.pos_embedding[:, 1:], self.dropout, self.blks," -> independent computation
#   "self.head applied to the mean over the P patches. No <cls> token." -> random <cls> and position 0
_g = _T.Generator().manual_seed(1187)
checks.check_true(
    isinstance(MeanPoolViT, type) and issubclass(MeanPoolViT, _qv.ViT),
    "MeanPoolViT is a subclass of ref.ViT (hidden)",
    hint="class MeanPoolViT(ref.ViT): write forward only",
)
_mp = MeanPoolViT((6, 8), 2, 8, 12, 2, 2, 0.0, 0.0, num_classes=5, in_channels=3).double().eval()
_w = _vit_weights(_g, 3, 2, 12, 8, 12, 2, 5)
_load(_mp, _w, "MeanPoolViT((6, 8), 2, 8, 12, 2, 2, 0.0, 0.0, num_classes=5, in_channels=3)")
_X = _draw(_g, 4, 3, 6, 8, scale=1.0)  # (B, C, H, W)
_Z = _vit_tokens(_w, _X, 2, 8, 2, 12, 2, cls=False)  # (B, P, N)
with _torch.no_grad():
    _got = _mp(_X)
checks.check_shape(_got, (4, 5), "MeanPoolViT logits (hidden)")
checks.check_close(
    _got,
    _head(_w, _Z.mean(dim=1)),
    "MeanPoolViT logits (hidden, float64)",
    atol=1e-8,
    rtol=0,
    hint="no <cls>: add self.pos_embedding[:, 1:] to the P patches, run the blocks, then the head on the mean "
    "over the patches (dim=1)",
)
