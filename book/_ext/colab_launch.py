"""Sphinx extension: the book's launch buttons open the page as the notebook a student hands in.

Colab opens only ``.ipynb`` files from GitHub, but the book's sources are MyST text notebooks (``.md``), and
sphinx-book-theme links every launch button to the source. ``python -m publish.colab`` (``make notebooks``) writes
each notebook page as an ``.ipynb`` with a first cell that installs the course library on Colab (and does nothing
elsewhere): the notebook of every door (``course/student_notebook.py``). Published on the branch named by
``qkv_colab_branch`` (``_config.yml``), they are what the Colab button opens; the public repository carries the same
files under ``notebooks/``, which Binder and the JupyterHub button (nbgitpuller) open, so that a student there works
in an ``.ipynb`` that nbgrader validates and the grader takes, not in the ``.md``.
"""

from __future__ import annotations

import re

_SOURCE = re.compile(r"/blob/[^/]+/(?:\./)?(?P<path>.+)\.md$")


_URLPATH = re.compile(r"(urlpath=(?:[^&]*/)?)(?P<path>book/[^&]+?)\.md(?=&|$)")


def colab_url(url: str, branch: str) -> str:
    """The Colab URL of a page's ``.md`` source, moved to the ``.ipynb`` of the same path on ``branch``."""
    return _SOURCE.sub(lambda m: f"/blob/{branch}/{m['path']}.ipynb", url)


def notebook_url(url: str) -> str:
    """A Binder or JupyterHub URL that opens a page's ``.md`` (its ``urlpath``), moved to the page's notebook in
    the public repository, ``notebooks/<path>.ipynb``."""
    return _URLPATH.sub(lambda m: f"{m[1]}notebooks/{m['path']}.ipynb", url)


def _retarget(app, pagename, templatename, context, doctree) -> None:
    for group in context.get("header_buttons", []):
        if group.get("label") != "launch-buttons":
            continue
        for button in group.get("buttons", []):
            if button.get("text") == "Colab" and "url" in button:
                button["url"] = colab_url(button["url"], app.config.qkv_colab_branch)
            elif button.get("text") in ("Binder", "JupyterHub") and "url" in button:
                button["url"] = notebook_url(button["url"])


def setup(app):
    app.add_config_value("qkv_colab_branch", "notebooks", "html")
    # sphinx-book-theme adds the launch buttons at priority 501; this runs after it.
    app.connect("html-page-context", _retarget, priority=600)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
