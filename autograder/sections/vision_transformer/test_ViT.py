# Hidden: float64, a 6 x 8 image of 3 channels in 2 x 2 patches (12 patches), 2 blocks, 5 classes, random <cls> and
# positions; the logits against an independent computation (explicit patches, <cls> first, positions, PyTorch's
# pre-norm encoder layers, the head on <cls>); dropout after the positions in training mode; with 'meta' as the
# default device around a CPU model and CPU images, a <cls> or zeros made without device= fails (a right answer
# calls no tensor factory there, so no 'meta' arithmetic and none of the imports it starts).
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
# Classes: each kind of mistake, and the check that catches it.
#   value -> logits against an independent computation (explicit patches, <cls> first, positions, the head on <cls>)
#   dtype -> n/a: forward calls no tensor factory (the contract says so): every tensor has the parameters' dtype
#   device -> 'meta' as the default device around a CPU model and CPU images: a <cls> made without device= fails
#   pass-through -> use_bias=True reaches the blocks (their biases load and count); blk_dropout reaches them
#   state -> n/a: forward keeps nothing from one call to the next
#   gradient -> <cls> and the positions are parameters, and both receive a gradient
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
    (_vit(_X) * _draw(_g, 3, 5, scale=1.0)).sum().backward()
    _params = dict(_vit.named_parameters())
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
