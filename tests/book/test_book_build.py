"""A cell that fails stops the book's build: the pages' remove-cells that assert what the prose claims of a trained
model (D2L 11.4-11.9) only protect a reader if a false claim fails ``make book``. Built with Jupyter Book itself,
under the execution settings of the book's ``_config.yml``, on a one-page book."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import yaml

from course.notebooks import ROOT

PAGE = """---
jupytext:
  text_representation:
    format_name: myst
kernelspec:
  display_name: Python 3
  language: python
  name: python3
---
# A page

```{code-cell} ipython3
:tags: [remove-cell]
claimed, computed = 0.9, FACT
assert computed >= claimed, "the prose claims more than the model reached"
```
"""


def _book(tmp_path: Path, fact: str) -> Path:
    tmp_path.mkdir(parents=True)
    ours = yaml.safe_load((ROOT / "_config.yml").read_text())
    config = {"title": "probe", "execute": ours["execute"], "only_build_toc_files": True}
    (tmp_path / "_config.yml").write_text(yaml.safe_dump(config))
    (tmp_path / "_toc.yml").write_text("format: jb-book\nroot: page\n")
    (tmp_path / "page.md").write_text(PAGE.replace("FACT", fact))
    return tmp_path


def _build(src: Path) -> subprocess.CompletedProcess:
    jb = str(Path(sys.executable).with_name("jupyter-book"))
    return subprocess.run([jb, "build", str(src)], capture_output=True, text=True, timeout=300)


def test_the_book_settings_stop_the_build_at_a_failing_cell():
    assert yaml.safe_load((ROOT / "_config.yml").read_text())["execute"].get("raise_on_error") is True


def test_a_false_claim_fails_the_build_and_a_true_one_builds(tmp_path):
    false = _build(_book(tmp_path / "false", "0.8"))
    assert false.returncode != 0, "a remove-cell whose assert fails let the book build"
    assert "the prose claims more than the model reached" in false.stdout + false.stderr
    true = _build(_book(tmp_path / "true", "0.95"))
    assert true.returncode == 0, true.stdout[-2000:] + true.stderr[-2000:]
