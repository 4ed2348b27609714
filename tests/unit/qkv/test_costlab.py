"""Tests for qkv.costlab: the simulated GPU, the contenders, the sweep, its fits, its files and its pictures
(D2L 11.6.2, the attention-cost lab). No assertion depends on how fast this machine is."""

import math
import os
import time

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402
from torch.utils.flop_counter import FlopCounterMode  # noqa: E402

from qkv import costlab, timing  # noqa: E402

requires_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


# ----------------------------------------------------------------------------- the simulated GPU


def test_simulated_gpu_unsynchronised_clock_reads_see_only_the_launch():
    gpu = costlab.SimulatedGPU(launch_ms=0.5)
    kernel = gpu.kernel(20.0)
    t0 = gpu.clock()
    kernel()
    t1 = gpu.clock()
    assert (t1 - t0) * 1e3 == pytest.approx(0.5), "the host only paid for the launch"
    assert gpu.busy and gpu.unsynchronised_reads == 1
    gpu.synchronize()
    assert not gpu.busy and gpu.now * 1e3 == pytest.approx(20.5), "synchronize waits until the work is done"
    assert gpu.log == ["clock", "launch", "clock", "sync"]


def test_simulated_gpu_queues_work_behind_earlier_work():
    gpu = costlab.SimulatedGPU(launch_ms=0.0)
    kernel = gpu.kernel([3.0, 4.0, 5.0])
    for _ in range(3):
        kernel("any", argument=1)
    gpu.synchronize()
    assert gpu.now * 1e3 == pytest.approx(12.0), "three kernels run one after another on the device"
    with pytest.raises(IndexError, match="3 durations"):
        kernel()
    with pytest.raises(ValueError, match="launch_ms"):
        costlab.SimulatedGPU(launch_ms=-1)


def test_qkv_benchmark_on_the_simulated_gpu_measures_the_work_exactly():
    gpu = costlab.SimulatedGPU(launch_ms=0.01)
    work = [40.0, 40.0, 2.0, 6.0, 4.0]
    result = timing.benchmark(
        gpu.kernel(work), warmup=2, repeats=3, device="cpu", clock=gpu.clock, synchronize=gpu.synchronize
    )
    assert result.times_ms == pytest.approx([2.01, 6.01, 4.01]), "launch + work of each timed call, warm-ups excluded"
    assert result.median_ms == pytest.approx(4.01)
    assert gpu.unsynchronised_reads == 0


# ----------------------------------------------------------------------------- clocks and threads


def test_one_thread_and_lab_clock_restore_the_thread_count():
    before = torch.get_num_threads()
    with costlab.one_thread() as clock:
        assert torch.get_num_threads() == 1 and clock is time.thread_time
    assert torch.get_num_threads() == before
    with costlab.lab_clock("cpu") as clock:
        assert clock is time.thread_time and torch.get_num_threads() == 1
    assert torch.get_num_threads() == before


def test_quiet_stderr_swallows_writes_to_file_descriptor_2_and_restores_it(capfd):
    with costlab.quiet_stderr():
        os.write(2, b"profiler noise\n")
    os.write(2, b"after\n")
    assert capfd.readouterr().err == "after\n"


def test_pick_device_and_announce_device(capsys):
    assert costlab.pick_device("cpu") == torch.device("cpu")
    if not torch.cuda.is_available():
        assert costlab.pick_device() == torch.device("cpu")
        with pytest.raises(ValueError, match="cuda"):
            costlab.pick_device("cuda")
    line = costlab.announce_device("cpu")
    assert "NO GPU FOUND" in line and line in capsys.readouterr().out


# ----------------------------------------------------------------------------- the contenders


def _reference_attention(q, k, v):
    return torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1]), dim=-1) @ v  # (..., T, d) -> (..., T, d)


def test_attention_contenders_compute_scaled_dot_product_attention():
    torch.manual_seed(0)
    found = costlab.contenders("cpu")
    names = [c.name for c in found]
    assert names[0] == "ours (11.3)" and "sdpa: math" in names and names[-2:] == ["GRU", "Conv1d (k=3)"]
    for contender in found:
        if contender.family != "self-attention":
            continue
        fn, args = contender.setup(2, 7, 4)
        with torch.no_grad():
            out = fn(*args)
        torch.testing.assert_close(out, _reference_attention(*args), msg=contender.name)
        assert out.shape[-2:] == (7, 4)


def test_flop_counts_of_the_contenders_match_pytorchs_flop_counter_or_the_attention_count():
    for contender in costlab.contenders("cpu"):
        B, n, d = 2, 10, 8
        if contender.family == "self-attention":
            assert contender.flops(B, n, d) == timing.attention_flops(n, n, d, batch=B)["total"]
            continue
        fn, args = contender.setup(B, n, d)
        with torch.no_grad(), FlopCounterMode(display=False) as counter:
            out = fn(*args)
        out = out[0] if isinstance(out, tuple) else out
        assert out.shape == args[0].shape, f"{contender.name} keeps the sequence's shape"
        assert contender.flops(B, n, d) == counter.get_total_flops(), contender.name


def test_sdpa_backends_on_this_machine():
    found = costlab.sdpa_backends("cpu")
    assert set(found) == {"math", "flash", "memory-efficient"}
    assert found["math"] is None, "the math backend runs everywhere"
    assert all(v is None or (isinstance(v, str) and v) for v in found.values())
    names = {c.name for c in costlab.contenders("cpu")}
    assert {f"sdpa: {k}" for k, v in found.items() if v is None} <= names


# ----------------------------------------------------------------------------- the sweep


def _fake(name, fail_at=None, error=None):
    def setup(batch, n, d):
        if fail_at is not None and n >= fail_at:
            raise error
        x = torch.zeros(batch, n, d)
        return (lambda t: t + 1), (x,)

    return costlab.Contender(name, "self-attention", setup, lambda b, n, d: b * n * d)


def test_run_sweep_gives_one_row_per_contender_and_size_with_every_field():
    rows = costlab.run_sweep(costlab.contenders("cpu"), n=[8, 16], d=4, batch=2, repeats=1, memory=True)
    names = [c.name for c in costlab.contenders("cpu")]
    assert [(r["name"], r["n"]) for r in rows] == [(name, n) for name in names for n in (8, 16)]
    for r in rows:
        assert set(costlab.FIELDS) <= set(r)
        assert r["status"] == "ok" and r["vary"] == "n" and r["d"] == 4 and r["batch"] == 2
        assert r["time_ms"] > 0 and r["peak_bytes"] >= 0 and r["dtype"] == "float32"
    rows = costlab.run_sweep([_fake("a")], n=8, d=[4, 2], repeats=1, memory=False)
    assert [(r["vary"], r["d"], r["n"]) for r in rows] == [("d", 2, 8), ("d", 4, 8)], "sizes are swept in order"
    assert all(math.isnan(r["peak_bytes"]) for r in rows)


def test_run_sweep_records_out_of_memory_and_skips_larger_sizes():
    oom = torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 8.00 GiB")
    refused = RuntimeError("No available kernel. Aborting execution.")
    rows = costlab.run_sweep(
        [_fake("oom", fail_at=16, error=oom), _fake("refused", fail_at=16, error=refused)],
        n=[8, 16, 32],
        d=4,
        repeats=1,
        memory=False,
    )
    status = {(r["name"], r["n"]): r["status"] for r in rows}
    assert [status["oom", n] for n in (8, 16, 32)] == ["ok", "oom", "skipped"]
    assert status["refused", 8] == "ok" and status["refused", 16].startswith("error: No available kernel")
    assert status["refused", 32].startswith("error"), "an error at one size does not stop the larger ones"
    slow = costlab.run_sweep([_fake("slow")], n=[8, 16], d=4, repeats=1, memory=False, max_point_s=0.0)
    assert [r["status"] for r in slow] == ["ok", "skipped"], "a point slower than max_point_s ends the sweep"


def test_run_sweep_rejects_bad_arguments():
    with pytest.raises(ValueError, match="one of n and d"):
        costlab.run_sweep([_fake("a")], n=[8], d=[4])
    with pytest.raises(ValueError, match="one of n and d"):
        costlab.run_sweep([_fake("a")], n=8, d=4)
    with pytest.raises(ValueError, match="positive integers"):
        costlab.run_sweep([_fake("a")], n=[8, 0], d=4)
    with pytest.raises(ValueError, match="clock"):
        costlab.run_sweep([_fake("a")], n=[8], d=4, clock="sundial")


def _rows(name, family, law, sizes, vary="n", status="ok"):
    return [
        dict(vary=vary, name=name, family=family, batch=1, n=s if vary == "n" else 64, d=s if vary == "d" else 64,
             dtype="float32", time_ms=law(s), peak_bytes=4.0 * law(s), flops=1, status=status)
        for s in sizes
    ]  # fmt: skip


def test_fit_sweep_recovers_exact_power_laws_from_the_larger_half_of_the_sizes():
    sizes = [64, 128, 256, 512, 1024, 2048]
    attention = _rows("att", "self-attention", lambda n: 1e-5 * n**2 if n >= 256 else 0.05, sizes)
    rnn = _rows("rnn", "RNN", lambda n: 0.02 * n, sizes)
    fits = costlab.fit_sweep(attention + rnn)
    assert fits["att"][1] == pytest.approx(2.0) and fits["att"][0] == pytest.approx(1e-5)
    assert fits["att"][2] == [256, 512, 1024, 2048][-3:], "the larger half, where the overhead no longer matters"
    assert fits["rnn"][1] == pytest.approx(1.0)
    assert costlab.fit_sweep(attention, "peak_bytes")["att"][0] == pytest.approx(4e-5)
    assert costlab.fit_sweep(attention, tail=2)["att"][2] == [1024, 2048]
    failed = _rows("one", "self-attention", lambda n: 1.0, [64]) + _rows("x", "CNN", lambda n: 1.0, [8], "n", "oom")
    assert costlab.fit_sweep(failed) == {}, "one point, or none that ran, is no fit"


def test_plot_sweep_draws_log_log_axes_with_the_exponents_in_the_legend():
    rows = _rows("att", "self-attention", lambda n: n**2 / 1e4, [64, 128, 256, 512])
    rows += _rows("rnn", "RNN", lambda n: n / 10, [64, 128, 256, 512])
    rows += [dict(rows[-1], n=1024, status="oom", time_ms=math.nan)]
    ax = costlab.plot_sweep(rows)
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert labels == ["att  (k = 2.00)", "rnn  (k = 1.00)"]
    d_rows = _rows("att", "self-attention", lambda d: float(d), [16, 32, 64], vary="d")
    fig = costlab.sweep_figure(rows + d_rows, title="t")
    assert len(fig.axes) == 3 and fig.axes[2].get_xlabel() == "width d"
    grid = costlab.sweep_figure(rows + d_rows, ncols=2)
    assert len(grid.axes) == 4 and grid.axes[2].get_xlabel() == "width d" and not grid.axes[3].axison


def test_results_round_trip_through_the_csv_with_their_provenance(tmp_path, capsys):
    rows = _rows("att", "self-attention", lambda n: n / 7, [8, 16])
    rows[1].update(status="oom", time_ms=math.nan, peak_bytes=math.nan)
    info = {"device": "Test Chip", "device_type": "cpu", "torch": "9.9", "date": "2030-01-01T00:00:00", "clock": "x"}
    path = costlab.write_results(rows, tmp_path / "attention_cost_cpu.csv", info)
    assert path.read_text().startswith("# device: Test Chip\n")
    read_info, back = costlab.read_results(path)
    assert read_info == info
    assert back[0] == {k: rows[0][k] for k in costlab.FIELDS} | {"time_ms": pytest.approx(8 / 7)}
    assert back[1]["status"] == "oom" and math.isnan(back[1]["time_ms"])
    with pytest.raises(FileNotFoundError, match="attention_cost.py"):
        costlab.read_results(tmp_path / "missing.csv")
    figures = costlab.show_results(tmp_path)
    assert len(figures) == 1 and "measured on Test Chip (cpu),\n  PyTorch 9.9" in capsys.readouterr().out
    (tmp_path / "empty").mkdir()
    assert costlab.show_results(tmp_path / "empty") == []
    assert "No measured results" in capsys.readouterr().out
    assert costlab.show_results(tmp_path / "absent") == []  # an installed qkv, away from a checkout
    assert "live in the course repository, under benchmarks/results" in capsys.readouterr().out


def test_tables_and_the_achieved_fraction_of_the_peak(capsys):
    rows = _rows("att", "self-attention", lambda n: 2.0, [8, 16])
    rows[1]["flops"] = 10**9
    rows.append(dict(rows[0], n=32, status="oom"))
    costlab.print_pivot(rows, "time_ms")
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["n=8", "n=16", "n=32"] and lines[1].split() == ["att", "2", "2", "oom"]
    (line,) = costlab.achieved(rows, peak=1e12)
    assert (line["n"], line["flop_per_s"], line["of_peak"]) == (16, pytest.approx(5e11), pytest.approx(0.5))
    assert costlab.device_memory_bytes("cpu") > 2**20


# ----------------------------------------------------------------------------- on a GPU


@requires_cuda
def test_sweep_on_a_gpu_in_half_precision_with_the_fused_kernels():
    found = costlab.contenders("cuda", torch.float16)
    assert "sdpa: flash" in {c.name for c in found}, "a CUDA GPU with float16 has the flash kernel"
    rows = costlab.run_sweep(found, n=[128, 256], d=64, batch=2, device="cuda", repeats=2)
    assert all(r["status"] == "ok" and r["time_ms"] > 0 and r["peak_bytes"] > 0 for r in rows), rows
    for contender in found:
        if contender.family == "self-attention":
            fn, args = contender.setup(2, 64, 16)
            with torch.no_grad():
                out = fn(*args)
            ref = _reference_attention(*(a.float() for a in args))
            torch.testing.assert_close(out.float(), ref, atol=2e-2, rtol=2e-2, msg=contender.name)


@requires_cuda
def test_out_of_memory_on_a_gpu_is_recorded_and_the_gpu_stays_usable():
    ours = costlab.contenders("cuda", torch.float16)[0]
    rows = costlab.run_sweep([ours], n=[2**20, 2**21], d=64, batch=8, device="cuda", repeats=1)
    assert [r["status"] for r in rows] == ["oom", "skipped"]
    x = torch.ones(1024, 1024, device="cuda")
    assert float((x @ x)[0, 0]) == 1024.0
