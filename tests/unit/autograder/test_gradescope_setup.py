"""What a Gradescope zip says and does before any grading: setup.sh's choice of PyTorch's index (TORCH_INDEX_URL)
and of Python, the zip's README.md, the container's memory, and the Markdown of results.json.

setup.sh's functions run for real, in bash, with fake ``pip``, ``apt-get`` and ``python3.11`` on PATH that record how
they were called; the whole setup.sh runs only in benchmarks/gradescope_chroot.sh (minutes, on a fresh Debian root).
"""

from __future__ import annotations

import importlib.metadata
import os
import subprocess
from pathlib import Path

import pytest

from autograder.gradescope import build as gs_build
from autograder.gradescope import guide, memory, run
from autograder.gradescope import markdown as md
from autograder.gradescope import results as gs_results
from autograder.gradescope.settings import Settings
from autograder.nbcourse import GradingError

SETUP = Path(gs_build.__file__).with_name("setup.sh")
UNSET = object()


def fake(folder: Path, name: str, body: str) -> None:
    path = folder / name
    path.write_text("#!/bin/sh\n" + body + "\n")
    path.chmod(0o755)


@pytest.fixture
def shell(tmp_path):
    """Runs bash lines after ``source setup.sh`` with fakes first on PATH: ``pip`` writes its arguments, one a line,
    to ``pip.args``; ``apt-get`` appends its to ``apt.log`` and fails."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake(bin_dir, "pip", f'printf "%s\\n" "$@" > {tmp_path}/pip.args')
    fake(bin_dir, "apt-get", f'echo "$*" >> {tmp_path}/apt.log; exit 1')

    def call(lines: str, torch_index=UNSET):
        env = {k: v for k, v in os.environ.items() if k != "TORCH_INDEX_URL"}
        env["PATH"] = f"{bin_dir}:/usr/bin:/bin"
        if torch_index is not UNSET:
            env["TORCH_INDEX_URL"] = torch_index
        done = subprocess.run(["bash", "-c", f"source {SETUP}\n{lines}"], env=env, capture_output=True, text=True)
        args = (tmp_path / "pip.args").read_text().splitlines() if (tmp_path / "pip.args").exists() else None
        (tmp_path / "pip.args").unlink(missing_ok=True)
        return done, args

    call.bin, call.tmp = bin_dir, tmp_path
    return call


@pytest.mark.parametrize(
    "torch_index, index_args",
    [
        (UNSET, ["--index-url", "https://download.pytorch.org/whl/cpu"]),  # as on Gradescope
        ("", []),  # pip's own configuration: pip.conf, PIP_INDEX_URL, find-links (local wheels here)
        ("file:///srv/wheels/simple", ["--index-url", "file:///srv/wheels/simple"]),
        ("https://mirror.example/torch-cpu", ["--index-url", "https://mirror.example/torch-cpu"]),
    ],
)
def test_torch_index_url_chooses_where_pytorch_comes_from(shell, torch_index, index_args):
    done, args = shell("install_torch pip install -q -c constraints.txt", torch_index)
    assert done.returncode == 0, done.stderr
    assert args == ["install", "-q", "-c", "constraints.txt", *index_args, "torch"]
    where = index_args[1] if index_args else "pip's own configuration (TORCH_INDEX_URL is empty)"
    assert f"setup: PyTorch from {where}" in done.stdout


def test_a_torch_index_url_that_is_not_one_stops_setup_before_anything_is_installed(shell):
    done, args = shell("install_torch pip install torch-cpu-please", "download.pytorch.org/whl/cpu")
    assert done.returncode == 2 and args is None
    assert "TORCH_INDEX_URL='download.pytorch.org/whl/cpu' is not a URL" in done.stderr
    assert "set it empty (TORCH_INDEX_URL=) for pip's own configuration" in done.stderr
    done, _ = shell("main", "not-a-url")  # main checks it first: no apt-get, no pip
    assert done.returncode == 2 and not (shell.tmp / "apt.log").exists()


def test_sourcing_setup_sh_runs_nothing(shell):
    done, args = shell("true")
    assert done.returncode == 0 and args is None and not (shell.tmp / "apt.log").exists()


def test_a_python_older_than_the_pins_need_is_refused_for_uvs(shell):
    fake(shell.bin, "python3.11", 'exec /usr/bin/env -u PYTHONPATH python3 "$@"')  # this machine's, renamed
    done, _ = shell("python_at_least python3.11 3.11.0 && ! python_at_least python3.11 3.99.0 && echo both")
    assert done.stdout.strip() == "both"
    done, _ = shell("choose_python 3.99.0")  # newer than any: refused, then uv (whose curl fails here)
    assert done.returncode == 1 and "older than 3.99.0, which the pinned packages need" in done.stderr
    assert "install -y -q --no-install-recommends curl" in (shell.tmp / "apt.log").read_text()
    assert "uv could not install one" in done.stderr
    done, _ = shell("choose_python 3.0.0")
    assert done.returncode == 0 and done.stdout.strip() == str(shell.bin / "python3.11")


def test_the_zip_names_the_oldest_python_its_pins_accept(tmp_path):
    from packaging.specifiers import SpecifierSet

    needs = SpecifierSet(importlib.metadata.metadata("soupsieve")["Requires-Python"])
    pins = tmp_path / "constraints.txt"
    pins.write_text(f"soupsieve=={importlib.metadata.version('soupsieve')}\n")
    floor, why = gs_build.python_floor(pins).splitlines()
    patch = int(floor.split(".")[2])
    assert floor in needs and (patch == 0 or f"3.11.{patch - 1}" not in needs)  # the oldest it accepts
    assert why.startswith("# soupsieve") if patch else why == "# none"
    pins.write_text("# nothing pinned\n")
    assert gs_build.python_floor(pins) == "3.11.0\n# none\n"


class FakeSection:
    """What :func:`~autograder.gradescope.build.hidden_test_packages` reads of a section: its hidden tests' files."""

    def __init__(self, folder: Path, source: str):
        self.slug, self.hidden_common, self.shared_helpers = "fake", folder / "_common.py", folder / "_shared.py"
        (folder / "test_x.py").write_text(source)
        self.hidden_common.write_text("import math\nfrom qkv import checks\n")
        self._tests = {"test_x": folder / "test_x.py"}

    def hidden_tests(self):
        return self._tests


def test_the_zip_installs_what_the_hidden_tests_import(tmp_path):
    source = "import torch\nfrom hypothesis import given, strategies as st\nfrom _common import fixture\n"
    assert gs_build.hidden_test_packages(FakeSection(tmp_path, source)) == {"torch", "hypothesis"}
    assert "hypothesis" in gs_build.requirements(FakeSection(tmp_path, source))  # Gradescope's venv gets it
    assert "hypothesis" not in gs_build.requirements()  # not otherwise: no grading code imports it
    with pytest.raises(GradingError, match=r"import \['no_such_package'\], which no installed distribution"):
        gs_build.hidden_test_packages(FakeSection(tmp_path, "import no_such_package\n"))


# ---------------------------------------------------------------- the zip's README and the container's memory


def test_the_container_is_the_measured_peak_with_room_never_below_gradescopes_default(monkeypatch):
    monkeypatch.setattr(memory, "measured", lambda: {"big": {"peak_mib": 700}, "small": {"peak_mib": 300}})
    assert memory.container_mb("big") == 1024  # 700 MiB = 734 MB, and a quarter more: 918, rounded up to 1024
    assert memory.container_mb("small") == memory.DEFAULT_MB
    assert memory.container_mb("unmeasured") == memory.DEFAULT_MB and memory.peak_mib("unmeasured") is None


def test_the_measured_peaks_are_of_the_courses_sections():
    from course.section import sections

    measured = memory.measured()  # autograder/gradescope/memory.toml, as benchmarks/gradescope_chroot.sh wrote it
    assert measured and set(measured) <= {s.slug for s in sections()}, set(measured)  # no renamed section left
    assert all(isinstance(m["peak_mib"], int | float) and 0 < m["peak_mib"] < 64 * 1024 for m in measured.values())


def test_the_zips_readme_says_what_to_set_on_gradescope(monkeypatch):
    monkeypatch.setattr(memory, "measured", lambda: {"transformer": {"peak_mib": 700}})
    settings = Settings("transformer", output="visible", full_feedback=3, feedback_window_hours=12, container_mb=1024)
    text = guide.readme(settings, 120)
    words = " ".join(text.split())
    assert "**Memory: at least 1024 MB.** Grading one submission of this section peaked at 700 MiB" in words
    assert "**Timeout: at least 240 s**" in words
    assert "every test's output when fewer than 3 of their submissions in the 12 hours before it got it" in words
    assert "`TORCH_INDEX_URL`" in text and "| unset (as on Gradescope) | PyTorch's CPU index" in text
    assert max(len(line) for line in text.splitlines() if not line.startswith("|")) <= guide.WIDTH
    plain = " ".join(guide.readme(Settings("attention-pooling"), 60).split())
    assert "has not been measured" in plain and "Every submission gets full feedback" in plain


def test_the_log_warns_when_the_container_has_less_memory_than_the_section_needs(monkeypatch, capsys):
    monkeypatch.setattr(run, "container_limit", lambda: 768 * 10**6)
    run.check_memory(Settings("transformer", container_mb=1024))
    said = capsys.readouterr().out
    assert "WARNING: this container has 768 MB of memory; grading transformer needs 1024 MB" in said
    run.check_memory(Settings("transformer", container_mb=768))
    monkeypatch.setattr(run, "container_limit", lambda: None)
    run.check_memory(Settings("transformer", container_mb=1024))
    assert capsys.readouterr().out == ""


# ---------------------------------------------------------------- Markdown


def test_plain_text_is_escaped_and_a_notebooks_output_goes_in_a_code_block():
    assert md.escape("test_masked_softmax <b>*x*</b> [a](b)") == r"test\_masked\_softmax \<b\>\*x\*\</b\> \[a\](b)"
    assert md.escape("- one\n12. two\n# three") == "\\- one  \n12\\. two  \n\\# three"
    block = md.code_block("printed ```` four backticks\n")
    assert block.startswith("`````text\n") and block.endswith("\n`````")
    output = gs_results.test_output("failed", "CheckFailed: weights differ\n  hint: <softmax> along the keys")
    assert output == (
        "Failed.\n\nThe test cell's output:\n\n"
        "```text\nCheckFailed: weights differ\n  hint: <softmax> along the keys\n```"
    )
    assert gs_results.test_output("passed", "") == "Passed."


def test_results_declare_markdown_and_the_format_check_knows_gradescopes_formats():
    data = gs_results.build([("test_a", "Exercise 1", 1.0)], {"test_a": 1.0}, {}, "Graded.", Settings("x"))
    assert data["output_format"] == "md" and data["test_output_format"] == "md"
    assert {t["output_format"] for t in data["tests"]} == {"md"} and gs_results.check_format(data) == []
    assert "output_format 'markdown' is not one of" in gs_results.check_format({**data, "output_format": "markdown"})[0]
    bad_test = {**data, "tests": [{**data["tests"][0], "output_format": "rst"}]}
    assert "tests[0].output_format 'rst'" in gs_results.check_format(bad_test)[0]
    assert gs_results.check_format({**data, "leader_board": []}) == [
        "fields Gradescope does not know: ['leader_board']"
    ]


# ---------------------------------------------------------------- a --bubblewrap zip where bwrap cannot run


def test_bwrap_refused_in_a_chroot_is_said_to_be_the_chroots_doing(monkeypatch):
    from autograder.sandbox import preflight

    refused = subprocess.CompletedProcess([], 1, "", "bwrap: No permissions to create new namespace.\n")
    monkeypatch.setattr(preflight.subprocess, "run", lambda *a, **k: refused)
    monkeypatch.setattr(preflight, "bwrap_path", lambda: "/usr/bin/bwrap")
    monkeypatch.setattr(preflight, "in_chroot", lambda: True)
    with pytest.raises(preflight.SandboxUnavailable, match="runs in a chroot, where the kernel refuses new user"):
        preflight.check_available(True)
    monkeypatch.setattr(preflight, "in_chroot", lambda: False)
    with pytest.raises(preflight.SandboxUnavailable, match="namespace. It needs unprivileged user namespaces"):
        preflight.check_available(True)  # and the message does not end its sentence twice ("..")


def test_a_chroot_is_told_from_its_mounts(tmp_path):
    from autograder.sandbox import preflight

    info = tmp_path / "mountinfo"
    info.write_text(
        "25 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw\n26 25 0:5 / /proc rw,nosuid shared:2 - proc proc rw\n"
    )
    assert not preflight.in_chroot(info)  # a mount at /: the machine itself, or a container (pivot_root)
    info.write_text("612 580 0:71 / /proc rw,relatime - proc proc rw\n613 580 0:72 / /dev rw - tmpfs dev rw\n")
    assert preflight.in_chroot(info)  # what a chroot into a folder sees: the mount holding its root is outside it
    assert not preflight.in_chroot(tmp_path / "missing")
