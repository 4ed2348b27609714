# Hidden: eq-rope against explicit rotations in float64 built with Python's math, for (2, 3, 7, 10) inputs with two
# bases and one long sequence (T = 2048, where float32 angles are off by 1e-4); then a property test (hypothesis,
# derandomised, no example database): for random even h, T, base and vectors q, k, the scores of rotary(q) at position
# i and rotary(k) at position i + delta depend on delta only (the matrix is constant along its diagonals) and the
# lengths of the interleaved pairs are kept; the dtype of x is kept (float32, and bfloat16 and float16 close to the
# rotation of their values, which angles in half precision are not); no tensor is made off x's device; x is left
# as it was and gets the output's gradient turned back.
# (Runs in the notebook, after its visible test: checks and the answers are defined there.)
# Contract: the page's sentences each check relies on.
#   "x: (..., T, h), h even: the queries or keys of T positions 0 .. T-1." -> (2, 3, 7, 10), (2048, 4) inputs
#   "base: theta_j = base^(-2j/h) for the pairs j = 0 .. h/2 - 1." -> several bases
#   "pair (x[2j], x[2j+1]) of position t turned counter-clockwise by t * theta_j (eq-rope)," -> explicit rotations
#   "pairs interleaved as in x. Angles computed in float64." -> lengths of the pairs; T = 2048 to 1e-9
#   "it depends on the positions only through the offset $\delta$ between them." -> property test of the scores
#   "(..., T, h), of x's dtype (bfloat16 and float16 too) and device:" -> float32, bfloat16, float16 kept; devices
#   "Gradients flow back to x," -> the gradient of x against the inverse rotation
#   "and x itself is left as it was." -> x unchanged after a call
# Classes: each kind of mistake, and the check that catches it.
#   value -> eq-rope against explicit rotations (halves_with_interleaved_freqs, exponent_j_over_h)
#   dtype -> float64 to 1e-12; float32 and half precision kept, the latter close (float32_angles, angles_in_x_dtype)
#   device -> no tensor made off x's device, 'meta' default or x (positions_on_cpu, cpu_device@...)
#   pass-through -> two bases and random ones (ignores_base)
#   state -> x unchanged after a call (rotates_in_place)
#   gradient -> the gradient of x is the output's gradient turned back (no_grad_rotation)
#   type -> a real tensor of x's shape (complex_output)
#   edge -> position 0 unturned; T = 2048 (positions_from_1)
#   symmetry -> scores for offsets of both signs, pairs of unequal halves (clockwise, halves_layout)
#   train-eval -> n/a: no dropout, no mode
#   efficiency -> n/a: the contract promises no cost
import math as _math

from _shared import _device_probe  # the course's shared probes (the assembler inlines _shared.py)
from hypothesis import given as _given
from hypothesis import settings as _settings
from hypothesis import strategies as _st

_T = checks.trusted
_f64 = _T.float64
_Tensor = type(_T.zeros(0))
_failures = []


def _rope_ref(x, base):
    """eq-rope on nested lists x[..][t][c] by explicit 2 x 2 rotations in Python floats."""
    if isinstance(x[0][0], list):
        return [_rope_ref(row, base) for row in x]
    h = len(x[0])
    out = []
    for t, v in enumerate(x):
        y = []
        for j in range(h // 2):
            a = t * base ** (-2 * j / h)
            c, s = _math.cos(a), _math.sin(a)
            y += [v[2 * j] * c - v[2 * j + 1] * s, v[2 * j] * s + v[2 * j + 1] * c]
        out.append(y)
    return out


def _rope_back(g, base):
    """The gradient of x from the gradient g of rotary(x), nested lists (T, h): each pair turned back by t theta_j."""
    h = len(g[0])
    out = []
    for t, v in enumerate(g):
        y = []
        for j in range(h // 2):
            a = t * base ** (-2 * j / h)
            c, s = _math.cos(a), _math.sin(a)
            y += [v[2 * j] * c + v[2 * j + 1] * s, -v[2 * j] * s + v[2 * j + 1] * c]
        out.append(y)
    return out


_g = _T.Generator().manual_seed(1167)
_x = _T.randn(2, 3, 7, 10, generator=_g, dtype=_f64)
_kept = _x.clone()
rotary(_x)
checks.check_close(
    _x,
    _kept,
    "x after rotary(x) (hidden: the caller's queries or keys must be left as they were)",
    atol=0,
    rtol=0,
    hint="build a new tensor (torch.stack of the turned pairs); writing the pairs back into x changes the caller's",
)
for _base in (10000.0, 50.0):
    checks.check_close(
        rotary(_x, base=_base),
        _T.tensor(_rope_ref(_x.tolist(), _base), dtype=_f64),
        f"rotary(x, base = {_base:g}) on (2, 3, 7, 10) inputs (hidden), against explicit rotations",
        atol=1e-12,
        rtol=0,
        hint="pair (x[2j], x[2j+1]) at position t turns counter-clockwise by t * base^(-2j/h), pairs interleaved",
    )
_long = _T.randn(2048, 4, generator=_g, dtype=_f64)
checks.check_close(
    rotary(_long),
    _T.tensor(_rope_ref(_long.tolist(), 10000.0), dtype=_f64),
    "rotary(x) for positions up to 2047 (hidden, float64)",
    atol=1e-9,
    rtol=0,
    hint="compute the positions and angles in float64: in float32, t * theta is off by about 1e-4 at t = 2047",
)


@_settings(max_examples=30, deadline=None, derandomize=True, database=None)
@_given(
    half=_st.integers(1, 8),
    T=_st.integers(2, 24),
    base=_st.sampled_from([100.0, 10000.0, 500000.0]),
    seed=_st.integers(0, 2**20),
)
def _relative_only(half, T, base, seed):
    g = _T.Generator().manual_seed(seed)
    h = 2 * half
    q, k = _T.randn(h, generator=g, dtype=_f64), _T.randn(h, generator=g, dtype=_f64)
    rq = rotary(q.expand(T, h), base=base)  # (T, h)
    rk = rotary(k.expand(T, h), base=base)  # (T, h)
    S = rq @ rk.T  # (T, T): S[i, i + delta] = score of q at position i and k at position i + delta
    if not bool((S[1:, 1:] - S[:-1, :-1]).abs().max() <= 1e-9):
        _failures.append(f"h = {h}, T = {T}, base = {base:g}: S[1:, 1:] != S[:-1, :-1]")
    lengths = rq.reshape(T, half, 2).norm(dim=-1)  # (T, h/2)
    if not bool((lengths - q.reshape(half, 2).norm(dim=-1)).abs().max() <= 1e-9):
        _failures.append(f"h = {h}, T = {T}, base = {base:g}: the lengths of the pairs (x[2j], x[2j+1]) changed")


_relative_only()
checks.check_true(
    not _failures,
    "for random sizes, bases and vectors, scores depend on the offset only and pairs keep their lengths (hidden"
    + (f"; first failure: {_failures[0]})" if _failures else ")"),
    hint="rotate each interleaved pair (x[2j], x[2j+1]) by t * theta_j, theta_j = base^(-2j/h), t = 0 .. T-1",
)


_y = rotary(_x.float())
checks.check_true(
    isinstance(_y, _Tensor) and _y.dtype == _T.float32,
    "a float32 input gives a float32 output (hidden)",
    hint="cast the cosines and sines to x.dtype",
)
# half precision: the angles in float64, so that even position 2047 turns by the right angle (in bfloat16, t * theta
# is off by up to 8 radians there); the output in x's dtype, close to the rotation of x's own values
for _half in (_T.bfloat16, _T.float16):
    _xh = _long.to(_half)  # (2048, 4)
    _yh = rotary(_xh)
    checks.check_true(
        isinstance(_yh, _Tensor) and _yh.dtype == _half,
        f"a {_half} input gives a {_half} output (hidden; got {getattr(_yh, 'dtype', type(_yh).__name__)})",
        hint="compute the angles in float64, then cast the cosines and sines to x.dtype",
    )
    checks.check_close(
        _yh.double(),
        _T.tensor(_rope_ref(_xh.double().tolist(), 10000.0), dtype=_f64),
        f"rotary(x) for a {_half} x of 2048 positions (hidden), against explicit rotations of its values",
        atol=0.05,
        rtol=0.05,
        hint="compute the positions and angles in float64 (t * theta in half precision is off by radians at "
        "large t), then cast the cosines and sines to x.dtype",
    )
# the gradient: queries and keys are trained through the rotation, so d(sum(rotary(x) * G))/dx is G turned back
_xg = _T.randn(5, 6, generator=_g, dtype=_f64).requires_grad_()
_Gout = _T.randn(5, 6, generator=_g, dtype=_f64)
_yg = rotary(_xg)
checks.check_true(
    isinstance(_yg, _Tensor) and _yg.requires_grad,
    "the output keeps x's gradient (hidden: x requires grad, the output should too)",
    hint="compute the output from x with torch operations, outside torch.no_grad() (only the angles need none)",
)
(_yg * _Gout).sum().backward()
checks.check_close(
    _xg.grad,
    _T.tensor(_rope_back(_Gout.tolist(), 10000.0), dtype=_f64),
    "the gradient of x (hidden, float64): the output's gradient turned back by t * theta_j",
    atol=1e-12,
    rtol=0,
)
# the device: no tensor made off x's device (_shared.py: _device_probe). With the default device set to 'meta' (a
# stand-in for a GPU) while x stays on the CPU, a tensor made without device=x.device lands on 'meta' and cannot meet
# x; an answer that names the CPU (device="cpu") also runs on an x on 'meta', as on a GPU.
_x = _T.randn(2, 5, 6, generator=_g, dtype=_f64)
_err = _device_probe(lambda: rotary(_x), lambda: rotary(_x.to("meta")), "rotary")
checks.check_true(
    _err is None,
    f"rotary makes its tensors on x's device (hidden): {_err}",
    hint="make the positions and frequencies with device=x.device",
)
