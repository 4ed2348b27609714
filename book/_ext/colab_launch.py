"""Sphinx extension: the book's "Colab" launch button opens the section as a notebook Colab can run.

Colab opens only ``.ipynb`` files from GitHub, but the book's sources are MyST text notebooks (``.md``), and
sphinx-book-theme links Colab to the source. ``python -m publish.colab`` (``make notebooks``) writes each
section as an ``.ipynb`` with a first cell that installs the course library on Colab; published on the branch
named by ``qkv_colab_branch`` (``_config.yml``), they are what this button opens.
"""

from __future__ import annotations

import re

_SOURCE = re.compile(r"/blob/[^/]+/(?:\./)?(?P<path>.+)\.md$")


def colab_url(url: str, branch: str) -> str:
    """The Colab URL of a page's ``.md`` source, moved to the ``.ipynb`` of the same path on ``branch``."""
    return _SOURCE.sub(lambda m: f"/blob/{branch}/{m['path']}.ipynb", url)


def _retarget(app, pagename, templatename, context, doctree) -> None:
    for group in context.get("header_buttons", []):
        if group.get("label") != "launch-buttons":
            continue
        for button in group.get("buttons", []):
            if button.get("text") == "Colab" and "url" in button:
                button["url"] = colab_url(button["url"], app.config.qkv_colab_branch)


def setup(app):
    app.add_config_value("qkv_colab_branch", "notebooks", "html")
    # sphinx-book-theme adds the launch buttons at priority 501; this runs after it.
    app.connect("html-page-context", _retarget, priority=600)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
