# Hidden: our own quadratic attention, timed by the CPU time of one thread (so that other programs on the grading
# machine cannot move the exponent), must give 1.5 < k < 2.8 (the median of three sweeps, so that one unlucky sweep
# cannot fail a correct answer); a linear-time function must give k < 1.5. The inputs must be self-attention inputs of
# shape (batch, n, d) with batch = 2, the given clock must be used, and the times must be in ms. The linear-time
# function runs on a clock of its own that advances n / 64 ms a call, so its exponent is exactly 1 (on real clocks,
# busy machines measured 1.72 and 1.54 for it). A sweep on a fake clock passes d = 16, warmup = 2 and repeats = 3
# (neither the defaults nor the visible test's values) and checks the shapes and the count of calls; with device='meta'
# (a stand-in for a GPU) and the CPU as the default device, attention must receive all three inputs on 'meta'.
# Contract: the page's sentences each check relies on.
#   "For each n in ns (in order): make random queries, keys and values, each of" -> the shapes (2, n, 64)
#   "shape (batch, n, d), on `device`;" -> the shapes; on the CPU with 'meta' as default; on 'meta' if asked
#   "d, batch, device: the width, batch size and device of the inputs." -> (2, n, 16) for d = 16; device='meta'
#   "with timing.benchmark(..., warmup=warmup, repeats=repeats, device=device," -> the clock times the calls
#   "clock=clock) and keep its median in milliseconds." -> times in ms, against ours
#   "Then fit the medians against ns with timing.fit_power_law." -> k near 2, below 1.5 if linear; 2 on a fake clock
#   "(k, times_ms): the fitted exponent, and the list of median times in ms, one per n." -> a list, one per n
#   "The tests check that attention receives its inputs on the device given," -> device='cpu' and device='meta'
#   "also when PyTorch's default device is another one." -> the 'meta' default device
#   "`costlab.run_sweep` (5, which uses `timing.benchmark` and `timing.fit_power_law`" -> run_sweep not called
#   "warmup, repeats, clock: passed on to timing.benchmark." -> 2 + 3 calls of attention per n for warmup = 2
# Classes: each kind of mistake, and the check that catches it.
#   value -> k near 2 for a quadratic attention, below 1.5 for a linear one; ms against ours; exactly 2 on a fake clock
#   dtype -> n/a: the contract names no dtype (random inputs in the default dtype, as torch.randn makes them)
#   device -> 'meta' as the default device, and device='meta': inputs on the device given (cpu_device@...)
#   pass-through -> shapes for batch = 2, d = 16; clock read; 2 + 3 calls per n (ignore_argument@..., ignores_clock)
#   state -> three sweeps in a row, then the probes: times kept from an earlier call break the list and the fit
#   gradient -> n/a: nothing is trained; the sweep only times attention
#   type -> times_ms is a list, one median per n
#   edge -> n/a: ns is any increasing list of sizes; the docstring names no special case
#   symmetry -> d = 64 differs from n = 128, 256, 512: inputs of shape (batch, d, n) reach attention with wrong shapes
#   train-eval -> n/a: attention is called as it is given; the contract asks for no mode
#   efficiency -> n/a: the sweep's cost is attention's own
import time as _time

import qkv.costlab as _costlab

_T = checks.trusted
_ns, _d, _b = [64, 128, 256, 512], 64, 2
_shapes, _reads = [], [0]


def _clock():
    _reads[0] += 1
    return _time.thread_time()


def _quadratic(q, k, v):
    _shapes.append((tuple(q.shape), tuple(k.shape), tuple(v.shape)))
    return _T.bmm(_T.softmax(_T.bmm(q, k.transpose(1, 2)), dim=-1), v)  # (B, T, d) @ (B, d, T) @ (B, T, d)


_W = _T.randn(_d, _d) / _d**0.5  # (d, d)


_linear_now = [0.0]


def _linear_clock():
    return _linear_now[0]


def _linear(q, k, v):
    # A linear-time function on a clock of its own that advances n / 64 ms a call: its exponent is exactly 1 whatever
    # else the machine runs (a real clock measured 1.54 on a loaded 2-core machine), so an answer that returns a fixed
    # exponent, or one that does not time the function it is given, cannot pass.
    _linear_now[0] += int(q.shape[1]) / 64 * 1e-3
    return _T.matmul(q, _W) + v  # (B, T, d) @ (d, d) + (B, T, d): T d^2 multiply-adds, linear in T


_threads = torch.get_num_threads()
torch.set_num_threads(1)
try:
    with checks.forbid_reference(measured_exponent, (_costlab, "run_sweep")):
        _runs = [measured_exponent(_quadratic, _ns, d=_d, batch=_b, warmup=1, repeats=7, clock=_clock) for _ in "abc"]
        _linears = [
            measured_exponent(_linear, _ns, d=_d, batch=_b, warmup=1, repeats=7, clock=_linear_clock)[0] for _ in "abc"
        ]
    _k_linear = sorted(float(_k) for _k in _linears)[1]  # the median of three sweeps
    _ref = []
    _x = _T.randn(_b, _ns[-1], _d)
    for _ in range(6):
        _t0 = _time.thread_time()
        _T.bmm(_T.softmax(_T.bmm(_x, _x.transpose(1, 2)), dim=-1), _x)
        _ref.append((_time.thread_time() - _t0) * 1e3)
    _ref = sorted(_ref)[3]
finally:
    torch.set_num_threads(_threads)
_k, _times = sorted((float(_r[0]), _r[1]) for _r in _runs)[1]  # the median exponent, with its times

checks.check_true(
    1.5 < _k < 2.8,
    f"the exponent measured on a quadratic attention over n = {_ns}, {_k:.2f}, is near 2 (the median of three sweeps)",
    hint="time attention on (batch, n, d) inputs for every n, and fit the medians against ns (not the reverse)",
)
checks.check_true(
    float(_k_linear) < 1.5,
    f"the exponent measured on a linear-time function, {float(_k_linear):.2f}, is below 1.5",
    hint="measure the function you are given: do not return a fixed exponent",
)
checks.check_true(
    set(_shapes) == {((_b, n, _d),) * 3 for n in _ns},
    "attention is called with queries, keys and values of shape (batch, n, d) for every n",
    hint=f"expected the shapes {[(_b, n, _d) for n in _ns]}; got {sorted(set(_shapes))[:6]}",
)
checks.check_true(
    _reads[0] >= 6 * len(_ns),
    "the clock passed in is the one that times the calls",
    hint="pass clock=clock on to timing.benchmark",
)
checks.check_true(type(_times) is list and len(_times) == len(_ns), "times_ms has one median per n")
checks.check_true(
    0.1 < float(_times[-1]) / _ref < 10,
    f"the time at n = {_ns[-1]} is in milliseconds: {float(_times[-1]):.4g} against our {_ref:.4g} ms",
    hint="return timing.benchmark's median_ms unchanged",
)

# Devices: the inputs must be made on the device given. New tensors go to the 'meta' device by default during the
# sweep (shapes, no data), and the sweep is asked for device='cpu': an input made without device= lands on 'meta',
# where the fake attention sees it. A fake clock advances by (n / 64)^2 ms a call, so the sweep must give exactly the
# exponent 2 and those times. A right answer makes no 'meta' tensor, so it pays nothing for the probe (arithmetic or
# even randn on 'meta' imports sympy and torch._dynamo, seconds in a fresh process), and an answer that reads values
# out of its tensors (allowed here, as the docstring says: outside the timed calls it costs nothing measured) works.
# The sweep passes d = 16, warmup = 2 and repeats = 3, none of them the defaults nor the visible test's values.
_now, _devices, _calls, _fake_shapes = [0.0], set(), {}, set()


def _fake_clock():
    return _now[0]


def _device_attention(q, k, v):
    _devices.update(str(t.device) for t in (q, k, v))
    _fake_shapes.add((tuple(q.shape), tuple(k.shape), tuple(v.shape)))
    _calls[int(q.shape[1])] = _calls.get(int(q.shape[1]), 0) + 1
    _now[0] += (int(q.shape[1]) / 64) ** 2 * 1e-3  # seconds: 1 ms at n = 64, quadratic in n
    return v


def _one_line(err):
    return f"{type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}"


try:
    with torch.device("meta"):
        _k_dev, _times_dev = measured_exponent(
            _device_attention, _ns, d=16, batch=_b, device="cpu", warmup=2, repeats=3, clock=_fake_clock
        )
    _err = None
except Exception as _e:  # report what the student's code raised, in one line
    _err = _one_line(_e)
_hint_dev = "make the queries, keys and values with device=device, and pass device=device on to timing.benchmark"
checks.check_true(
    _devices <= {"cpu"},
    f"with device='cpu' and 'meta' as the default device, attention receives its inputs on 'cpu'; they were on "
    f"{sorted(_devices)}",
    hint=_hint_dev,
)
checks.check_true(
    _err is None, f"measured_exponent with device='cpu' and 'meta' as the default device raised {_err}", _hint_dev
)
checks.check_true(
    _fake_shapes == {((_b, n, 16),) * 3 for n in _ns},
    "with d = 16, attention is called with queries, keys and values of shape (batch, n, 16) for every n",
    hint=f"make the inputs with torch.randn(batch, n, d, ...); got {sorted(_fake_shapes)[:6]}",
)
checks.check_scalar(
    float(_k_dev), 2.0, "the exponent for a fake clock that runs (n / 64)^2 ms a call (hidden)", atol=1e-6
)
checks.check_true(
    type(_times_dev) is list
    and len(_times_dev) == len(_ns)
    and all(abs(float(t) - (n / 64) ** 2) < 1e-6 for t, n in zip(_times_dev, _ns)),
    f"with a fake clock that runs (n / 64)^2 ms a call, times_ms is {[(n / 64) ** 2 for n in _ns]}",
    hint="return timing.benchmark's median_ms for every n, in the order of ns",
)
checks.check_true(
    _calls == {n: 2 + 3 for n in _ns},
    f"with warmup=2 and repeats=3, attention is called 5 times for each n (got {_calls})",
    hint="pass warmup=warmup and repeats=repeats on to timing.benchmark: its own defaults are 3 and 10",
)

# The device given, when it is not the CPU: device='meta' (a stand-in for a GPU) with the CPU as the default device.
# The inputs must reach attention on 'meta', all three: an answer that makes them on the CPU by name (device="cpu")
# passes the sweep above, not this one. Random inputs on 'meta' cost a right answer 0.4 s once (randn there imports
# part of torch._dynamo). An answer that reads a value out of its inputs, which 'meta' cannot and a GPU can, is not
# judged here.
_now[0], _devices, _read = 0.0, set(), None
try:
    measured_exponent(_device_attention, [64, 128], d=8, batch=1, device="meta", warmup=0, repeats=1, clock=_fake_clock)
except Exception as _e:  # a value read on 'meta' is allowed; anything else is reported
    _read = _one_line(_e)
# a value read (.item(), float(), .numpy()) that 'meta' refuses and a GPU allows; copying the inputs out of 'meta'
# (.cpu(), .to("cpu")) is moving them off the device given, and counts
_meta_read = _read is not None and ("cannot be called on meta" in _read or "meta device type tensor to numpy" in _read)
checks.check_true(
    _meta_read or (_read is None and _devices == {"meta"}),
    f"with device='meta' (as a GPU would be) and the CPU as the default device, attention receives its inputs on "
    f"'meta'; they were on {sorted(_devices)}" + (f" (the sweep raised {_read})" if _read else ""),
    hint="make the queries, keys and values with device=device, and pass device=device on to timing.benchmark",
)
