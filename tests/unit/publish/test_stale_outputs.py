"""A build forgets the pages' outputs of another ``qkv`` (publish/build_book.py): Jupyter Book keys its execution
cache by a page's code alone, so without this a page whose code did not change would show an older library's
outputs (an explorer's data, a figure) after ``qkv`` changed."""

from pathlib import Path

import pytest

from publish import build_book


def _cache(out: Path) -> Path:
    cache = out / "_build" / ".jupyter_cache"
    cache.mkdir(parents=True)
    (cache / "global.db").write_text("outputs")
    (out / "_build" / ".doctrees").mkdir()
    return cache


def test_outputs_of_another_library_are_forgotten_once(tmp_path):
    cache = _cache(tmp_path)
    (tmp_path / build_book.OUTPUTS_STAMP).write_text("0123456789abcdef\n")  # an older qkv
    assert build_book.forget_stale_outputs(tmp_path, "fedcba9876543210") is True
    assert not cache.exists() and not (tmp_path / "_build" / ".doctrees").exists()
    assert (tmp_path / build_book.OUTPUTS_STAMP).read_text() == "fedcba9876543210\n"
    _cache(tmp_path)
    assert build_book.forget_stale_outputs(tmp_path, "fedcba9876543210") is False, "the same library keeps them"
    assert (tmp_path / "_build" / ".jupyter_cache" / "global.db").exists()


def test_a_build_from_before_the_stamp_forgets_its_outputs(tmp_path):
    """A build folder made before the stamp existed cannot say which qkv made its outputs."""
    cache = _cache(tmp_path)
    assert build_book.forget_stale_outputs(tmp_path, "fedcba9876543210") is True
    assert not cache.exists()


def test_a_first_build_has_nothing_to_forget(tmp_path):
    assert build_book.forget_stale_outputs(tmp_path / "new", "fedcba9876543210") is False
    assert (tmp_path / "new" / build_book.OUTPUTS_STAMP).exists()


@pytest.fixture
def library_copy(tmp_path, monkeypatch):
    lib = tmp_path / "lib" / "qkv"
    (lib / "widgets" / "js").mkdir(parents=True)
    (lib / "attention.py").write_text("x = 1\n")
    (lib / "widgets" / "js" / "kv_cache.js").write_text("export default {};\n")
    monkeypatch.setattr(build_book, "ROOT", tmp_path)
    return lib


def test_the_library_digest_follows_python_but_not_the_explorers_modules(library_copy):
    before = build_book.library_digest()
    (library_copy / "widgets" / "js" / "kv_cache.js").write_text("export default { render() {} };\n")
    assert build_book.library_digest() == before, "refresh_book puts the current modules in the pages"
    (library_copy / "__pycache__").mkdir()
    (library_copy / "__pycache__" / "attention.cpython-311.pyc").write_bytes(b"\0")
    assert build_book.library_digest() == before, "bytecode is not the library"
    (library_copy / "attention.py").write_text("x = 2\n")
    assert build_book.library_digest() != before, "a change to qkv's code is a change to the pages' outputs"
