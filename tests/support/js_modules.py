"""Calling the exported functions of an explorer's ES module (``lib/qkv/widgets/js/<name>.js``) from a test, in Node.

The live explorers compute in the page (:mod:`qkv.widgets._live`); their tests compare what the module's pure
functions return with ``qkv``'s results. Node runs the module as it is: it is copied to a ``.mjs`` file (Node reads a
``.js`` file as CommonJS), imported, and each call's result comes back as JSON, whose numbers are exact float64 both
ways (shortest round-trip decimals). Typed arrays come back as lists.

Typical use::

    [weights] = call_module("softmax_scaling", [("attentionWeights", [scores, 64, True])])
"""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
from pathlib import Path

from qkv.widgets._live import module_path

__all__ = ["NODE", "node_or_skip", "call_module"]

NODE = shutil.which("node")

_RUNNER = """
import { readFileSync } from "node:fs";
const module = await import(process.argv[2]);
const calls = JSON.parse(readFileSync(0, "utf8"));
const results = calls.map(([name, args]) => {
  if (typeof module[name] !== "function") throw new Error(`the module exports no function ${name}`);
  return module[name](...args);
});
const typed = (key, value) => (ArrayBuffer.isView(value) ? Array.from(value) : value);
process.stdout.write(JSON.stringify(results, typed));
"""


def node_or_skip() -> str:
    """The path of ``node``, or skip the test (Node.js comes with npm, which the book's build needs for MathJax)."""
    import pytest

    if NODE is None:
        pytest.skip("node not found: install Node.js (Debian: apt-get install nodejs npm) to test the explorers' JS")
    return NODE


def call_module(name: str, calls: list[tuple[str, list]], timeout_s: float = 30.0) -> list:
    """The results of ``calls``, each ``(function name, arguments)``, made in one Node process on module ``name``."""
    node = node_or_skip()
    with tempfile.TemporaryDirectory(prefix="qkv-js-") as tmp:
        copy = Path(tmp) / f"{name}.mjs"
        shutil.copyfile(module_path(name), copy)
        runner = Path(tmp) / "runner.mjs"
        runner.write_text(_RUNNER, encoding="utf-8")
        result = subprocess.run(
            [node, str(runner), copy.as_uri()],
            input=json.dumps(calls, allow_nan=False),
            capture_output=True,
            text=True,
            timeout=timeout_s,
        )
    if result.returncode:
        raise AssertionError(f"node failed on {name}.js ({result.returncode}):\n{result.stderr[-3000:]}")
    return json.loads(result.stdout)
