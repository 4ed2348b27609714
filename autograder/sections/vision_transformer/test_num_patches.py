# Hidden: closed forms h w / (ph pw) for square and rectangular sizes, an int result, and a ValueError for sizes that
# do not divide or are not positive.
# Contract: the page's sentences each check relies on.
#   "img_size, patch_size: an int n (a square, n x n) or a (height, width) pair of ints." -> squares, rectangles
#   "Returns the int (h / ph) * (w / pw)." -> six closed forms, each an int
#   "Raises a ValueError, saying which sizes, if a size is not positive" -> (0, 4), (8, -2)
#   "or the patch does not divide the image on both sides." -> sizes that do not divide, on either side
# Classes: each kind of mistake, and the check that catches it.
#   value -> six closed forms, squares and rectangles
#   dtype -> n/a: ints in, an int out; no tensor
#   device -> n/a: no tensor, so no device
#   pass-through -> n/a: both arguments enter the closed form; one left out is a wrong value (the value class)
#   state -> n/a: a function of two sizes; there is nothing to keep or change
#   gradient -> n/a: a count, nothing is trained through it
#   type -> each result is an int (a / division gives a float, which torch.randn(1, P + 1, N) refuses)
#   edge -> sizes that do not divide (on either side) and sizes that are not positive raise a ValueError
#   symmetry -> rectangles in rectangular patches ((6, 8) in (3, 4)): the patch's sides crossed differ
#   train-eval -> n/a: no module, no training behaviour
#   efficiency -> n/a: the contract promises no time or memory (a closed form)
from _common import _raises  # the section's shared helpers (the assembler inlines _common.py)

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
