# Hidden: closed forms h w / (ph pw) for square and rectangular sizes, an int result, and a ValueError for sizes that
# do not divide or are not positive.
# Contract: the page's sentences each check relies on.
#   "img_size, patch_size: an int n (a square, n x n) or a (height, width) pair of ints." -> squares, rectangles
#   "Returns the int (h / ph) * (w / pw)." -> six closed forms, each an int
#   "Raises a ValueError, saying which sizes, if a size is not positive" -> (0, 4), (8, -2)
#   "or the patch does not divide the image on both sides." -> sizes that do not divide, on either side
for _args, _want in [
    ((28, 7), 16),
    ((96, 16), 36),
    ((224, 14), 256),
    (((6, 8), 2), 12),
    (((6, 8), (3, 4)), 4),
    (((30, 20), (5, 2)), 60),
]:
    _got = num_patches(*_args)
    checks.check_true(
        type(_got) is int and _got == _want,
        f"num_patches{_args} is the int {_want} (hidden)",
        hint="(height / patch height) times (width / patch width), with integer division, as an int",
    )
for _args in [(28, 5), ((6, 8), (4, 4)), ((6, 8), (3, 3)), (0, 4), (8, -2)]:
    _r = _raises(lambda _a=_args: num_patches(*_a))
    checks.check_true(
        _r == "ValueError",
        f"num_patches{_args} raises a ValueError (hidden; got {_r})",
        hint="check both sides: each must be a positive multiple of the patch size; raise ValueError otherwise",
    )
