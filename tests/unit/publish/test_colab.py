"""The Colab notebooks (publish/colab.py) and the book's Colab button (book/_ext/colab_launch.py)."""

from __future__ import annotations

import sys
import types

import nbformat
import pytest

from course import assistants
from course import notebooks as nbs
from course.section import sections as all_sections
from course.student_notebook import differences, student_notebook
from publish import colab
from tests.support import book_ext


def _launch_extension():
    return book_ext.load("colab_launch")


def test_the_colab_button_moves_from_the_md_source_to_the_ipynb_on_the_notebooks_branch():
    ext = _launch_extension()
    base = "https://colab.research.google.com/github/org/repo/blob"
    assert ext.colab_url(f"{base}/main/./book/x.md", "notebooks") == f"{base}/notebooks/book/x.ipynb"
    assert ext.colab_url(f"{base}/dev/book/y.md", "nb") == f"{base}/nb/book/y.ipynb"
    assert ext.colab_url(f"{base}/main/book/z.ipynb", "nb") == f"{base}/main/book/z.ipynb"  # already a notebook
    context = {
        "header_buttons": [
            {"label": "download-buttons", "buttons": [{"text": ".md", "url": f"{base}/main/book/x.md"}]},
            {"label": "launch-buttons", "buttons": [{"text": "Colab", "url": f"{base}/main/book/x.md"}]},
        ]
    }
    app = types.SimpleNamespace(config=types.SimpleNamespace(qkv_colab_branch="notebooks"))
    ext._retarget(app, "book/x", "page.html", context, None)
    assert context["header_buttons"][1]["buttons"][0]["url"] == f"{base}/notebooks/book/x.ipynb"
    assert context["header_buttons"][0]["buttons"][0]["url"] == f"{base}/main/book/x.md"  # only Colab moves


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    """The Colab branch, written with course.toml choosing the "hints" policy for coding assistants (not the
    repository's default, so that a policy written whatever the configuration says shows)."""
    out = tmp_path_factory.mktemp("notebooks")
    config = tmp_path_factory.mktemp("config") / "course.toml"
    config.write_text('[assistants]\npolicy = "hints"\n')
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(assistants, "CONFIG", config)
        return out, colab.write(out)


def test_one_colab_notebook_per_notebook_page_with_the_books_cells_after_the_install_cell(written):
    """Every page with a Colab button has its notebook (the chapter at a glance too, whose button opened nothing),
    and a section's is the student's notebook of every door after the install cell."""
    out, paths = written
    pages = [name for name in nbs.toc_files() if nbs.is_notebook_source(nbs.ROOT / f"{name}.md")]
    assert [p.relative_to(out).with_suffix("").as_posix() for p in paths] == pages
    assert "book/chapter-at-a-glance" in pages and "book/intro" not in pages
    by_name = {f"book/{s.slug}": s for s in all_sections()}
    for name, path in zip(pages, paths, strict=True):
        nb = nbformat.read(path, as_version=4)
        nbformat.validate(nb)
        assert nb.cells[0].id == colab.COLAB_CELL_ID and nb.metadata["colab"]["name"] == path.name
        section = by_name.get(name)
        if section is None:  # a page without exercises: its cells, without outputs
            book = nbs.read(nbs.ROOT / f"{name}.md")
            assert [(c.cell_type, c.source) for c in nb.cells[1:]] == [(c.cell_type, c.source) for c in book.cells]
            assert all(not c.get("outputs") for c in nb.cells if c.cell_type == "code")
            continue
        nbformat.validate(nb)
        book = [c for c in nbs.read(section.path).cells if not nbs.is_book_check(c)]  # the book's own checks: out
        assert nb.cells[0].id == colab.COLAB_CELL_ID and nb.cells[0].cell_type == "code"
        assert [(c.cell_type, c.source) for c in nb.cells[1:]] == [(c.cell_type, c.source) for c in book]
        # After the install cell, the student's notebook of every door, nbgrader's checksums included.
        rest = nbformat.v4.new_notebook(cells=nb.cells[1:], metadata=nb.metadata)
        assert differences(student_notebook(section), rest) == [], section.slug
        assert all(c.metadata.nbgrader.get("checksum") for c in nb.cells[1:] if "nbgrader" in c.metadata)
        assert all(not c.get("outputs") for c in nb.cells if c.cell_type == "code")
        assert "jupytext" not in nb.metadata and nb.metadata["kernelspec"]["language"] == "python"
    assert "`notebooks` branch" in (out / "README.md").read_text()


def test_the_branch_carries_the_policy_for_coding_assistants_that_course_toml_chooses(written):
    out, _ = written
    for name in assistants.FILE_NAMES:
        assert (out / name).read_text(encoding="utf-8") == assistants.render("hints"), name


def test_the_install_cell_installs_qkv_on_colab_only(written, monkeypatch):
    out, paths = written
    source = nbformat.read(paths[0], as_version=4).cells[0].source
    url, branch, _ = colab.repository()
    calls = []
    shell = types.SimpleNamespace(run_line_magic=lambda *args: calls.append(args))
    monkeypatch.delitem(sys.modules, "google.colab", raising=False)
    exec(compile(source, "install", "exec"), {"get_ipython": lambda: shell})
    assert calls == []  # not on Colab: nothing happens
    monkeypatch.setitem(sys.modules, "google.colab", types.ModuleType("google.colab"))
    exec(compile(source, "install", "exec"), {"get_ipython": lambda: shell})
    assert calls == [("pip", f"install -q 'qkv @ git+{url}@{branch}'")]


def test_binder_and_jupyterhub_open_the_pages_notebook_in_the_public_repository():
    ext = _launch_extension()
    binder = "https://mybinder.org/v2/gh/org/repo/main?urlpath=lab/tree/book/x.md"
    assert (
        ext.notebook_url(binder) == "https://mybinder.org/v2/gh/org/repo/main?urlpath=lab/tree/notebooks/book/x.ipynb"
    )
    hub = "https://hub.edu/hub/user-redirect/git-pull?repo=https%3A//github.com/org/repo&urlpath=lab/tree/repo/book/y.md&branch=main"
    assert ext.notebook_url(hub) == hub.replace("repo/book/y.md&", "repo/notebooks/book/y.ipynb&")
    assert ext.notebook_url("https://example.org/other.md") == "https://example.org/other.md"  # no urlpath: left
