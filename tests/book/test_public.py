"""The public edition of the repository (``make public``, publish/public.py).

The tree holds exactly the allowlisted files and the generated ones, no line of any answer, hidden test, mutant or
model answer (and the same check does find them in a tree written without the allowlist), ``qkv`` installs from
it with pip, and its ``make book`` stages and builds the same student edition as this repository.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from course import assistants
from course import notebooks as nbs
from course.section import sections
from publish import build_book, colab, envfile, public
from publish.vendor import mathjax_dir
from qkv.data import mt, timemachine
from tests.support import once

ROOT = nbs.ROOT
MIN_NEEDLE = 16  # shorter lines (``return x``) are not distinctive
# What the tree may hold, written out here rather than read from publish/public.py, so that a change to the
# allowlist shows up as a failing test to review.
TOP_LEVEL = {
    ".ci",
    ".gitignore",
    public.MARKER,
    "AGENTS.md",
    "GEMINI.md",
    "LICENSE",
    "LICENSE-text.md",
    "Makefile",
    "README.md",
    "_config.yml",
    "_toc.yml",
    "benchmarks",
    "book",
    "constraints.txt",
    "course",
    "course.toml",
    "environment.yml",
    "lib",
    "notebooks",
    "publish",
    "pyproject.toml",
    "references.bib",
    "start",
    "student",
}
CODE = {
    ".ci": {"system-deps.sh"},
    "course": {"__init__.py", "assistants.py", "notebooks.py", "section.py", "student_notebook.py"},
    "benchmarks": {
        "results/mt_cpu.md",
        "results/lm_cpu.md",
        "results/vit_cpu.md",
        "results/decoder_lab_cpu.md",
        "results/attention_cost_cpu.csv",
        "results/attention_cost_cpu.png",
    },
    "publish": {"build_book.py", "colab.py", "execute.py", "poster.py", "vendor.py"},
    "student": {
        "README.md",
        "jupyter/jupyter_server_config.json",
        "jupyter/nbgrader_config.py",
        "jupyter/labconfig/default_setting_overrides.json",
        "jupyter/labconfig/page_config.json",
        "exchange/jupyter_server_config.json",
        "exchange/labconfig/page_config.json",
    },
}
COPIED_FOLDERS = ("book/", "lib/qkv/")  # every file git lists under these, unchanged


def _git_files(under: str) -> list[str]:
    out = subprocess.run(
        ["git", "-C", str(ROOT), "ls-files", "-z", "--cached", "--others", "--exclude-standard", "--", under],
        capture_output=True,
        check=True,
    ).stdout.decode()
    return sorted(name for name in out.split("\0") if name and (ROOT / name).is_file())


def _clean_env() -> dict[str, str]:
    """The environment for a process run inside the tree: it must import the tree's code, not this repository's."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONSTARTUP")}
    env.setdefault("QKV_DATA_DIR", str(ROOT.parent / "shared" / "data"))
    env["QKV_OFFLINE"] = "1"
    return env


@pytest.fixture(scope="module")
def tree() -> tuple[Path, list[str]]:
    """The public tree and its files, written once per content for every worker (``tests/support/once.py``), keyed
    by everything it is written from: the allowlisted files and ``publish/`` (its templates and generators). Tests
    read it; one that writes works on ``tree_copy``."""
    key = once.digest(*public.sources().values(), ROOT / "publish")

    def produce(folder: Path) -> None:
        files = public.write(folder / "tree")
        (folder / "files.json").write_text(json.dumps(files))

    folder = once.build_once("public-tree", key, produce)
    return folder / "tree", json.loads((folder / "files.json").read_text())


@pytest.fixture
def tree_copy(tree, tmp_path) -> Path:
    """A copy of the tree for a test that writes into it (a build, an install)."""
    copy = tmp_path / "tree"
    shutil.copytree(tree[0], copy, symlinks=True)
    return copy


# --- exactly the allowlisted files -------------------------------------------------------------------------------


def test_the_tree_holds_exactly_the_allowlisted_and_generated_files(tree):
    out, files = tree
    assert files == public.tree_files(out)
    assert {f.split("/")[0] for f in files} == TOP_LEVEL
    for folder, names in CODE.items():
        assert {f.removeprefix(f"{folder}/") for f in files if f.startswith(f"{folder}/")} == names, folder
    assert all(f.startswith("lib/qkv/") for f in files if f.startswith("lib/"))
    for folder in COPIED_FOLDERS:
        expected = _git_files(folder)
        assert expected, f"git lists nothing under {folder}"
        assert [f for f in files if f.startswith(folder)] == expected, f"{folder} differs from the repository's"
    written = ("notebooks", "README.md", "Makefile", "environment.yml", public.MARKER, *assistants.FILE_NAMES)
    copied = [f for f in files if f.split("/")[0] not in written]
    for rel in copied:
        assert (out / rel).read_bytes() == (ROOT / rel).read_bytes(), f"{rel} is not the repository's file"
    notebooks = {f for f in files if f.startswith("notebooks/")}
    pages = {p.relative_to(ROOT).with_suffix(".ipynb").as_posix() for p in colab.notebook_pages()}
    policy = {f"notebooks/{name}" for name in assistants.FILE_NAMES}
    assert notebooks == {"notebooks/README.md"} | policy | {f"notebooks/{page}" for page in pages}
    assert {f"book/{s.slug}.ipynb" for s in sections()} < pages  # the sections, and the chapter at a glance
    assert not [f for f in files if "__pycache__" in f or f.endswith(".pyc") or ".egg-info" in f]
    assert (out / ".ci" / "system-deps.sh").stat().st_mode & 0o111, "the bootstrap script must stay executable"
    assert (out / "start").stat().st_mode & 0o111, "Binder runs start only when it is executable"


def test_the_tree_and_its_colab_branch_carry_the_policy_for_coding_assistants_that_course_toml_chooses(tree):
    """At the root, which Binder, JupyterHub (nbgitpuller) and a student's clone open, and at the root of the Colab
    branch (``notebooks/``); the tree's own ``make notebooks`` reads the same course.toml, copied."""
    out, _ = tree
    text = assistants.render(assistants.chosen())
    for folder in (out, out / "notebooks"):
        for name in assistants.FILE_NAMES:
            assert (folder / name).read_text(encoding="utf-8") == text, folder / name
    assert assistants.chosen(out / "course.toml") == assistants.chosen()


def test_writing_again_replaces_the_tree_but_keeps_its_git_folder(tree, tree_copy):
    (tree_copy / "book" / "old-section.md").write_text("a section since removed")
    (tree_copy / "stale.txt").write_text("left by an earlier run")
    (tree_copy / ".git").mkdir()
    (tree_copy / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    files = public.write(tree_copy)
    assert "stale.txt" not in files and "book/old-section.md" not in files
    assert not (tree_copy / "stale.txt").exists() and not (tree_copy / "book" / "old-section.md").exists()
    assert (tree_copy / ".git" / "HEAD").read_text() == "ref: refs/heads/main\n", "the clone's .git must survive"
    assert ".git/HEAD" not in files
    # The same sources give the same bytes (cell ids included), so a commit of the public tree shows only real changes.
    assert files == tree[1]
    changed = [rel for rel in files if (tree_copy / rel).read_bytes() != (tree[0] / rel).read_bytes()]
    assert not changed, f"writing the tree again changed {changed}"


@pytest.mark.parametrize(
    "where, says",
    [
        (lambda tmp: ROOT, "would replace the repository itself"),
        (lambda tmp: ROOT.parent, "would replace the repository itself"),
        (lambda tmp: ROOT / "book", "inside the repository but not under _build/"),
        (lambda tmp: ROOT / "_build", "did not write"),
        (lambda tmp: tmp / "notes", "did not write"),
    ],
)
def test_the_tree_never_replaces_a_folder_it_did_not_write(tmp_path, where, says):
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "todo.txt").write_text("mine")
    with pytest.raises(public.PublicTreeError, match=re.escape(says)):
        public.write(where(tmp_path))
    assert (tmp_path / "notes" / "todo.txt").read_text() == "mine"


def _repo_with_links(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    for rel in ("book/page.md", "solutions/answers.py", "lib/qkv/__init__.py"):
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(f"# {rel}\n")
    (tmp_path / "outside.txt").write_text("not the course's")
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    return repo


@pytest.mark.parametrize(
    "link, target, says",
    [
        ("book/outside.md", "../../outside.txt", "outside the repository"),
        ("book/answers.md", "../solutions/answers.py", "not on the public allowlist"),
        ("book/solutions", "../solutions", "not a file"),
    ],
)
def test_a_link_out_of_the_allowlist_stops_the_tree(tmp_path, link, target, says):
    repo = _repo_with_links(tmp_path)
    (repo / link).symlink_to(target)
    with pytest.raises(public.PublicTreeError, match=re.escape(says)):
        public.sources(repo)


def test_a_link_to_an_allowlisted_file_is_copied_as_that_file(tmp_path):
    repo = _repo_with_links(tmp_path)
    (repo / "book" / "alias.md").symlink_to("page.md")
    found = public.sources(repo)
    assert found["book/alias.md"] == (repo / "book" / "page.md").resolve()
    assert "solutions/answers.py" not in found and set(found) == {
        "book/alias.md",
        "book/page.md",
        "lib/qkv/__init__.py",
    }


# --- no answer leaks ---------------------------------------------------------------------------------------------


def _normal(text: str) -> str:
    return " ".join(text.split())


def _readable(path: Path) -> str:
    """What a reader gets from a file: a notebook's cell sources and outputs, any other file's text."""
    text = path.read_text(encoding="utf-8", errors="replace")
    if path.suffix == ".ipynb":
        parts = []
        for cell in json.loads(text).get("cells", []):
            parts.append("".join(cell.get("source", [])))
            for output in cell.get("outputs", []):
                parts.append("".join(output.get("text", [])))
                parts += ["".join(v) if isinstance(v, list) else str(v) for v in output.get("data", {}).values()]
        text = "\n".join(parts)
    return _normal(text)


def _secret_files() -> dict[str, Path]:
    """Every answer, hidden test, mutant and model answer, by what it is and where."""
    found = {}
    for rel in _git_files("solutions/") + _git_files("autograder/sections/") + _git_files("autograder/mutants/"):
        if rel.endswith(".py") or rel.endswith(".toml"):
            kind = (
                "solution"
                if rel.startswith("solutions/")
                else "mutant"
                if "mutants" in rel
                else "model answer"
                if rel.endswith("rubric.toml")
                else "hidden test"
            )
            found[f"{kind} {rel}"] = ROOT / rel
    return found


def _needles(text: str, public_text: str) -> set[str]:
    """Distinctive lines of ``text`` (and their code without a trailing comment) that the public sources lack."""
    out = set()
    for line in text.splitlines():
        for candidate in {_normal(line), _normal(line.split("  #", 1)[0])}:
            if len(candidate) >= MIN_NEEDLE and re.search(r"[A-Za-z_]{3}", candidate) and candidate not in public_text:
                out.add(candidate)
    return out


@pytest.fixture(scope="module")
def secrets() -> dict[str, set[str]]:
    """The needles of every secret file. Lines that the student text or ``qkv`` also hold are public by design
    (an answer may name a ``qkv`` component, and the reference is there for students to read), so they are left out."""
    public_text = _normal(
        "\n".join((ROOT / rel).read_text(encoding="utf-8") for f in COPIED_FOLDERS for rel in _git_files(f))
    )
    needles = {what: _needles(path.read_text(encoding="utf-8"), public_text) for what, path in _secret_files().items()}
    kinds = {what.split(" ")[0] for what in needles}
    assert {"solution", "hidden", "mutant"} <= kinds, f"no secret files found: {sorted(needles)}"
    vacuous = [what for what, found in needles.items() if not found and Path(what.split(" ")[-1]).stem != "__init__"]
    assert not vacuous, f"nothing distinctive to look for (every line is short or public): {vacuous}"
    return needles


def _leaks(out: Path, files: list[str], secrets: dict[str, set[str]]) -> dict[str, list[str]]:
    """``what -> ["needle in file", ...]`` for every secret found in the tree's files."""
    texts = {rel: _readable(out / rel) for rel in files}
    everything = "\n".join(texts.values())
    leaks: dict[str, list[str]] = {}
    for what, needles in secrets.items():
        for needle in sorted(needles):
            if needle in everything:
                where = [rel for rel, text in texts.items() if needle in text]
                leaks.setdefault(what, []).append(f"{needle!r} in {', '.join(where)}")
    return leaks


def test_no_answer_hidden_test_or_mutant_line_is_in_the_tree(tree, secrets):
    out, files = tree
    leaks = _leaks(out, files, secrets)
    listed = [f"{what}: {hit}" for what, hits in leaks.items() for hit in hits]
    assert not leaks, "private text in the public tree:\n  " + "\n  ".join(listed[:30])


def test_the_leak_check_finds_every_secret_in_a_tree_written_without_the_allowlist(tmp_path, secrets):
    out = tmp_path / "everything"
    files = public.write(out, allow=None)
    assert "solutions/" in "\n".join(files) and "autograder/" in "\n".join(files)
    leaks = _leaks(out, files, secrets)
    missed = sorted(what for what, needles in secrets.items() if needles and what not in leaks)
    assert not missed, f"the check did not find these files' lines in a tree that holds them: {missed}"


# --- pip install -------------------------------------------------------------------------------------------------


def test_pip_installs_qkv_from_the_tree(tree_copy, tmp_path):
    target = tmp_path / "site"
    pip = [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation", "--no-index"]
    result = subprocess.run([*pip, "--target", str(target), str(tree_copy)], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    installed = sorted(p.relative_to(target).as_posix() for p in (target / "qkv").rglob("*.py"))
    assert installed == sorted(f.removeprefix("lib/") for f in _git_files("lib/qkv/") if f.endswith(".py"))
    metadata = next(target.glob("qkv-*.dist-info")) / "METADATA"
    assert (tree_copy / "README.md").read_text().splitlines()[0] in metadata.read_text(), "README is the description"
    probe = "import qkv, qkv.attention, qkv.data; print(qkv.__file__)"
    env = {**_clean_env(), "PYTHONPATH": str(target)}
    imported = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert imported.returncode == 0, imported.stderr
    assert Path(imported.stdout.strip()).is_relative_to(target), f"imported another qkv: {imported.stdout}"


# --- make book in the tree ---------------------------------------------------------------------------------------


def _makefile_rule(text: str, target: str) -> str:
    """A rule of a Makefile, its line and its recipe."""
    match = re.search(rf"^{re.escape(target)}:.*\n(?:\t.*\n)*", text, re.M)
    assert match, f"no rule {target} in the Makefile"
    return match.group(0)


def test_the_public_makefile_bootstraps_as_the_main_one_and_builds_the_student_edition(tree):
    out, _ = tree
    ours, theirs = (ROOT / "Makefile").read_text(), (out / "Makefile").read_text()
    # the same bootstrap, with the student's extra where the course's repository installs every one (.[dev])
    assert _makefile_rule(theirs, "$(STAMP)") == _makefile_rule(ours, "$(STAMP)").replace("'.[dev]'", "'.[course]'")
    assert "-e '.[course]'" in theirs
    assert (out / "environment.yml").read_text() == envfile.render(envfile.PUBLIC_PIP_LINES)
    for variable in ("PYTHON", "VENV", "BIN", "STAMP"):
        line = re.search(rf"^{variable} .*$", ours, re.M).group(0)
        assert line in theirs.splitlines(), f"the public Makefile's {variable} differs: {line}"
    for named in re.findall(r"[\w./-]+\.(?:sh|toml|txt)", theirs):
        assert (out / named).is_file(), f"the public Makefile names {named}, which the tree lacks"
    dry = subprocess.run(["make", "-n", "-C", str(out), "book", "notebooks"], capture_output=True, text=True)
    assert dry.returncode == 0, dry.stderr
    assert ".venv/bin/python -m publish.build_book --edition student" in dry.stdout
    assert ".venv/bin/python -m publish.colab" in dry.stdout
    assert "solutions" not in theirs and "release" not in theirs and "grade" not in theirs


def _run_in(tree: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(list(args), cwd=tree, env=_clean_env(), capture_output=True, text=True)


def _vendor(tree: Path) -> None:
    """The tree's MathJax, taken from this repository's copy instead of the npm registry."""
    dest = tree / "_build" / "vendor" / mathjax_dir().name
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.symlink_to(mathjax_dir(), target_is_directory=True)


def _files(folder: Path) -> dict[str, bytes]:
    return {
        p.relative_to(folder).as_posix(): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and not p.relative_to(folder).as_posix().startswith("_vendor/")
    }


def test_the_tree_stages_the_same_student_edition_with_its_own_code(tree_copy, tmp_path):
    _vendor(tree_copy)
    script = (
        "import importlib.util, sys; from pathlib import Path; from publish import build_book; "
        "assert Path(build_book.__file__).is_relative_to(Path.cwd()), build_book.__file__; "
        "assert importlib.util.find_spec('autograder') is None, 'the tree imports the instructors autograder'; "
        "build_book.stage('student', Path(sys.argv[1]))"
    )
    staged = _run_in(tree_copy, sys.executable, "-c", script, str(tmp_path / "from-tree"))
    assert staged.returncode == 0, staged.stderr
    build_book.stage("student", tmp_path / "from-repository")
    ours, theirs = _files(tmp_path / "from-repository"), _files(tmp_path / "from-tree")
    assert sorted(theirs) == sorted(ours), "the tree stages other files than the repository"
    differ = [rel for rel in ours if ours[rel] != theirs[rel]]
    assert not differ, f"the tree stages other text in {differ}"
    assert (tmp_path / "from-tree" / "_vendor" / "mathjax" / "tex-chtml-full.js").is_file()


def test_the_solutions_edition_needs_the_instructors_repository(tree_copy):
    result = _run_in(tree_copy, sys.executable, "-m", "publish.build_book", "--edition", "solutions")
    assert result.returncode != 0
    assert "the solutions edition needs the instructors' repository" in result.stderr
    assert "Traceback" not in result.stderr
    assert not (tree_copy / "_build").exists(), "it must stop before staging anything"


def _page_text(path: Path) -> str:
    return _normal(re.sub(r"<[^>]+>", "", path.read_text(encoding="utf-8")))


@pytest.mark.slow
def test_make_book_in_the_tree_builds_the_same_student_edition(tree_copy):
    """The tree's own ``make book`` (its Makefile, staging, configuration and extension) builds the book. It starts
    from a copy of this repository's student build, so that Jupyter Book finds every notebook in its execution
    cache (a cold build executes them all, minutes on 2 cores); the HTML it writes must read as this repository's."""
    from tests.support import browser

    try:
        html = browser.built_book("student")  # this repository's student edition, built if out of date
    except SystemExit as err:
        pytest.fail(f"this repository's student edition did not build: {err}", pytrace=False)
    ours = html.parent.parent  # _build/student (_build/smoke/student in the test suite's smoke runs)
    with browser.book_lock("student"):  # no other worker rebuilds it while it is copied
        shutil.copytree(ours, tree_copy / ours.relative_to(ROOT), symlinks=True)
    _vendor(tree_copy)
    venv = Path(sys.executable).parent.parent
    make = ["make", "-C", str(tree_copy), f"VENV={venv}", "-o", f"{venv}/.installed", "book"]
    result = _run_in(tree_copy, *make)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "[book] student edition: 0 source file(s) changed" in result.stdout, "the tree staged other text"
    log = result.stdout + result.stderr
    assert "Executing notebook" not in log, "a notebook ran: the tree's sources are not the repository's"
    notebooks = [name for name in nbs.toc_files() if nbs.is_notebook_source(ROOT / f"{name}.md")]
    assert log.count("Using cached notebook") == len(notebooks), "every notebook comes from the execution cache"
    theirs = tree_copy / ours.relative_to(ROOT) / "_build" / "html"
    pages = sorted(p.relative_to(html).as_posix() for p in html.rglob("*.html"))
    assert sorted(p.relative_to(theirs).as_posix() for p in theirs.rglob("*.html")) == pages
    for page in pages:
        assert _page_text(theirs / page) == _page_text(html / page), f"{page} reads differently from the tree"


# --- the README --------------------------------------------------------------------------------------------------


def test_the_readme_is_for_students_and_names_only_what_the_tree_holds(tree):
    out, _ = tree
    text = (out / "README.md").read_text()
    assert "{{" not in text and "}}" not in text
    for private in ("solutions/", "autograder", "make release", "make grade", "hidden test", "instructor"):
        assert private not in text.lower(), f"the public README mentions {private!r}"
    # Paths that are not the tree's: what make writes, places on the reader's machine, the data files (which the
    # loaders look for in data folders), and placeholders.
    data_files = {mt.FRA_ENG.relpath, timemachine.TIME_MACHINE.relpath}
    elsewhere = ("_build/", ".venv/", "~/", "/usr/")
    named = [
        token
        for token in re.findall(r"`([^`\s]+)`", text)
        if re.search(r"/|\w\.(?:md|yml|toml|txt|sh|ipynb|py|bib)$", token)
        and not token.startswith(elsewhere)
        and "<" not in token
        and token not in data_files
    ]
    assert data_files <= set(re.findall(r"`([^`\s]+)`", text)), "the README's data table names the loaders' files"
    assert "constraints.txt" in named and "environment.yml" in named
    missing = [token for token in named if not (out / token.rstrip("/")).exists()]
    assert not missing, f"the README names paths the tree lacks: {missing}"
    url, branch, colab_branch = colab.repository()
    assert f"git clone {url}" in text and f"git+{url}@{branch}" in text and f"`{colab_branch}` branch" in text
    for section in sections():
        assert f"`notebooks/book/{section.slug}.ipynb`" in text, f"the README's table lacks {section.slug}"


def test_placeholder_addresses_in_the_configuration_are_reported():
    config = {
        "repository": {"url": "https://github.com/someone/course"},
        "launch_buttons": {"jupyterhub_url": "https://jupyterhub.example.edu", "binderhub_url": "https://mybinder.org"},
    }
    warnings = public.config_warnings(config)
    assert len(warnings) == 1 and "launch_buttons.jupyterhub_url" in warnings[0]
    config["launch_buttons"]["jupyterhub_url"] = "https://hub.university.edu"
    assert public.config_warnings(config) == []


def test_allowlisted_files_that_differ_from_the_last_commit_are_reported(tmp_path):
    repo = _repo_with_links(tmp_path)
    assert public.uncommitted(repo) == ["book/page.md", "lib/qkv/__init__.py"]  # new; solutions/ is not public
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.org"]
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "first"], check=True)
    assert public.uncommitted(repo) == []
    (repo / "book" / "page.md").write_text("edited")
    (repo / "solutions" / "answers.py").write_text("edited")
    assert public.uncommitted(repo) == ["book/page.md"]


# --- the licences ------------------------------------------------------------------------------------------------


def test_the_licences_say_what_applies_to_what_and_credit_d2l(tree):
    """MIT for the code (as pyproject.toml says), CC BY-SA 4.0 for the text and figures, D2L credited: in the
    licence files, both READMEs and the book's footer on every page (_config.yml, html.extra_footer)."""
    out, files = tree
    assert {"LICENSE", "LICENSE-text.md"} <= set(files)
    code = (out / "LICENSE").read_text()
    assert code.startswith("MIT License") and "Permission is hereby granted, free of charge" in code
    assert 'license = "MIT"' in (out / "pyproject.toml").read_text()
    assert "LICENSE-text.md" in code and "CC BY-SA 4.0" in code, "the MIT file says where the text's licence is"
    text = " ".join((out / "LICENSE-text.md").read_text().split())
    for needed in (
        "Attribution-ShareAlike 4.0 International",
        "https://creativecommons.org/licenses/by-sa/4.0/legalcode",
        "Aston Zhang, Zachary C. Lipton, Mu Li and Alexander J. Smola",
        "https://d2l.ai",
        "Section 1 -- Definitions.",
        "Section 8 -- Interpretation.",
        "Creative Commons may be contacted at creativecommons.org.",
    ):
        assert needed in text, f"LICENSE-text.md lacks {needed!r}"
    for readme in (out / "README.md", ROOT / "README.md"):
        words = " ".join(readme.read_text().split())
        assert "`LICENSE`" in words and "`LICENSE-text.md`" in words and "CC BY-SA 4.0" in words, readme
        assert "MIT" in words and "d2l.ai" in words, readme
    footer = yaml.safe_load((out / "_config.yml").read_text())["html"]["extra_footer"]
    assert "CC BY-SA 4.0" in footer and "MIT" in footer and "https://d2l.ai" in footer and "Smola" in footer
