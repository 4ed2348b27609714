"""A live explorer in JupyterLab, as a student uses it (qkv.widgets._live; D2L 11.3's softmax scaling).

JupyterLab with the student configuration (as ``make lab`` starts it; ``test_jupyterlab_student.py``'s helpers) runs
a notebook whose cell shows the explorer: anywidget renders the same module as the book. The slider moves with the
arrow keys (JupyterLab's own shortcuts would take them: the controls opt out), the check box with Space, the text
says the weights ``qkv`` computes, the kernel's widget sees the moved controls, and a setting made in Python moves
the explorer. A screenshot is kept as ``_build/screenshots/explorers/jupyterlab-softmax_scaling.png``.
"""

from __future__ import annotations

import concurrent.futures
import subprocess

import nbformat
import pytest

from course import notebooks as nbs
from qkv.widgets.attention_scoring_functions import attention_weight_samples
from tests.book.test_jupyterlab_student import _PANEL_JS, _free_port, _start_lab, _wait_until_up
from tests.support import browser

SHOT = nbs.ROOT / "_build" / "screenshots" / "explorers"
CELLS = [
    "from qkv.widgets import attention_scoring_functions as widgets\npanel = widgets.softmax_scaling_explorer()\npanel",
    'print("state", panel.d, panel.scaled)\npanel.d = 16',
]


@pytest.fixture
def lab(tmp_path):
    if not browser.CHROMIUM.exists():
        pytest.skip(f"{browser.CHROMIUM} not found: install Debian's chromium (apt-get install chromium)")
    pytest.importorskip("anywidget", reason="anywidget is in the course extra")
    folder = tmp_path / "student"
    folder.mkdir()
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(source) for source in CELLS])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, folder / "explorer.ipynb")
    port, log = _free_port(), tmp_path / "jupyterlab.log"
    process = _start_lab(folder, port, log)
    try:
        url = f"http://{browser.LOCAL_HOST}:{port}/"
        _wait_until_up(url, process, log)
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _expected(d: int, scaled: bool) -> str:
    weights = attention_weight_samples(d, scaled, num_keys=16, trials=1, seed=0)[0]
    top = int(weights.argmax())
    how = "scaled" if scaled else "unscaled"
    return f"d = {d}, {how}: the largest weight is {float(weights[top]):.2f}, on key {top};"


@pytest.mark.browser
def test_the_softmax_explorer_in_jupyterlab(lab):
    # Playwright's sync API refuses to run in a thread with an asyncio loop; a thread of its own has none.
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        pool.submit(_session, lab).result()


def _session(url: str) -> None:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = browser.launch(playwright)
        page = chromium.new_page(viewport={"width": 1300, "height": 1000})
        page.set_default_timeout(60_000)
        summary = page.locator(".qkv-softmax-scaling [aria-live]")
        try:
            page.goto(f"{url}lab/tree/explorer.ipynb")
            page.wait_for_function(
                f"() => window.jupyterapp && {_PANEL_JS} && {_PANEL_JS}.sessionContext.session"
                f" && {_PANEL_JS}.sessionContext.session.kernel"
                f" && {_PANEL_JS}.sessionContext.session.kernel.status === 'idle'"
            )
            page.evaluate(f"() => {{ {_PANEL_JS}.content.activeCellIndex = 0; }}")
            page.evaluate("() => window.jupyterapp.commands.execute('notebook:run-cell')")
            summary.wait_for()
            assert summary.text_content().startswith(_expected(1, False))
            slider = page.locator(".qkv-softmax-scaling input[type=range]")
            slider.focus()
            page.keyboard.press("End")
            page.keyboard.press("ArrowLeft")  # JupyterLab would select a cell with it, had the slider not opted out
            page.keyboard.press("Tab")
            page.keyboard.press("Space")
            assert summary.text_content().startswith(_expected(256, True)), summary.text_content()
            page.evaluate(f"() => {{ {_PANEL_JS}.content.activeCellIndex = 1; }}")
            page.evaluate("() => window.jupyterapp.commands.execute('notebook:run-cell')")
            page.wait_for_function(f"() => {_PANEL_JS}.content.widgets[1].outputArea.node.innerText.includes('state')")
            printed = page.evaluate(f"() => {_PANEL_JS}.content.widgets[1].outputArea.node.innerText")
            assert "state 256 True" in printed, f"the kernel's widget did not follow the page: {printed!r}"
            page.wait_for_function(
                "() => document.querySelector('.qkv-softmax-scaling [aria-live]').textContent.startsWith('d = 16,')"
            )
            assert summary.text_content().startswith(_expected(16, True)), "Python's setting moved the explorer"
            SHOT.mkdir(parents=True, exist_ok=True)
            page.locator(".jp-OutputArea-output .qkv-softmax-scaling").screenshot(
                path=str(SHOT / "jupyterlab-softmax_scaling.png")
            )
        finally:
            chromium.close()
