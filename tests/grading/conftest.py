"""Fixtures of the grading tier."""

from __future__ import annotations

import pytest

from tests.support import corpus


@pytest.fixture(scope="module")
def template():
    """The released course of the corpus's section (``corpus.SLUG``), built once per content of its inputs; copy it
    (``shutil.copytree``) before grading into it."""
    return corpus.course_template((corpus.SLUG,))
