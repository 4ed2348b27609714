"""Shared pytest fixtures.

The course's data live outside the repository (``../shared/data``, see its README). Tests never download:
``QKV_OFFLINE`` is set for the whole session, and ``QKV_DATA_DIR`` defaults to that folder so that a plain
``pytest`` finds the data as ``make test`` does (subprocesses, such as notebook kernels, inherit both).

Models the book trains are trained as smoke runs (``QKV_TRAIN_SMOKE``, :mod:`qkv.trained`): one epoch of two
batches, so that the notebooks, the release and the test build of the book (under ``_build/smoke/``) run every cell
without paying for full training. A test about a trained model's quality unsets it for that model.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
DEFAULT_DATA_DIR = REPO.parent / "shared" / "data"

os.environ.setdefault("QKV_DATA_DIR", str(DEFAULT_DATA_DIR))
os.environ.setdefault("QKV_OFFLINE", "1")
os.environ.setdefault("QKV_TRAIN_SMOKE", "2")


@pytest.fixture(scope="session")
def data_dir() -> Path:
    """The folder holding the real data files: ``$QKV_DATA_DIR``, else ``<repo>/../shared/data``."""
    return Path(os.environ.get("QKV_DATA_DIR", str(DEFAULT_DATA_DIR)))


@pytest.fixture
def isolated_data_env(tmp_path, monkeypatch) -> Path:
    """No data folder from the environment, an empty cache in ``tmp_path / "cache"``, downloads still off."""
    monkeypatch.delenv("QKV_DATA_DIR", raising=False)
    monkeypatch.setenv("QKV_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("QKV_OFFLINE", "1")
    return tmp_path / "cache"


@pytest.fixture(autouse=True, scope="session")
def _one_torch_thread():
    """The suite's models and tensors are tiny: one torch thread runs them fastest, and with pytest-xdist each
    worker then takes one core (two workers x two threads on two cores made small models ten times slower)."""
    import torch

    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(previous)


@pytest.fixture
def close_figures():
    """Close every matplotlib figure a test opened (the widget and figure tests draw many)."""
    yield
    import matplotlib.pyplot as plt

    plt.close("all")


@pytest.fixture
def jupyter(monkeypatch):
    """As in a Jupyter session: no book build, so the explorers return their ipywidgets panels."""
    from qkv import widgets

    monkeypatch.delenv(widgets.BOOK_BUILD_ENV, raising=False)


@pytest.fixture
def book_build(monkeypatch):
    """As while the book is built: the explorers draw static figures."""
    from qkv import widgets

    monkeypatch.setenv(widgets.BOOK_BUILD_ENV, "1")
