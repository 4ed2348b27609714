"""Tests for qkv.timing: the timer, peak memory, FLOP and byte counts, power-law fits (D2L 11.3, 11.6)."""

import datetime
import math
import os
import statistics

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch.utils.flop_counter import FlopCounterMode

from qkv.timing import (
    Timing,
    attention_bytes,
    attention_flops,
    benchmark,
    device_info,
    fit_power_law,
    matmul_peak_flops,
    peak_memory,
)

requires_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")


class FakeClock:
    """A clock returning given times and logging each read into a shared event list."""

    def __init__(self, log, times):
        self.log, self.times = log, iter(times)

    def __call__(self):
        self.log.append("clock")
        return next(self.times)


# ----------------------------------------------------------------------------- benchmark


def test_benchmark_on_a_cuda_like_device_warms_up_then_synchronises_before_every_clock_read():
    log = []
    reads = [0.0, 0.002, 1.0, 1.005, 2.0, 2.001, 3.0, 3.004]  # intervals of 2, 5, 1 and 4 ms
    timing = benchmark(
        lambda: log.append("fn"), warmup=2, repeats=4, device="cuda",
        clock=FakeClock(log, reads), synchronize=lambda: log.append("sync"),
    )  # fmt: skip
    assert log == ["fn", "fn"] + ["sync", "clock", "fn", "sync", "clock"] * 4
    np.testing.assert_allclose(timing.times_ms, [2.0, 5.0, 1.0, 4.0], rtol=1e-9)
    assert timing.median_ms == pytest.approx(3.0)
    assert (timing.warmup, timing.repeats, timing.device) == (2, 4, "cuda")
    assert timing.min_ms == pytest.approx(1.0) and timing.mean_ms == pytest.approx(3.0)


def test_benchmark_passes_arguments_and_needs_no_synchronisation_on_the_cpu():
    log, seen = [], []
    timing = benchmark(lambda a, b: seen.append(a + b), 2, 3, warmup=1, repeats=3, clock=FakeClock(log, range(6)))
    assert seen == [5] * 4, "one warm-up plus three timed calls, each with the given arguments"
    assert log == ["clock"] * 6
    assert timing.times_ms == [1000.0] * 3 and timing.device == "cpu"


def test_benchmark_infers_the_device_from_tensor_arguments_and_times_real_work():
    a = torch.randn(64, 64)
    timing = benchmark(torch.mm, a, a, warmup=1, repeats=5)
    assert isinstance(timing, Timing) and timing.device == "cpu"
    assert len(timing.times_ms) == 5 and all(t >= 0 for t in timing.times_ms)
    assert timing.median_ms == statistics.median(timing.times_ms)


def test_benchmark_rejects_bad_arguments():
    with pytest.raises(ValueError, match="CUDA events"):
        benchmark(lambda: None, device="cpu", use_cuda_events=True)
    with pytest.raises(ValueError, match="repeats"):
        benchmark(lambda: None, repeats=0)
    with pytest.raises(ValueError, match="warmup"):
        benchmark(lambda: None, warmup=-1)
    with pytest.raises(TypeError, match="function"):
        benchmark(42)


@requires_cuda
def test_benchmark_with_cuda_events_on_a_gpu():
    a = torch.randn(512, 512, device="cuda")
    timing = benchmark(torch.mm, a, a, repeats=5)
    assert timing.device.startswith("cuda") and len(timing.times_ms) == 5 and timing.median_ms > 0


class FakeCudaDevice:
    """A simulated asynchronous GPU in plain Python, in place of torch.cuda's Event and synchronize.

    ``launch(ms)`` queues work: the host pays 0.01 ms and goes on while the device runs the work after what was
    queued before. An event recorded now completes when the device has done everything queued before it;
    ``elapsed_time`` on an event the host has not waited for raises, as CUDA's "device not ready" does.
    """

    def __init__(self):
        self.now = self.busy_until = 0.0  # milliseconds
        self.log = []

    def launch(self, work_ms):
        self.log.append("fn")
        self.now += 0.01
        self.busy_until = max(self.busy_until, self.now) + work_ms

    def synchronize(self, device=None):
        assert device is None or torch.device(device).type == "cuda", f"synchronize on {device}"
        self.log.append("sync")
        self.now = max(self.now, self.busy_until)

    def Event(self, enable_timing=False):
        sim = self

        class Event:
            def __init__(self):
                assert enable_timing, "an event without enable_timing=True cannot be timed"
                self.done_at = None

            def record(self, stream=None):
                sim.log.append("record")
                self.done_at = max(sim.now, sim.busy_until)

            def synchronize(self):
                sim.log.append("wait")
                sim.now = max(sim.now, self.done_at)

            def elapsed_time(self, end):
                sim.log.append("elapsed")
                for event in (self, end):
                    if event.done_at is None or sim.now < event.done_at:
                        raise RuntimeError("CUDA error: device not ready (simulated: the event has not completed)")
                return end.done_at - self.done_at

        return Event()


def test_benchmark_with_cuda_events_waits_for_the_end_event_before_reading_it(monkeypatch):
    """CUDA-event timing, run on a simulated device so that CPU-only CI checks it: each repeat records a start
    event, calls fn, records an end event and waits for it before reading the elapsed time."""
    sim = FakeCudaDevice()
    monkeypatch.setattr(torch.cuda, "Event", sim.Event)
    monkeypatch.setattr(torch.cuda, "synchronize", sim.synchronize)
    works = iter([50.0, 50.0, 6.0, 2.0, 9.0])  # two slow warm-ups, then three timed calls
    timing = benchmark(lambda: sim.launch(next(works)), warmup=2, repeats=3, device="cuda")
    assert [e for e in sim.log if e not in ("sync", "wait")] == ["fn", "fn"] + ["record", "fn", "record", "elapsed"] * 3
    steps = " ".join(sim.log).replace("sync", "wait")  # waiting for the whole device would do as well
    assert steps.count("record fn record wait elapsed") == 3, f"wait for the end event before reading it: {sim.log}"
    np.testing.assert_allclose(timing.times_ms, [6.01, 2.01, 9.01], rtol=1e-9)  # the work (and the launch) only
    assert timing.median_ms == pytest.approx(6.01) and timing.device == "cuda"


# ----------------------------------------------------------------------------- peak memory


def test_cpu_peak_memory_of_one_known_allocation():
    n = 256
    nbytes = n * n * 4
    peak = peak_memory(lambda: torch.empty(n, n, dtype=torch.float32))
    assert nbytes <= peak < nbytes + 4096, f"one ({n}, {n}) float32 matrix is {nbytes} bytes, measured {peak}"


def test_cpu_peak_memory_counts_live_tensors_not_the_total_allocated():
    n = 128
    nbytes = n * n * 4

    def two_live():
        a, b = torch.ones(n, n), torch.ones(n, n)
        return a, b

    def one_at_a_time():
        for _ in range(3):
            torch.ones(n, n)  # freed at once

    assert 2 * nbytes <= peak_memory(two_live) < 2 * nbytes + 4096
    assert nbytes <= peak_memory(one_at_a_time) < nbytes + 4096, "three allocations, but never two alive at once"
    x = torch.ones(n, n)
    assert peak_memory(torch.mul, x, 2.0) >= nbytes, "arguments give the device; the result is a new matrix"


@requires_cuda
def test_cuda_peak_memory_of_one_known_allocation():
    n = 1024
    peak = peak_memory(lambda: torch.empty(n, n, device="cuda"), device="cuda")
    assert n * n * 4 <= peak < n * n * 4 + 2**20


class FakeCudaMemory:
    """torch.cuda's allocator statistics, simulated: bytes allocated now, and the peak since the last reset."""

    def __init__(self, allocated, peak):
        self.allocated, self.peak, self.log = allocated, peak, []

    def alloc(self, nbytes):
        self.allocated += nbytes
        self.peak = max(self.peak, self.allocated)

    def memory_allocated(self, device=None):
        return self.allocated

    def max_memory_allocated(self, device=None):
        self.log.append("read peak")
        return self.peak

    def reset_peak_memory_stats(self, device=None):
        self.log.append("reset")
        self.peak = self.allocated


def test_cuda_peak_memory_counts_only_what_the_call_adds(monkeypatch):
    """On a simulated CUDA allocator holding 10 MiB of earlier tensors, with a 100 MiB peak from earlier work, a
    call that allocates 3 MiB and 2 MiB then frees the 3 MiB peaks at 5 MiB above where it started."""
    MiB = 2**20
    mem = FakeCudaMemory(allocated=10 * MiB, peak=100 * MiB)
    for name in ("memory_allocated", "max_memory_allocated", "reset_peak_memory_stats"):
        monkeypatch.setattr(torch.cuda, name, getattr(mem, name))
    monkeypatch.setattr(torch.cuda, "synchronize", lambda device=None: mem.log.append("sync"))

    def call():
        mem.log.append("fn")
        mem.alloc(3 * MiB)
        mem.alloc(2 * MiB)
        mem.alloc(-3 * MiB)

    assert peak_memory(call, device="cuda") == 5 * MiB
    assert mem.log.index("reset") < mem.log.index("fn") < mem.log.index("read peak")


# ----------------------------------------------------------------------------- FLOPs and bytes


def _attention_by_loops(Q, K, V):
    """Scaled dot-product attention in plain Python, counting every arithmetic operation as it happens."""
    count = {"scores": 0, "scale": 0, "softmax": 0, "weighted_sum": 0}
    out = []
    for b in range(len(Q)):
        rows = []
        for q in Q[b]:
            scores = []
            for k in K[b]:
                acc = 0.0
                for qi, ki in zip(q, k):
                    acc += qi * ki
                    count["scores"] += 2
                scores.append(acc / math.sqrt(len(q)))
                count["scale"] += 1
            top = -math.inf
            for s in scores:
                top = max(top, s)
                count["softmax"] += 1
            exps = []
            for s in scores:
                exps.append(math.exp(s - top))
                count["softmax"] += 2
            total = 0.0
            for e in exps:
                total += e
                count["softmax"] += 1
            weights = []
            for e in exps:
                weights.append(e / total)
                count["softmax"] += 1
            row = []
            for j in range(len(V[b][0])):
                acc = 0.0
                for w, v in zip(weights, V[b]):
                    acc += w * v[j]
                    count["weighted_sum"] += 2
                row.append(acc)
            rows.append(row)
        out.append(rows)
    return out, count


@pytest.mark.parametrize("B,n_q,n_k,d,d_v", [(1, 1, 1, 1, 1), (2, 3, 4, 5, 2), (1, 4, 2, 3, 6)])
def test_flops_match_an_explicit_loop_that_counts_each_operation(B, n_q, n_k, d, d_v):
    torch.manual_seed(0)
    Q, K, V = torch.randn(B, n_q, d), torch.randn(B, n_k, d), torch.randn(B, n_k, d_v)
    out, count = _attention_by_loops(Q.tolist(), K.tolist(), V.tolist())
    reference = torch.softmax(Q @ K.transpose(1, 2) / math.sqrt(d), dim=-1) @ V  # (B, Q, d) @ (B, d, K) @ (B, K, v)
    torch.testing.assert_close(torch.tensor(out), reference, msg="the loop must really compute attention")
    flops = attention_flops(n_q, n_k, d, d_v, batch=B)
    assert {k: flops[k] for k in count} == count
    assert flops["total"] == sum(count.values())


def test_matmul_flops_agree_with_pytorchs_flop_counter():
    B, n_q, n_k, d, d_v = 3, 7, 11, 16, 8
    Q, K, V = torch.randn(B, n_q, d), torch.randn(B, n_k, d), torch.randn(B, n_k, d_v)
    with FlopCounterMode(display=False) as counter:
        S = torch.bmm(Q, K.transpose(1, 2))  # (B, Q, d) @ (B, d, K) -> (B, Q, K)
    scores_flops = counter.get_total_flops()
    with FlopCounterMode(display=False) as counter:
        torch.bmm(torch.softmax(S, -1), V)  # (B, Q, K) @ (B, K, v) -> (B, Q, v)
    flops = attention_flops(n_q, n_k, d, d_v, batch=B)
    assert flops["scores"] == scores_flops
    assert flops["weighted_sum"] == counter.get_total_flops()
    assert attention_flops(n_q, n_k, d)["weighted_sum"] == attention_flops(n_q, n_k, d)["scores"], "d_v defaults to d"


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
def test_bytes_match_the_sizes_of_the_tensors_an_unfused_attention_touches(dtype):
    B, n_q, n_k, d, d_v = 2, 5, 7, 4, 3
    Q, K, V = (torch.randn(B, n, m).to(dtype) for n, m in [(n_q, d), (n_k, d), (n_k, d_v)])
    S = torch.bmm(Q.float(), K.float().transpose(1, 2)).to(dtype)  # (B, Q, d) @ (B, d, K) -> (B, Q, K)
    P = torch.softmax(S.float(), -1).to(dtype)  # (B, Q, K)
    O = torch.bmm(P.float(), V.float()).to(dtype)  # (B, Q, K) @ (B, K, v) -> (B, Q, v)
    nb = lambda t: t.numel() * t.element_size()
    fused = nb(Q) + nb(K) + nb(V) + nb(O)
    unfused = fused + 2 * nb(S) + 2 * nb(P)  # scores written and read, weights written and read
    size = torch.tensor([], dtype=dtype).element_size()
    assert attention_bytes(n_q, n_k, d, d_v, B, size)["total"] == unfused
    assert attention_bytes(n_q, n_k, d, d_v, B, size, materialize=False)["total"] == fused
    parts = attention_bytes(n_q, n_k, d, d_v, B, size)
    assert (parts["queries"], parts["values"], parts["output"]) == (nb(Q), nb(V), nb(O))


def test_counts_reject_non_positive_sizes():
    with pytest.raises(ValueError, match="n_k must be a positive integer"):
        attention_flops(4, 0, 8)
    with pytest.raises(ValueError, match="dtype_bytes"):
        attention_bytes(4, 4, 8, dtype_bytes=0)
    with pytest.raises(ValueError, match="d must be"):
        attention_flops(4, 4, 2.5)


# ----------------------------------------------------------------------------- power law


def test_power_law_recovers_exact_synthetic_laws():
    ns = np.array([64, 128, 256, 512, 1024, 2048])
    for c, k in [(3e-6, 2.0), (0.5, 1.0), (7.0, -0.5), (1e-3, 3.0)]:
        c_hat, k_hat = fit_power_law(ns, c * ns.astype(float) ** k)
        assert abs(k_hat - k) < 1e-9 and c_hat == pytest.approx(c, rel=1e-9)


@settings(max_examples=50, deadline=None)
@given(
    c=st.floats(1e-6, 1e3),
    k=st.floats(-3, 3),
    ns=st.lists(st.integers(1, 10**6), min_size=2, max_size=10, unique=True),
)
def test_power_law_recovers_random_laws(c, k, ns):
    ns = np.array(ns, dtype=float)
    c_hat, k_hat = fit_power_law(ns, c * ns**k)
    assert k_hat == pytest.approx(k, abs=1e-7)
    assert c_hat == pytest.approx(c, rel=1e-6)


def test_power_law_least_squares_matches_numpy_polyfit_on_noisy_data():
    rng = np.random.default_rng(0)
    ns = np.array([100, 200, 400, 800, 1600])
    times = 2e-5 * ns**2 * np.exp(rng.normal(0, 0.1, len(ns)))
    slope, intercept = np.polyfit(np.log(ns), np.log(times), 1)
    c, k = fit_power_law(ns.tolist(), times.tolist())
    assert k == pytest.approx(slope, rel=1e-10) and c == pytest.approx(math.exp(intercept), rel=1e-10)


def test_power_law_rejects_bad_input():
    with pytest.raises(ValueError, match="at least 2 points"):
        fit_power_law([10], [1.0])
    with pytest.raises(ValueError, match="positive"):
        fit_power_law([10, 20], [1.0, 0.0])
    with pytest.raises(ValueError, match="positive"):
        fit_power_law([-1, 20], [1.0, 2.0])
    with pytest.raises(ValueError, match="equal length"):
        fit_power_law([10, 20, 30], [1.0, 2.0])
    with pytest.raises(ValueError, match="different sizes"):
        fit_power_law([10, 10], [1.0, 2.0])


# ----------------------------------------------------------------------------- peak FLOP/s, device info


def test_matmul_peak_flops_divides_2n3_by_the_median_time():
    reads = iter([0.0, 0.25, 1.0, 1.5, 2.0, 2.125])  # timed intervals 0.25, 0.5 and 0.125 s; median 0.25 s
    flops = matmul_peak_flops(n=32, device="cpu", warmup=0, repeats=3, clock=lambda: next(reads))
    assert flops == pytest.approx(2 * 32**3 / 0.25)


def test_device_info_describes_this_machine():
    info = device_info()
    assert info["torch"] == torch.__version__
    assert info["cpu_count"] == os.cpu_count()
    assert info["device_type"] == ("cuda" if torch.cuda.is_available() else "cpu")
    if not torch.cuda.is_available():
        assert info["cuda_runtime"] is None and info["cuda_driver"] is None
    when = datetime.datetime.fromisoformat(info["date"])
    assert abs((datetime.datetime.now(datetime.UTC) - when).total_seconds()) < 60
