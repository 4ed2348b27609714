"""The markers and names the sandbox and the coordinator share are spelled once, in autograder/sandboxed/protocol.py
(issue 28): the assembler, the rubrics, the grader and the sandbox import them, nbgrader's config agrees with them,
and no other code writes them out."""

from __future__ import annotations

import re
from pathlib import Path

from traitlets.config.loader import PyFileConfigLoader

from autograder.sandboxed import protocol

ROOT = Path(__file__).resolve().parents[3]
SPELLED = {
    protocol.BEGIN_SOLUTION: "protocol.BEGIN_SOLUTION",
    protocol.END_SOLUTION: "protocol.END_SOLUTION",
    protocol.BEGIN_HIDDEN: "protocol.BEGIN_HIDDEN",
    protocol.END_HIDDEN: "protocol.END_HIDDEN",
    protocol.TAMPERED: "protocol.TAMPERED",
}
#: The one file allowed to spell them (nbgrader_config.py is loaded by nbgrader alone; checked below instead).
OWNER = ROOT / "autograder" / "sandboxed" / "protocol.py"


def _code_files():
    for top in ("autograder", "course", "publish", "lib"):
        for path in sorted((ROOT / top).rglob("*.py")):
            if path != OWNER and path.name != "nbgrader_config.py" and "sections" not in path.parts:
                yield path


def spelled(text: str) -> list[str]:
    """The shared markers ``text`` writes out, each with the name to use instead."""
    return [f"{marker!r}: use {name}" for marker, name in SPELLED.items() if marker in text]


def test_no_code_but_the_protocol_spells_a_shared_marker():
    found = [f"{p.relative_to(ROOT)} spells {s}" for p in _code_files() for s in spelled(p.read_text(encoding="utf-8"))]
    assert not found, "\n".join(found)


def test_the_scan_reports_a_marker_written_out():
    assert spelled(f'HIDDEN = "{protocol.BEGIN_HIDDEN}"\nX = "TamperingDetected"') == [
        "'### BEGIN HIDDEN TESTS': use protocol.BEGIN_HIDDEN",
        "'TamperingDetected': use protocol.TAMPERED",
    ]
    assert spelled("x = protocol.BEGIN_HIDDEN") == []


def test_nbgraders_config_uses_the_protocols_words():
    config = PyFileConfigLoader("nbgrader_config.py", path=str(ROOT / "autograder")).load_config()
    assert config.ClearHiddenTests.begin_test_delimeter == protocol.HIDDEN_WORDS[0]
    assert config.ClearHiddenTests.end_test_delimeter == protocol.HIDDEN_WORDS[1]
    assert config.ClearSolutions.code_stub == {"python": protocol.CODE_STUB}
    assert config.ClearSolutions.text_stub == protocol.TEXT_STUB
    assert re.fullmatch(r"### [A-Z ]+", protocol.BEGIN_SOLUTION)


def test_the_protocol_imports_the_standard_library_only():
    source = OWNER.read_text(encoding="utf-8")
    imported = re.findall(r"^(?:from|import) (\w+)", source, re.M)
    assert set(imported) <= {"__future__", "json", "socket"}, imported
