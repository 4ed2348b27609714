"""JupyterLab as a student meets it: the student configuration (``student/jupyter/``), a release notebook, Chromium.

A fast test checks what each configuration loads of nbgrader: everything for the instructor (no
``JUPYTER_CONFIG_PATH``), only validation for students (``student/jupyter``), and validation plus the assignment
list on a hub with an exchange (``student/exchange`` in front).

One test drives a real JupyterLab, started token-less on 127.0.0.1 with ``JUPYTER_CONFIG_PATH`` set as ``make lab``
sets it, over a temporary copy of 11.1's release notebook, in headless Chromium (Debian's, through Playwright,
as ``tests/support/browser.py`` launches it). It opens the notebook (which must not open as modified), runs all
cells (every test cell must run and report its unanswered exercise), answers one stub with its reference solution,
runs that stub's test (which must now pass), clicks nbgrader's Validate button and reads its result, and checks that
nbgrader's instructor tools (Create Assignment, Formgrader, the course and assignment lists, the Nbgrader menu) are
absent. The opening's citation renders as a link, and a section's source from ``book/`` opens (as a double-click
opens it) as a Jupytext notebook whose link to another section's ``.md`` file opens that file. A screenshot of the
Validate result is kept as ``_build/screenshots/jupyterlab-student.png`` (``jupyterlab-student-failed.png`` when a
step fails).
"""

from __future__ import annotations

import concurrent.futures
import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import nbformat
import pytest

from course import notebooks as nbs
from tests.support import browser, corpus

try:
    from playwright.sync_api import TimeoutError as PlaywrightTimeout
except ImportError:  # the fixture skips the test
    PlaywrightTimeout = TimeoutError

ROOT = nbs.ROOT
STUDENT_CONFIG = ROOT / "student" / "jupyter"
SCREENSHOT = ROOT / "_build" / "screenshots" / "jupyterlab-student.png"
NOTEBOOK = f"{corpus.SLUG}.ipynb"
START_TIMEOUT_S = 60

# The notebook panel JupyterLab shows, and what its cells hold (window.jupyterapp: expose_app_in_browser).
_PANEL_JS = "window.jupyterapp.shell.currentWidget"
_CELLS_JS = f"""() => {_PANEL_JS}.content.widgets.map(w => ({{
  type: w.model.type,
  count: w.model.type === 'code' ? w.model.executionCount : null,
  grade_id: ((w.model.getMetadata('nbgrader') || {{}}).grade_id) || null,
  may_fail: (w.model.getMetadata('tags') || []).includes('raises-exception'),
  errors: w.model.type === 'code'
    ? w.model.outputs.toJSON().filter(o => o.output_type === 'error').map(o => o.ename + ': ' + o.evalue) : [],
}}))"""

# Run All has finished: every code cell has an execution count and the kernel is idle.
_ALL_RAN_JS = f"""() => {_PANEL_JS}.sessionContext.session.kernel.status === 'idle'
  && {_PANEL_JS}.content.widgets.every(w => w.model.type !== 'code' || w.model.executionCount !== null)"""


# What a Jupyter server started with JUPYTER_CONFIG_PATH (argv[1]) loads of nbgrader, and which lab plugins it disables.
_LOADED = """
import json
from jupyter_server.serverapp import ServerApp
from jupyterlab_server.config import get_static_page_config
app = ServerApp()
app.load_config_file()
app.find_server_extensions()
disabled = get_static_page_config(level="all").get("disabledExtensions", {})
print(json.dumps({
    "server": sorted(k.rsplit(".", 1)[-1] for k, on in app.jpserver_extensions.items() if on and "nbgrader" in k),
    "disabled": sorted(k.split(":")[-1] for k, off in disabled.items() if off and "nbgrader" in k),
}))
"""
NBGRADER_TOOLS = ["assignment-list", "course-list", "create-assignment", "formgrader", "menu"]


@pytest.mark.parametrize(
    ("config_path", "server", "disabled"),
    [
        ("", ["assignment_list", "course_list", "formgrader", "validate_assignment"], []),  # the instructor's
        ("student/jupyter", ["validate_assignment"], NBGRADER_TOOLS),
        ("student/exchange:student/jupyter", ["assignment_list", "validate_assignment"], NBGRADER_TOOLS[1:4]),
    ],
    ids=["instructor", "student", "student-with-exchange"],
)
def test_each_configuration_loads_only_its_nbgrader_tools(config_path, server, disabled, tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "JUPYTER_CONFIG_PATH"}
    if config_path:
        env["JUPYTER_CONFIG_PATH"] = os.pathsep.join(str(ROOT / part) for part in config_path.split(":"))
    result = subprocess.run(
        [sys.executable, "-c", _LOADED], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    loaded = json.loads(result.stdout.strip().splitlines()[-1])
    assert loaded == {"server": server, "disabled": disabled}, f"JUPYTER_CONFIG_PATH={config_path!r}"


def test_binders_start_script_gives_the_student_configuration(tmp_path):
    """Binder (repo2docker) runs the repository's ``start`` with the server's command as arguments: run it so, from
    another folder and with no JUPYTER_CONFIG_PATH, and the server loads exactly the student's nbgrader tools."""
    start = ROOT / "start"
    assert os.access(start, os.X_OK), "Binder runs start only when it is executable"
    env = {k: v for k, v in os.environ.items() if k != "JUPYTER_CONFIG_PATH"}
    result = subprocess.run(
        [str(start), sys.executable, "-c", _LOADED], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    loaded = json.loads(result.stdout.strip().splitlines()[-1])
    assert loaded == {"server": ["validate_assignment"], "disabled": NBGRADER_TOOLS}


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind((browser.LOCAL_HOST, 0))
        return sock.getsockname()[1]


def _start_lab(folder: Path, port: int, log: Path) -> subprocess.Popen:
    """JupyterLab over ``folder`` with the student configuration, token-less on 127.0.0.1:``port``."""
    env = dict(os.environ)
    env["JUPYTER_CONFIG_PATH"] = str(STUDENT_CONFIG)  # as make lab, Binder's start and a hub image set it
    env["JUPYTER_RUNTIME_DIR"] = str(folder.parent / "runtime")
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    cmd = [
        str(Path(sys.executable).with_name("jupyter")),
        "lab",
        "--no-browser",
        f"--ip={browser.LOCAL_HOST}",
        f"--port={port}",
        "--ServerApp.port_retries=0",
        "--IdentityProvider.token=",
        "--ServerApp.password=",
        f"--ServerApp.root_dir={folder}",
        f"--LabApp.user_settings_dir={folder.parent / 'user-settings'}",
        f"--LabApp.workspaces_dir={folder.parent / 'workspaces'}",
        "--LabApp.expose_app_in_browser=True",
    ]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        cmd.append("--allow-root")
    with open(log, "w") as out:
        return subprocess.Popen(cmd, cwd=folder, env=env, stdout=out, stderr=subprocess.STDOUT)


def _wait_until_up(url: str, process: subprocess.Popen, log: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"JupyterLab exited with {process.returncode}:\n{log.read_text()[-3000:]}", pytrace=False)
        try:
            with urllib.request.urlopen(f"{url}api/status", timeout=2):
                return
        except OSError:
            time.sleep(0.3)
    pytest.fail(f"JupyterLab did not answer within {START_TIMEOUT_S} s:\n{log.read_text()[-3000:]}", pytrace=False)


@pytest.fixture
def lab(tmp_path):
    """``(url, folder)``: JupyterLab with the student configuration over a folder holding 11.1's release."""
    if not browser.CHROMIUM.exists():
        pytest.skip(f"{browser.CHROMIUM} not found: install Debian's chromium (apt-get install chromium)")
    pytest.importorskip("playwright.sync_api", reason="Playwright is not installed (it is in the dev extra)")
    release = corpus.course_template((corpus.SLUG,)) / "release" / corpus.SLUG / NOTEBOOK
    folder = tmp_path / "student"
    folder.mkdir()
    shutil.copyfile(release, folder / NOTEBOOK)
    (folder / "book").mkdir()
    for source in nbs.BOOK.glob("*.md"):  # the book's sources, as a student finds them in the public repository
        shutil.copyfile(source, folder / "book" / source.name)
    port, log = _free_port(), tmp_path / "jupyterlab.log"
    process = _start_lab(folder, port, log)
    try:
        url = f"http://{browser.LOCAL_HOST}:{port}/"
        _wait_until_up(url, process, log)
        yield url, folder
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@pytest.mark.browser
def test_a_student_runs_answers_and_validates_a_notebook_in_jupyterlab(lab):
    # Playwright's sync API refuses to run where an asyncio loop is running, and an earlier test of the same
    # worker process (a kernel client) can leave one set in the main thread: a thread of its own has none.
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        pool.submit(_student_session, *lab).result()


def _student_session(url, folder):
    release = nbformat.read(folder / NOTEBOOK, as_version=4)
    solved = corpus.solved_notebook(folder / NOTEBOOK, corpus.SLUG)
    stub_ids = [nbs.grade_id(c) for c in release.cells if nbs.role(c) == "stub"]
    test_ids = [nbs.grade_id(c) for c in release.cells if nbs.role(c) == "test"]
    answers = [c for c in release.cells if nbs.role(c) == "answer"]
    chosen = stub_ids[0]

    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = browser.launch(playwright)
        page = chromium.new_page(viewport={"width": 1400, "height": 900})
        page.set_default_timeout(60_000)
        try:
            page.goto(f"{url}lab/tree/{NOTEBOOK}")
            page.wait_for_function(
                f"() => window.jupyterapp && {_PANEL_JS} && {_PANEL_JS}.context && {_PANEL_JS}.context.isReady"
                f" && {_PANEL_JS}.sessionContext.session && {_PANEL_JS}.sessionContext.session.kernel"
                f" && {_PANEL_JS}.sessionContext.session.kernel.status === 'idle'"
            )
            page.wait_for_timeout(500)  # the kernel's info reply (language_info) has been applied by now
            assert page.evaluate(f"() => {_PANEL_JS}.context.model.dirty") is False, (
                "the untouched release notebook opens as modified (does its metadata lack language_info?)"
            )

            # The student's JupyterLab: the Validate button, and none of nbgrader's instructor tools.
            tools = page.evaluate(
                """() => ({
                  menu: !!document.querySelector('#jp-mainmenu-nbgrader'),
                  menubar: document.querySelector('#jp-menu-panel, #jp-top-panel').innerText,
                  panel: !!document.querySelector('#nbgrader-create_assignemnt'),
                  commands: ['nbgrader:open-create-assignment', 'nbgrader:open-formgrader',
                             'nbgrader:open-course-list', 'nbgrader:open-assignment-list']
                            .filter(c => window.jupyterapp.commands.hasCommand(c)),
                  validate: document.querySelectorAll('.validate-button').length,
                  mdViewer: window.jupyterapp.docRegistry.defaultWidgetFactory('intro.md').name,
                })"""
            )
            assert not tools["menu"] and "Nbgrader" not in tools["menubar"], "the Nbgrader menu is there"
            assert not tools["panel"], "the Create Assignment panel is there"
            assert tools["commands"] == [], f"instructor commands are registered: {tools['commands']}"
            assert tools["validate"] == 1, "the notebook's toolbar has no Validate button"
            assert tools["mdViewer"] == "Jupytext Notebook", f"a .md file opens with {tools['mdViewer']!r}"

            # Run All: every cell runs, and each test cell reports its unanswered exercise.
            # (The command's promise settles at the first failing cell; the queued cells run on in the kernel.)
            page.evaluate("() => { window.jupyterapp.commands.execute('notebook:run-all-cells'); }")
            try:
                page.wait_for_function(_ALL_RAN_JS, timeout=90_000)
            except PlaywrightTimeout:
                pass  # the assertion below names the cells that never ran
            cells = page.evaluate(_CELLS_JS)
            not_run = [i for i, c in enumerate(cells) if c["type"] == "code" and c["count"] is None]
            assert not not_run, f"Run All stopped: code cells {not_run} did not run"
            by_id = {c["grade_id"]: c for c in cells if c["grade_id"]}
            for grade in test_ids:
                assert by_id[grade]["errors"], f"{grade} passed with its exercise unanswered"
            unexpected = [(i, c["errors"]) for i, c in enumerate(cells) if c["errors"] and not c["may_fail"]]
            assert not unexpected, f"cells not tagged raises-exception failed: {unexpected}"

            # The student answers one stub, runs it, then its test: it passes.
            index = {c["grade_id"]: i for i, c in enumerate(cells) if c["grade_id"]}
            answer = corpus.find_cell(solved, chosen).source
            page.evaluate(
                "([i, text]) => window.jupyterapp.shell.currentWidget.content.widgets[i].model.sharedModel"
                ".setSource(text)",
                [index[chosen], answer],
            )
            for grade in (chosen, f"test_{chosen}"):
                page.evaluate(
                    "async (i) => { const nb = window.jupyterapp.shell.currentWidget.content;"
                    " nb.activeCellIndex = i; nb.deselectAll();"
                    " await window.jupyterapp.commands.execute('notebook:run-cell'); }",
                    index[grade],
                )
            after = page.evaluate(_CELLS_JS)
            assert after[index[chosen]]["errors"] == [], f"{chosen}: {after[index[chosen]]['errors']}"
            assert after[index[f"test_{chosen}"]]["errors"] == [], (
                f"test_{chosen} still fails with the reference answer: {after[index[f'test_{chosen}']]['errors']}"
            )

            # Validate: saves, runs nbgrader validate on the server, shows the result in a dialog.
            page.locator(".validate-button").first.click()
            dialog = page.locator(".jp-Dialog")
            dialog.wait_for(state="visible", timeout=90_000)
            said = dialog.inner_text()
            SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
            SCREENSHOT.with_suffix(".validate.txt").write_text(said)
            # nbgrader lists each failing cell: the tests of the exercises still open, and the empty written answers.
            expected = len(test_ids) - 1 + len(answers)
            assert said.count("The following cell failed") == expected, (
                f"Validate should list the {len(test_ids) - 1} tests still failing and the {len(answers)} empty "
                f"written answers ({expected} cells); it said:\n{said[:3000]}"
            )
            assert said.count("You did not provide a response.") == len(answers), said[:3000]
            for grade in stub_ids[1:]:
                assert grade in said, f"Validate does not name the unanswered exercise {grade}:\n{said[:3000]}"
            saved = nbformat.read(folder / NOTEBOOK, as_version=4)
            assert corpus.find_cell(saved, chosen).source == answer, "Validate did not save the answer first"
            page.screenshot(path=str(SCREENSHOT))
            dialog.locator("button").last.click()

            # Citations render as text and links (with {cite} JupyterLab shows the raw key and a warning).
            opening = page.evaluate(
                f"() => {{ const c = {_PANEL_JS}.content.widgets[0];"
                " return {text: c.node.innerText, links: [...c.node.querySelectorAll('a[href]')].map(a => a.href)}; }"
            )
            assert any("d2l.ai" in link for link in opening["links"]), f"no link to D2L in the opening: {opening}"
            assert "{cite}" not in opening["text"] and "Zhang.Lipton" not in opening["text"], opening["text"][:500]

            # A source opened as the student opens it (double-click: its default viewer) is a notebook, and a link
            # to another section's file opens that file.
            _open_book_link(page, "book/attention-scoring-functions.md", "attention-cost-lab.md")
        except Exception:
            SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(SCREENSHOT.with_name("jupyterlab-student-failed.png")))
            raise
        finally:
            chromium.close()


def _open_book_link(page, path: str, target: str) -> None:
    """Open ``path`` with its default viewer, click its first link to ``target``; the tab that opens shows it."""
    page.evaluate("(path) => { window.jupyterapp.commands.execute('docmanager:open', {path}); }", path)
    page.wait_for_function(
        f"(path) => {_PANEL_JS} && {_PANEL_JS}.context && {_PANEL_JS}.context.path === path"
        f" && {_PANEL_JS}.context.isReady",
        arg=path,
    )
    is_notebook = page.evaluate(f"() => Array.isArray({_PANEL_JS}.content.widgets)")
    assert is_notebook, f"{path} opened in a text editor, not as a notebook (jupytext's default viewer)"
    index = page.evaluate(
        f"(target) => {_PANEL_JS}.content.widgets.findIndex(w => w.model.type === 'markdown'"
        " && w.model.sharedModel.getSource().includes('](' + target + ')'))",
        target,
    )
    assert index >= 0, f"{path} has no Markdown link to {target}"
    page.evaluate(
        f"async (i) => {{ const nb = {_PANEL_JS}.content; await nb.scrollToItem(i, 'center');"
        " nb.widgets[i].node.setAttribute('data-qkv-link-cell', ''); }",
        index,
    )
    link = page.locator(f"[data-qkv-link-cell] a[href*='{target}']").first
    try:
        link.wait_for(state="visible", timeout=20_000)  # jupyterlab-myst renders the cell asynchronously
    except PlaywrightTimeout:
        hrefs = page.locator("[data-qkv-link-cell] a").evaluate_all("els => els.map(a => a.getAttribute('href'))")
        pytest.fail(f"{path}: the rendered cell links to {hrefs}, not to {target}", pytrace=False)
    # A click that lands while jupyterlab-myst is still rendering the cell can be taken as a click on the cell (seen
    # once on a loaded CI machine): click again, at most three times, before calling the link broken.
    for attempt in range(3):
        link.click()
        try:
            page.wait_for_function(
                f"(path) => {_PANEL_JS} && {_PANEL_JS}.context && {_PANEL_JS}.context.path === path",
                arg=f"book/{target}",
                timeout=30_000,
            )
            return
        except PlaywrightTimeout:
            if attempt == 2:
                pytest.fail(f"{path}: clicking its link to {target} three times did not open it", pytrace=False)


def test_student_settings_override_valid_jupyterlab_settings_and_turn_off_the_news():
    """Every setting the student configuration overrides exists in the installed JupyterLab's schema with a value
    the schema allows (an unknown key or value is ignored silently), and the news pop-up is off."""
    overrides = json.loads((STUDENT_CONFIG / "labconfig" / "default_setting_overrides.json").read_text())
    schemas = Path(sys.prefix) / "share" / "jupyter" / "lab" / "schemas"
    for plugin, settings in overrides.items():
        package, _, name = plugin.partition(":")
        schema = json.loads((schemas / package / f"{name}.json").read_text())
        for key, value in settings.items():
            assert key in schema["properties"], f"{plugin} has no setting {key!r}"
            allowed = schema["properties"][key].get("enum")
            assert allowed is None or value in allowed, f"{plugin}: {key}={value!r} is not one of {allowed}"
    assert overrides["@jupyterlab/apputils-extension:notification"]["fetchNews"] == "false"
