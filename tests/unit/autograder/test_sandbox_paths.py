"""What the sandbox shows and hides (``autograder.sandbox.paths``, ``preflight``), without starting one: the course is
never visible, the trained weights sit at one fixed place, a course another user could read is refused, and a
missing bubblewrap or a grader who is not root gets instructions.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

from autograder import sandbox as sb

ROOT = sb.SANDBOXED.parent.parent
LIMITS = {"max_lines": 50, "max_chars": 10_000}


def stream_text(outputs, name="stdout") -> str:
    return "".join(o["text"] for o in outputs if o["output_type"] == "stream" and o["name"] == name)


def test_bwrap_missing_is_refused_with_instructions(monkeypatch):
    monkeypatch.setenv("QKV_BWRAP", "/nonexistent/bwrap")
    with pytest.raises(sb.SandboxUnavailable, match="apt-get install bubblewrap"):
        sb.check_available()


def test_paths_the_sandbox_shows_cannot_hold_the_course(tmp_path):
    sb.check_hidden([tmp_path])  # a private folder: fine
    with pytest.raises(sb.SandboxUnavailable, match="shows to student code"):
        sb.check_hidden([ROOT / "lib" / "course"])
    visible = sb.visible_paths()
    in_place = [p for p in visible if p not in sb.trained_paths()]  # bound where they are on the host
    assert ROOT not in visible and all(ROOT not in p.parents or p.name in ("lib", ".venv") for p in in_place)


def test_the_trained_weights_are_shown_at_one_fixed_place_whatever_their_host_folder(tmp_path, monkeypatch):
    """The folder of trained weights may lie anywhere (the test suite keeps its own under the repository's _build/):
    the sandbox binds it read-only at /opt/qkv-trained and tells the notebook so, never at its host path."""
    weights = ROOT / "_build" / "test-cache" / "trained-probe"
    weights.mkdir(parents=True, exist_ok=True)
    try:
        monkeypatch.setenv("QKV_TRAINED_DIR", str(weights))
        assert sb.trained_paths() == [weights.resolve()]
        args = sb.bwrap_args(sb.Limits(deadline=5, grace=5), 3)
        binds = [tuple(args[i + 1 : i + 3]) for i, a in enumerate(args) if a == "--ro-bind"]
        assert (str(weights.resolve()), sb.TRAINED_IN_SANDBOX) in binds
        assert all(target != str(weights.resolve()) for _, target in binds), "bound at its host path too"
        settings = [tuple(args[i + 1 : i + 3]) for i, a in enumerate(args) if a == "--setenv"]
        assert ("QKV_TRAINED_DIR", sb.TRAINED_IN_SANDBOX) in settings
        with pytest.raises(sb.SandboxUnavailable, match="shows to student code"):
            sb.check_hidden([weights / "course"])  # a course inside the weights' folder would be readable
    finally:
        weights.rmdir()


def test_reachable_reads_the_mode_bits_as_the_kernel_does():
    stranger, groups = os.getuid() + 4242, {os.getgid() + 4242}  # neither the owner nor in the group
    top = Path(tempfile.mkdtemp(prefix="qkv-modes-"))  # in the temporary folder, open to all
    try:
        modes = {"open": 0o755, "closed": 0o700, "search-only": 0o711}
        for name, mode in modes.items():
            (top / name).mkdir()
            (top / name / "file").write_text("x")
            os.chmod(top / name / "file", 0o644)
            os.chmod(top / name, mode)
        (top / "private").write_text("x")
        os.chmod(top / "private", 0o600)
        os.chmod(top, 0o755)
        if not sb.reachable(top, stranger, groups):
            pytest.skip(f"{top.parent} is closed to other users")
        seen = lambda name: sb.reachable(top / name, stranger, groups)  # noqa: E731
        assert seen("open") and seen("open/file") and seen("search-only/file")  # a folder searchable but unlisted
        assert not seen("closed") and not seen("closed/file") and not seen("private") and not seen("missing")
        assert sb.reachable(top / "private", os.getuid(), set())  # its owner
    finally:
        shutil.rmtree(top)


def test_without_bubblewrap_only_root_may_grade(monkeypatch):
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    with pytest.raises(sb.SandboxUnavailable, match="only root can start it"):
        sb.sandbox_user()
    with pytest.raises(sb.SandboxUnavailable, match="only root"):
        sb.check_available(bubblewrap=False)


@pytest.mark.skipif(os.geteuid() != 0, reason="the mode without bubblewrap runs as root")
def test_without_bubblewrap_a_course_the_sandboxs_user_could_read_is_refused(monkeypatch):
    monkeypatch.setattr(sb.paths, "private_paths", lambda: [])  # this checkout's private parts: another test's
    top = Path(tempfile.mkdtemp(prefix="qkv-unwrapped-"))  # in /tmp, open to all, as a course folder may be
    try:
        os.chmod(top, 0o755)
        course = top / "course"
        course.mkdir(mode=0o755)
        (course / "gradebook.db").write_text("hidden tests")
        with pytest.raises(sb.SandboxUnavailable, match="can be read by the user 'nobody'"):
            sb.check_hidden([course], bubblewrap=False)
        os.chmod(course, 0o700)
        sb.check_hidden([course], bubblewrap=False)
    finally:
        shutil.rmtree(top)
