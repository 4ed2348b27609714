# Hidden: another shape and dtype; the answer must not depend on the visible test's numbers.
_T = checks.trusted
_x = _T.arange(-6, 6, dtype=_T.float64).reshape(3, 4) / 4
checks.check_shape(square(_x), (3, 4), "square(x) (hidden, 3 x 4)")
checks.check_close(square(_x), _x * _x, "square(x) (hidden, float64)")
