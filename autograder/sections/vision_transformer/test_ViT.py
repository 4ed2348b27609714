# Hidden: float64, a 6 x 8 image of 3 channels in 2 x 2 patches (12 patches), 2 blocks, 5 classes, random <cls> and
# positions; the logits against an independent computation (explicit patches, <cls> first, positions, PyTorch's
# pre-norm encoder layers, the head on <cls>); dropout after the positions in training mode; with 'meta' as the
# default device around a CPU model and CPU images, a <cls> or zeros made without device= fails (a right answer
# calls no tensor factory there, so no 'meta' arithmetic and none of the imports it starts); the gradient of the
# patch embedding's weights against autograd through the independent computation; a freshly built model of other
# sizes (7 classes, 4 heads, 3 blocks) starts <cls> at zeros and the positions at a unit randn, and its logits match.
# Contract: the page's sentences each check relies on.
#   "self.patch_embedding = ref.PatchEmbedding(img_size, patch_size, num_hiddens, in_channels=in_channels);" -> names
#   "self.cls_token = nn.Parameter of zeros (1, 1, N);" -> its shape
#   "self.pos_embedding = nn.Parameter of torch.randn(1, P + 1, N)," -> its shape
#   "self.blks = nn.Sequential of num_blks ref.ViTBlock(N, N, mlp_num_hiddens, num_heads, blk_dropout," -> names
#   "self.head = nn.Sequential(nn.LayerNorm(N), nn.Linear(N, num_classes))." -> weights copied in
#   "<cls> first, then the P patch tokens;" -> logits against an independent computation
#   "self.dropout once, on their sum with self.pos_embedding;" -> the mask, in training mode
#   "self.blks; self.head on position 0." -> the head on <cls>
#   "(expand self.cls_token over the batch)," -> a batch of 3
#   "Calls no tensor factory (torch.zeros, torch.randn, ...): everything" -> 'meta' as the default device
#   "derives from X and the parameters" -> 'meta' as the default device: a factory without device= fails
#   "so it runs on the device of the model and X." -> 'meta' as the default device
#   "Your own code: no call to ref.ViT." -> the reference is forbidden
#   "num_blks ref.ViTBlock(N, N, mlp_num_hiddens, num_heads, blk_dropout," -> blk_dropout in training mode
#   "use_bias); self.head = nn.Sequential(nn.LayerNorm(N)," -> use_bias=True: the blocks' biases
#   "self.cls_token = nn.Parameter of zeros (1, 1, N);" -> <cls> and the positions receive a gradient
#   "self.cls_token = nn.Parameter of zeros (1, 1, N);" -> a fresh model's <cls> is exactly zero
#   "of torch.randn(1, P + 1, N), as D2L and ref.ViT start it;" -> a fresh model's positions: std within [0.5, 2]
#   "It is trained: gradients reach every parameter, the patch embedding's included." -> its weights' gradient
#   "num_blks ref.ViTBlock(N, N, mlp_num_hiddens, num_heads, blk_dropout," -> 3 blocks of 4 heads
#   "self.head = nn.Sequential(nn.LayerNorm(N), nn.Linear(N, num_classes))." -> 7 classes
# Classes: each kind of mistake, and the check that catches it.
#   value -> logits vs an independent computation; a fresh <cls> at zeros, positions at a unit randn (swap_init@...)
#   dtype -> n/a: forward calls no tensor factory (the contract says so): every tensor has the parameters' dtype
#   device -> 'meta' as the default device around a CPU model and CPU images: a <cls> made without device= fails
#   pass-through -> use_bias, blk_dropout reach the blocks; 7 classes, 4 heads, 3 blocks (ignore_argument@...)
#   state -> n/a: forward keeps nothing from one call to the next
#   gradient -> <cls> and the positions receive a gradient; the patch embedding's, vs a reference (detach_input@...)
#   type -> n/a: P comes from ref.PatchEmbedding (an int); forward returns one tensor
#   edge -> a batch of 3: a <cls> not expanded over the batch fails
#   symmetry -> a random <cls> and random positions: a zero <cls>, equal to the initial one, shows
#   train-eval -> training mode: one dropout after the positions (emb_dropout 0.5), the blocks' (blk_dropout 0.3)
#   efficiency -> n/a: the contract promises no time or memory
from _common import (  # the section's shared helpers (the assembler inlines _common.py)
    _T,
    _block_by_hand,
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

_g = _T.Generator().manual_seed(1185)
with checks.forbid_reference(ViT, (_qv, "ViT")):
    _vit = ViT((6, 8), 2, 8, 12, 2, 2, 0.0, 0.0, num_classes=5, in_channels=3).double().eval()
    _w = _vit_weights(_g, 3, 2, 12, 8, 12, 2, 5)
    _load(_vit, _w, "ViT((6, 8), 2, 8, 12, 2, 2, 0.0, 0.0, num_classes=5, in_channels=3)")
    _X = _draw(_g, 3, 3, 6, 8, scale=1.0)  # (B, C, H, W)
    _Z = _vit_tokens(_w, _X, 2, 8, 2, 12, 2)  # (B, P + 1, N)
    _r = _raises(lambda: _vit(_X))
    checks.check_true(
        _r == "no error",
        f"ViT on a batch of 3 images runs (hidden; got {_r})",
        hint="expand the <cls> token over the batch: self.cls_token.expand(X.shape[0], -1, -1)",
    )
    with _torch.no_grad():
        _got = _vit(_X)
    checks.check_shape(_got, (3, 5), "ViT logits (hidden)")
    checks.check_close(
        _got,
        _head(_w, _Z[:, 0]),
        "ViT logits (hidden, float64, random <cls> and positions)",
        atol=1e-8,
        rtol=0,
        hint="put <cls> first (torch.cat((cls, patches), dim=1)), add all P + 1 positions, run the blocks, "
        "and classify from position 0 only (not the mean of the patches)",
    )
    _vit2 = ViT((6, 8), 2, 8, 12, 2, 2, 0.5, 0.0, num_classes=5, in_channels=3).double()
    _load(_vit2, _w, "ViT with emb_dropout 0.5")
    _vit2.train()
    _T.manual_seed(1186)
    with _torch.no_grad():
        _got = _vit2(_X)
    _T.manual_seed(1186)
    _m = _tF.dropout(_T.ones(3, 13, 8, dtype=_f64), 0.5, True)  # the mask of the one dropout after the positions
    _W = _w["patch_embedding.conv.weight"]
    _Z = _patches(_X, 2, 2) @ _W.reshape(8, -1).T + _w["patch_embedding.conv.bias"]  # (B, P, N)
    _Z = (_T.cat((_w["cls_token"].expand(3, 1, 8), _Z), dim=1) + _w["pos_embedding"]) * _m  # (B, P + 1, N)
    with _torch.no_grad():
        for _i in range(2):
            _Z = _torch_block(_w, f"blks.{_i}.", 8, 2, 12)(_Z)  # (B, P + 1, N)
    checks.check_close(
        _got,
        _head(_w, _Z[:, 0]),
        "ViT in training mode (hidden, emb_dropout 0.5)",
        atol=1e-8,
        rtol=0,
        hint="apply self.dropout once, to the sum of the tokens and the positions",
    )
    with _torch.device("meta"):  # new tensors default to 'meta' around a CPU model and CPU images
        _r = _raises(lambda: _vit(_X))
    checks.check_true(
        _r == "no error",
        f"ViT makes no tensor without device= in forward (hidden; got {_r})",
        hint="make nothing new in forward without device=: expand self.cls_token instead of creating zeros",
    )
    # <cls> and the positions are learned: parameters that receive a gradient
    _vit.zero_grad()
    _Gl = _draw(_g, 3, 5, scale=1.0)  # (B, classes)
    (_vit(_X) * _Gl).sum().backward()
    _params = dict(_vit.named_parameters())
    # the patch embedding's weights too, against autograd through the independent computation
    _Wr = _W.clone().requires_grad_()
    _Z = _patches(_X, 2, 2) @ _Wr.reshape(8, -1).T + _w["patch_embedding.conv.bias"]  # (B, P, N)
    _Z = _T.cat((_w["cls_token"].expand(3, 1, 8), _Z), dim=1) + _w["pos_embedding"]  # (B, P + 1, N)
    for _i in range(2):
        _Z = _torch_block(_w, f"blks.{_i}.", 8, 2, 12)(_Z)  # (B, P + 1, N)
    (_head(_w, _Z[:, 0]) * _Gl).sum().backward()
    _grad = getattr(_params.get("patch_embedding.conv.weight"), "grad", None)
    checks.check_close(
        _grad if _grad is not None else _T.zeros(_W.shape, dtype=_W.dtype),
        _Wr.grad,
        "the gradient of the patch embedding's weights (hidden, float64) vs an independent computation",
        atol=1e-8,
        rtol=0,
        hint="keep the patch tokens in the graph: torch.cat((cls, patches), dim=1) with no .detach() or .data",
    )
    for _name in ("cls_token", "pos_embedding"):
        _grad = getattr(_params.get(_name), "grad", None)
        checks.check_true(
            _grad is not None and float(_grad.abs().sum()) > 0,
            f"ViT's {_name} is a parameter that receives a gradient (hidden)",
            hint="self.cls_token = nn.Parameter(torch.zeros(1, 1, N)), self.pos_embedding = nn.Parameter(...); "
            "use them in forward as they are (no .data, no .detach(), no buffer)",
        )
    # use_bias=True: the blocks' projections have biases, and they count
    _wb = _vit_weights(_g, 3, 2, 12, 8, 12, 2, 5, bias=True)
    _vitb = ViT((6, 8), 2, 8, 12, 2, 2, 0.0, 0.0, use_bias=True, num_classes=5, in_channels=3).double().eval()
    _load(_vitb, _wb, "ViT(..., use_bias=True)")
    with _torch.no_grad():
        _got = _vitb(_X)
    checks.check_close(
        _got,
        _head(_wb, _vit_tokens(_wb, _X, 2, 8, 2, 12, 2)[:, 0]),
        "ViT(..., use_bias=True) logits (hidden, float64, the blocks' biases)",
        atol=1e-8,
        rtol=0,
        hint="pass use_bias on to every ref.ViTBlock(N, N, mlp_num_hiddens, num_heads, blk_dropout, use_bias)",
    )
    # blk_dropout 0.3 in training mode (emb_dropout 0): the blocks' dropout, with the masks they draw
    _vit3 = ViT((6, 8), 2, 8, 12, 2, 2, 0.0, 0.3, num_classes=5, in_channels=3).double()
    _load(_vit3, _w, "ViT with blk_dropout 0.3")
    _vit3.train()
    _T.manual_seed(1190)
    with _torch.no_grad():
        _got = _vit3(_X)
    _T.manual_seed(1190)
    _Z = _patches(_X, 2, 2) @ _W.reshape(8, -1).T + _w["patch_embedding.conv.bias"]  # (B, P, N)
    _Z = _T.cat((_w["cls_token"].expand(3, 1, 8), _Z), dim=1) + _w["pos_embedding"]  # (B, P + 1, N)
    _Z = _tF.dropout(_Z, 0.0, True)  # the embedding's dropout, p = 0, as the answer's draws it
    with _torch.no_grad():
        for _i in range(2):
            _Z = _block_by_hand(_w, f"blks.{_i}.", _Z, 2, 0.3)  # (B, P + 1, N)
checks.check_close(
    _got,
    _head(_w, _Z[:, 0]),
    "ViT in training mode (hidden, emb_dropout 0, blk_dropout 0.3)",
    atol=1e-8,
    rtol=0,
    hint="give the blocks blk_dropout (and the embedding emb_dropout): ref.ViTBlock(..., blk_dropout, use_bias)",
)
# A freshly built model of other sizes: 8 x 8 images of 3 channels in 2 x 2 patches (P = 16), N = 16, 4 heads, 3 blocks,
# 7 classes. Its initial <cls> is exactly zero and its positions a unit randn: 17 * 16 = 272 entries, whose standard
# deviation lies within [0.5, 2] unless the draw is off by more than ten of its standard errors (about 0.04): a right
# answer never fails, zeros or 0.02 * randn always do. Then our weights, loaded by name, give the independent logits.
_T.manual_seed(1191)
with checks.forbid_reference(ViT, (_qv, "ViT")):
    _vit7 = ViT(8, 2, 16, 12, 4, 3, 0.0, 0.0, num_classes=7, in_channels=3)
    checks.check_shape(_vit7.cls_token.detach(), (1, 1, 16), "cls_token of ViT(8, 2, 16, ...) (hidden)")
    checks.check_shape(_vit7.pos_embedding.detach(), (1, 17, 16), "pos_embedding of ViT(8, 2, 16, ...) (hidden)")
    _c = float(_vit7.cls_token.detach().abs().max())
    checks.check_true(
        _c == 0.0,
        f"a freshly built ViT's <cls> is zeros (hidden; its largest entry is {_c:.3g})",
        hint="self.cls_token = nn.Parameter(torch.zeros(1, 1, num_hiddens))",
    )
    _s = float(_vit7.pos_embedding.detach().double().std())
    checks.check_true(
        0.5 <= _s <= 2.0,
        f"a freshly built ViT's positions are a unit torch.randn (hidden; their standard deviation is {_s:.3g}, "
        "expected about 1)",
        hint="self.pos_embedding = nn.Parameter(torch.randn(1, P + 1, num_hiddens)), as D2L: not zeros, not scaled",
    )
    _w7 = _vit_weights(_g, 3, 2, 16, 16, 12, 3, 7)
    _load(_vit7.double().eval(), _w7, "ViT(8, 2, 16, 12, 4, 3, 0.0, 0.0, num_classes=7, in_channels=3)")
    _X7 = _draw(_g, 2, 3, 8, 8, scale=1.0)  # (B, C, H, W)
    with _torch.no_grad():
        _got = _vit7(_X7)
checks.check_close(
    _got,
    _head(_w7, _vit_tokens(_w7, _X7, 2, 16, 4, 12, 3)[:, 0]),
    "ViT(8, 2, 16, 12, 4, 3, ..., num_classes=7) logits (hidden, float64: 4 heads, 3 blocks, 7 classes)",
    atol=1e-8,
    rtol=0,
    hint="pass num_heads and num_blks on to the blocks, and num_classes to the head's nn.Linear(N, num_classes)",
)
