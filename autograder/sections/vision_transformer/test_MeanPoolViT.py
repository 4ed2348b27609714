# Hidden: float64, random positions; no <cls>: the patches with rows 1.. of the positional embedding, the blocks,
# the head on the mean over the P patches, against an independent computation (explicit patches, PyTorch's pre-norm
# encoder layers); checked in an example where <cls> or position 0 would change the answer.
# Contract: the page's sentences each check relies on.
#   "as a subclass of `ref.ViT` that keeps its parameters and changes `forward` only:" -> subclass; weights in
#   "self.patch_embedding, plus self.pos_embedding[:, 1:], self.dropout, self.blks," -> independent computation
#   "self.head applied to the mean over the P patches. No <cls> token." -> random <cls> and position 0
#   "self.patch_embedding, plus self.pos_embedding[:, 1:], self.dropout," -> emb_dropout 0.5 in training mode
#   "Calls no tensor factory (torch.zeros, torch.randn, ...): everything" -> 'meta' as the default device
#   "derives from X and the parameters." -> 'meta' as the default device: a factory without device= fails
#   "Detaches nothing." -> the positions' gradient
# Classes: each kind of mistake, and the check that catches it.
#   value -> logits against an independent computation: the head on the mean over the P patches
#   dtype -> n/a: forward calls no tensor factory (the contract says so): every tensor has the parameters' dtype
#   device -> 'meta' as the default device around a CPU model and images: a tensor made in forward lands there
#   pass-through -> n/a: forward takes X alone; the constructor is ref.ViT's, inherited
#   state -> n/a: forward keeps nothing from one call to the next
#   gradient -> the positions of the patches (rows 1..) receive a gradient
#   type -> n/a: one tensor out (check_close refuses anything else)
#   edge -> n/a: the docstring names no special case
#   symmetry -> random positions: the patches given rows 0 .. P - 1 instead of 1 .. P differ
#   train-eval -> training mode, emb_dropout 0.5: self.dropout once, on the patches plus their positions
#   efficiency -> n/a: the contract promises no time or memory
from _common import (  # the section's shared helpers (the assembler inlines _common.py)
    _T,
    _draw,
    _f64,
    _head,
    _load,
    _patches,
    _qv,
    _raises,
    _tF,
    _torch,
    _torch_block,
    _vit_tokens,
    _vit_weights,
)

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
with _torch.device("meta"):  # new tensors default to 'meta' around a CPU model and CPU images
    _r = _raises(lambda: _mp(_X))
checks.check_true(
    _r == "no error",
    f"MeanPoolViT makes no tensor without device= in forward (hidden; got {_r})",
    hint="average with X.mean(dim=1): no torch.tensor(...) or torch.zeros(...) in forward",
)
_mp.zero_grad()
(_mp(_X) * _draw(_g, 4, 5, scale=1.0)).sum().backward()
_grad = _mp.pos_embedding.grad
checks.check_true(
    _grad is not None and float(_grad[:, 1:].abs().sum()) > 0,
    "the positions of the patches, self.pos_embedding[:, 1:], receive a gradient (hidden)",
    hint="add self.pos_embedding[:, 1:] itself: no .data, no .detach()",
)
# training mode: the embedding's dropout once, on the patches plus their positions (blk_dropout 0)
_mp2 = MeanPoolViT((6, 8), 2, 8, 12, 2, 2, 0.5, 0.0, num_classes=5, in_channels=3).double()
_load(_mp2, _w, "MeanPoolViT with emb_dropout 0.5")
_mp2.train()
_T.manual_seed(1191)
with _torch.no_grad():
    _got = _mp2(_X)
_T.manual_seed(1191)
_m = _tF.dropout(_T.ones(4, 12, 8, dtype=_f64), 0.5, True)  # the mask of the one dropout after the positions
_W = _w["patch_embedding.conv.weight"]
_Z = (_patches(_X, 2, 2) @ _W.reshape(8, -1).T + _w["patch_embedding.conv.bias"] + _w["pos_embedding"][:, 1:]) * _m
with _torch.no_grad():
    for _i in range(2):
        _Z = _torch_block(_w, f"blks.{_i}.", 8, 2, 12)(_Z)  # (B, P, N)
checks.check_close(
    _got,
    _head(_w, _Z.mean(dim=1)),
    "MeanPoolViT in training mode (hidden, emb_dropout 0.5)",
    atol=1e-8,
    rtol=0,
    hint="apply self.dropout once, to the sum of the patch tokens and their positions, before the blocks",
)
