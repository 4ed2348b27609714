# Hidden: our own simulated device (plain Python, nothing shared with the notebook); an even number of repeats (the
# median is then the mean of the two middle times), no warm-up with one repeat, the default numbers of warm-ups and
# repeats, a synchronous CPU-like device without synchronize; the answer may not call qkv's benchmark.
# Contract: the page's sentences each check relies on.
#   "Call fn(*args) `warmup` times without timing it." -> warm-ups before the first clock read; none
#   "Every clock read must come after a synchronize() that follows the last call of fn." -> no read while busy
#   "synchronize=None means there is nothing to wait for (the CPU)." -> a synchronous device, no synchronize
#   "fn: the function to time; args: its positional arguments." -> fn receives exactly the given arguments
#   "warmup=3, repeats=10" -> the defaults: 13 calls
#   "The median of the repeats' times in milliseconds, a float (for an even" -> the median in ms; a Python float
#   "number of repeats, the mean of the two middle times, as statistics.median)." -> four repeats
#   "refuse an answer that calls the course's own version of the function" -> timing.benchmark not called
# Classes: each kind of mistake, and the check that catches it.
#   value -> the median of four repeats in ms (a time in seconds is 1000 times too small)
#   dtype -> n/a: no tensor; the clock gives Python floats
#   device -> our simulated asynchronous device: no clock read while it is busy (no synchronize, or none at the start)
#   pass-through -> warmup=0, repeats=1 and warmup=3, repeats=4 give 1 and 7 calls; fn receives exactly the given args
#   state -> four calls in a row, each on a device of its own: times kept from an earlier call change the median
#   gradient -> n/a: a timer; nothing is trained through it
#   type -> the time is a Python float (not a 0-d tensor, not a bool)
#   edge -> an even number of repeats (the mean of the two middle times); no warm-up and one repeat; synchronize=None
#   symmetry -> skewed repeat times (2, 4, 6, 9 ms): for times spread evenly the mean would equal the median
#   train-eval -> n/a: no module, no training behaviour
#   efficiency -> n/a: the contract promises nothing on the timer's own cost
import qkv.timing as _timing


class _Device:
    """Work runs asynchronously: a call costs the host `launch` seconds and queues its work after earlier work."""

    def __init__(self, durations_ms, launch_ms=0.02, asynchronous=True):
        self.durations = [t / 1e3 for t in durations_ms]
        self.launch, self.asynchronous = launch_ms / 1e3, asynchronous
        self.now = self.busy_until = 0.0
        self.events, self.args, self.dirty_reads = [], [], 0

    def fn(self, *args):
        if len(self.args) >= len(self.durations):
            raise AssertionError(f"fn was called more than the {len(self.durations)} times expected")
        work = self.durations[len(self.args)]
        self.args.append(args)
        self.events.append("fn")
        self.now += self.launch
        self.busy_until = max(self.busy_until, self.now) + work
        if not self.asynchronous:
            self.now = self.busy_until

    def sync(self):
        self.events.append("sync")
        self.now = max(self.now, self.busy_until)

    def clock(self):
        self.events.append("clock")
        if self.busy_until > self.now:
            self.dirty_reads += 1
        return self.now


def _median(values):
    values = sorted(values)
    m = len(values) // 2
    return values[m] if len(values) % 2 else (values[m - 1] + values[m]) / 2


_a, _b = object(), object()
with checks.forbid_reference(time_fn, (_timing, "benchmark")):
    # three slow warm-ups, then four timed calls: an even number of repeats
    _dev = _Device([40.0, 40.0, 40.0, 6.0, 2.0, 9.0, 4.0])
    _t = time_fn(_dev.fn, _a, _b, warmup=3, repeats=4, clock=_dev.clock, synchronize=_dev.sync)
    checks.check_true(
        isinstance(_t, float),
        f"time_fn returns a Python float (got {type(_t).__module__}.{type(_t).__qualname__})",
        hint="return float(statistics.median(times_ms)): a number, not a tensor",
    )
    checks.check_scalar(len(_dev.args), 7, "calls of fn with warmup=3, repeats=4", atol=0)
    checks.check_true(all(x[0] is _a and x[1] is _b for x in _dev.args), "fn receives exactly the given arguments")
    checks.check_true(
        "clock" in _dev.events and _dev.events[: _dev.events.index("clock")].count("fn") == 3,
        "all three warm-ups run before the first clock read",
    )
    checks.check_scalar(
        _dev.dirty_reads,
        0,
        "clock reads taken while the device was still busy",
        atol=0,
        hint="synchronize before every clock read, including the one that starts a repeat",
    )
    checks.check_scalar(
        _t,
        0.02 + (4.0 + 6.0) / 2,
        "the median of four repeats (2, 4, 6, 9 ms of work + 0.02 ms launch)",
        atol=1e-9,
        hint="with an even number of repeats the median is the mean of the two middle times (statistics.median)",
    )
    # no warm-up, a single repeat
    _dev = _Device([7.5])
    _t = time_fn(_dev.fn, warmup=0, repeats=1, clock=_dev.clock, synchronize=_dev.sync)
    checks.check_scalar(_t, 7.52, "one repeat without warm-up", atol=1e-9)
    checks.check_scalar(_dev.dirty_reads, 0, "clock reads while busy, one repeat", atol=0)
    # the defaults: 3 warm-ups and 10 repeats
    _times = [11.0, 3.0, 8.0, 5.0, 13.0, 1.0, 2.0, 21.0, 34.0, 55.0]
    _dev = _Device([30.0, 30.0, 30.0] + _times)
    _t = time_fn(_dev.fn, clock=_dev.clock, synchronize=_dev.sync)
    checks.check_scalar(len(_dev.args), 13, "calls of fn with the default warmup=3 and repeats=10", atol=0)
    checks.check_scalar(_t, 0.02 + _median(_times), "the median with the default arguments", atol=1e-9)
    checks.check_scalar(_dev.dirty_reads, 0, "clock reads while busy, default arguments", atol=0)
    # a synchronous device (the CPU) and no synchronize at all
    _dev = _Device([1.0, 4.0, 2.0, 3.0], launch_ms=0.0, asynchronous=False)
    _t = time_fn(_dev.fn, warmup=1, repeats=3, clock=_dev.clock)
    checks.check_scalar(_t, 3.0, "the median on a CPU-like device without synchronize", atol=1e-9)
    checks.check_true(type(_t) is not bool, "the time is a number")
