"""The public tree holds the course, not a recipe against its grader: no file that students and readers reach
(``publish.public.ALLOW``) describes what the grader cannot catch. That is written for instructors only (README.md,
"What grading promises against a dishonest student"); ``qkv.checks`` once listed it in its docstring."""

from __future__ import annotations

import subprocess

from course import notebooks as nbs
from publish import public

#: Phrases of the threat model's blind spots (README.md): none may appear in a public file.
BLIND_SPOTS = (
    "undone between",
    "writes to memory",
    "rewriting the grader",
    "out of scope",
    "out of reach of",
    "cannot catch",
    "what does not hold",
    "made to lie about itself",
)


def public_files() -> list[str]:
    """The files of this repository that the public tree copies (its allowlist, as git lists them)."""
    entries = list(public.ALLOW)
    out = subprocess.run(
        ["git", "-C", str(nbs.ROOT), "ls-files", "-z", "--cached", "--others", "--exclude-standard", "--", *entries],
        capture_output=True,
        check=True,
    ).stdout.decode()
    return [name for name in out.split("\0") if name]


def test_no_public_file_describes_what_the_grader_cannot_catch():
    files = public_files()
    assert "lib/qkv/checks.py" in files and "book/intro.md" in files
    found = []
    for name in files:
        path = nbs.ROOT / name
        if path.suffix not in (".py", ".md", ".json", ".yml", ".txt", ".toml", ".cfg", ""):
            continue
        text = " ".join(path.read_text(encoding="utf-8", errors="replace").lower().split())
        found += [f"{name}: {phrase!r}" for phrase in BLIND_SPOTS if phrase in text]
    assert not found, "public files describe the grader's blind spots (move it to README.md's instructors' part):\n" + (
        "\n".join(found)
    )
