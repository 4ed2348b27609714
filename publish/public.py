"""The public edition of the repository: ``python -m publish.public [--out DIR]`` (``make public``).

Everything a reader or a student reaches comes from the repository that ``_config.yml`` names: the book's
repository button, Binder (which builds it), the JupyterHub button (nbgitpuller pulls it into each student's
home) and the Colab notebooks' install cell (``pip install qkv @ git+...``). This repository also holds the
answers (``solutions/``), the hidden tests, the mutants and the model answers (``autograder/``), so it must stay
private, and the public repository is written from it by this module: ``DIR`` (default ``_build/public``) receives

* the files of :data:`ALLOW`, and nothing else: an **allowlist**, so that a new file outside its folders stays
  private until someone adds it here. A folder entry (``book/``) takes every file under it that git tracks, or that
  is new and not ignored (``git ls-files``); caches and build output never travel;
* :data:`GENERATED` files: a README for readers and students and a Makefile whose ``make book`` builds the student
  edition (templates in ``publish/public/``), the Colab notebooks (``make notebooks``) under ``notebooks/``, the
  policy for coding assistants that course.toml chooses (``AGENTS.md``, :mod:`course.assistants`), and the
  marker file that lets the next run replace the folder.

Every run replaces ``DIR`` completely (no stale file survives) except a ``.git`` in it, so ``DIR`` can be a clone
of the public repository: ``make public``, then commit and push there. A symbolic link is copied as the file it
names only when that file is inside the repository and allowlisted itself; any other link stops the run.
``tests/book/test_public.py`` checks the tree: exactly these paths, no line of any answer, ``pip install`` works, and
the book stages the same student edition from it.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
from pathlib import Path
from urllib.parse import urlsplit

import yaml

from course import assistants
from course import notebooks as nbs
from course.section import sections
from publish import colab, envfile

ROOT = nbs.ROOT
OUT = ROOT / "_build" / "public"
TEMPLATES = Path(__file__).resolve().parent / "public"
MARKER = ".public-edition"

#: What the public tree copies from this repository. An entry ending in ``/`` is a folder: every file under it.
ALLOW: dict[str, str] = {
    "book/": "the student text: one notebook per section, book/_assets (the CSS), book/_ext (Sphinx extensions)",
    "lib/qkv/": "the course library qkv",
    "_config.yml": "the book's configuration",
    "_toc.yml": "the book's table of contents",
    "references.bib": "the book's bibliography",
    "pyproject.toml": "the package qkv and its extras (a student's: pip install -e '.[course]')",
    "LICENSE": "the MIT licence of the code",
    "LICENSE-text.md": "the CC BY-SA 4.0 licence of the text and figures, with the credit to D2L",
    "constraints.txt": "the pinned environment",
    ".ci/system-deps.sh": "the Debian packages that the Makefile's bootstrap checks",
    ".gitignore": "what git leaves out: .venv, _build, caches",
    "course/__init__.py": "make book and make notebooks: the package course",
    "course/notebooks.py": "make book and make notebooks: reading the MyST notebooks",
    "course/section.py": "make book and make notebooks: the sections of _toc.yml",
    "course/student_notebook.py": "make book and make notebooks: the student's notebook, the same from every door",
    "course/assistants.py": "make notebooks: the policies for coding assistants (AGENTS.md); course.toml picks one",
    "course.toml": "the course's configuration: which policy for coding assistants make notebooks writes",
    "publish/build_book.py": "make book (the student edition; the solutions edition needs this repository)",
    "publish/vendor.py": "make book: MathJax, so the book reads offline",
    "publish/poster.py": "make book: the chapter-at-a-glance poster (A3 PDF and PNG)",
    "publish/execute.py": "make book: the notebooks executed side by side into Jupyter Book's cache",
    "publish/colab.py": "make notebooks: the notebooks for Colab",
    "benchmarks/results/mt_cpu.md": "the translators' training runs that 11.4 and 11.7 quote",
    "benchmarks/results/lm_cpu.md": "the language models' training runs that 11.9 quotes",
    "benchmarks/results/vit_cpu.md": "the ViT's tuning and training runs that 11.8 quotes and asks about",
    "benchmarks/results/decoder_lab_cpu.md": "the decoder lab's two models, trained cold: perplexities, CPU time",
    "benchmarks/results/attention_cost_cpu.csv": "the attention-cost lab's committed sweep (costlab.show_results)",
    "benchmarks/results/attention_cost_cpu.png": "its plot",
    "student/": "JupyterLab as students get it: nbgrader's instructor tools off, .md opens as a notebook (make lab)",
    "start": "Binder's start script: JupyterLab with student/jupyter's configuration",
}

#: What the public tree holds that is written, not copied.
GENERATED: dict[str, str] = {
    "README.md": "for readers and students, from publish/public/README.md",
    "Makefile": "make book (the student edition) and make notebooks, from publish/public/Makefile",
    "environment.yml": "the same environment for conda and Binder, with the student's extra (publish.envfile)",
    "notebooks/": "the Colab notebooks (publish.colab): the contents of the Colab branch, its AGENTS.md included",
    **{
        name: "the policy for coding assistants that course.toml chooses (course.assistants), for the folder that "
        "Binder, JupyterHub and a student's clone open"
        for name in assistants.FILE_NAMES
    },
    MARKER: "says that make public wrote this folder, so that the next run may replace it",
}

_MARKER_TEXT = (
    "This folder is the public edition of the course, written by `make public` (publish/public.py) in the\n"
    "course's private repository. Every run replaces all of it except .git: edit the sources there, not here.\n"
)


class PublicTreeError(RuntimeError):
    """The public tree cannot be written as asked; the message says what was wrong and what to do."""


def allowed(rel: str, allow=ALLOW) -> bool:
    """Whether the repository path ``rel`` (POSIX, relative) is on the allowlist ``allow`` (``None``: everything)."""
    if allow is None:
        return True
    return any(rel == entry or (entry.endswith("/") and rel.startswith(entry)) for entry in allow)


def repository_files(root: Path = ROOT) -> list[str]:
    """Every file of the repository that git tracks, or that is new and not ignored, as sorted POSIX paths."""
    try:
        listed = subprocess.run(
            ["git", "-C", str(root), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            capture_output=True,
            check=True,
        ).stdout
    except (OSError, subprocess.CalledProcessError) as err:
        detail = getattr(err, "stderr", b"") or b""
        raise PublicTreeError(
            f"could not list the files of {root} with git ({err}{': ' + detail.decode().strip() if detail else ''}). "
            "make public reads the list of files from git, so run it in a git checkout of the course with git on PATH."
        ) from err
    names = sorted({name for name in listed.decode("utf-8").split("\0") if name})
    # A tracked file deleted from the working tree, or a submodule's folder, is not a file to copy.
    return [name for name in names if (root / name).is_symlink() or (root / name).is_file()]


def source(rel: str, root: Path = ROOT, allow=ALLOW) -> Path:
    """The file to copy for the repository path ``rel``: itself, or for a symbolic link the file it names, which
    must lie inside the repository and be allowlisted itself. Anything else raises :class:`PublicTreeError`."""
    real_root = root.resolve()
    path = root / rel
    if path.parent.resolve() != real_root / Path(rel).parent:
        raise PublicTreeError(
            f"{rel}: a folder on its path is a symbolic link (to {path.parent.resolve()}). The public tree follows no "
            "linked folder; replace the link with the folder itself."
        )
    if not path.is_symlink():
        return path
    target = path.resolve()
    if not target.is_relative_to(real_root):
        raise PublicTreeError(
            f"{rel} is a symbolic link to {target}, outside the repository: the public tree never follows a link out "
            "of it. Replace the link with the file itself, or delete it."
        )
    target_rel = target.relative_to(real_root).as_posix()
    if not target.is_file():
        raise PublicTreeError(f"{rel} is a symbolic link to {target_rel}, which is not a file: replace it with a file.")
    if not allowed(target_rel, allow):
        raise PublicTreeError(
            f"{rel} is a symbolic link to {target_rel}, which is not on the public allowlist: the link would publish "
            "a private file. Delete the link, or add its target to ALLOW in publish/public.py if it is public."
        )
    return target


def sources(root: Path = ROOT, allow=ALLOW) -> dict[str, Path]:
    """What the public tree copies: its path in the tree -> the file to copy (see :func:`source`)."""
    return {rel: source(rel, root, allow) for rel in repository_files(root) if allowed(rel, allow)}


# ---------------------------------------------------------------- generated files


def _config(root: Path = ROOT) -> dict:
    return yaml.safe_load((root / "_config.yml").read_text(encoding="utf-8"))


def _section_rows() -> str:
    rows = []
    for section in sections():
        title = next(
            (
                line.removeprefix("# ").strip()
                for cell in section.read().cells
                if cell.cell_type == "markdown"
                for line in cell.source.splitlines()
                if line.startswith("# ")
            ),
            section.slug,
        )
        text = section.path.relative_to(ROOT).as_posix()
        notebook = f"notebooks/{Path(text).with_suffix('.ipynb').as_posix()}"
        rows.append(f"| {title} | `{text}` | `{notebook}` |")
    return "\n".join(rows)


def render(template: str, values: dict[str, str]) -> str:
    """``template`` with every ``{{ name }}`` replaced by ``values[name]``; an unknown name is an error."""

    def value(match: re.Match) -> str:
        name = match.group(1)
        if name not in values:
            raise PublicTreeError(f"the template uses {{{{ {name} }}}}, which publish/public.py does not define")
        return values[name]

    return re.sub(r"\{\{\s*(\w+)\s*\}\}", value, template)


def readme_values() -> dict[str, str]:
    """What the README template names: the book's title, the public repository, its branches, the sections."""
    config = _config()
    url, branch, colab_branch = colab.repository()
    return {
        "title": config["title"],
        "repository_url": url,
        "repository_name": Path(urlsplit(url).path).name.removesuffix(".git") or "the-repository",
        "branch": branch,
        "colab_branch": colab_branch,
        "sections": _section_rows(),
    }


def uncommitted(root: Path = ROOT, allow=ALLOW) -> list[str]:
    """Allowlisted files that differ from the last commit (changed, new or deleted): the public tree is a snapshot
    of the working tree, and a published one should match a commit of this repository."""
    status = subprocess.run(
        [
            "git",
            "-C",
            str(root),
            "status",
            "--porcelain",
            "-z",
            "--untracked-files=all",
            "--",
            *(entry.rstrip("/") for entry in allow),
        ],
        capture_output=True,
        text=True,
    )
    return sorted({entry[3:] for entry in status.stdout.split("\0") if len(entry) > 3 and entry[2] == " "})


def config_warnings(config: dict | None = None) -> list[str]:
    """Addresses in ``_config.yml`` that still look like placeholders (README, "Publishing")."""
    config = config or _config()
    launch = config.get("launch_buttons", {})
    named = {
        "repository.url": config.get("repository", {}).get("url", ""),
        "launch_buttons.jupyterhub_url": launch.get("jupyterhub_url", ""),
        "launch_buttons.binderhub_url": launch.get("binderhub_url", ""),
    }
    out = []
    for key, url in named.items():
        host = urlsplit(url or "").hostname or ""
        if not host or host == "example.com" or host.endswith((".example", ".invalid")) or "example." in host:
            out.append(f"_config.yml's {key} ({url or 'empty'}) looks like a placeholder: set it before publishing")
    return out


# ---------------------------------------------------------------- writing the tree


def _check_out(out: Path, root: Path = ROOT) -> Path:
    """``out``, resolved, if the public tree may be written there (and whatever it holds replaced)."""
    out = out.resolve()
    real_root = root.resolve()
    if real_root.is_relative_to(out):
        raise PublicTreeError(f"--out {out} would replace the repository itself: choose a new folder, e.g. {OUT}")
    if out.is_relative_to(real_root) and not out.is_relative_to(real_root / "_build"):
        raise PublicTreeError(
            f"--out {out} is inside the repository but not under _build/: the public tree goes under _build/ "
            f"(default {OUT.relative_to(ROOT)}) or outside the repository, never over its sources"
        )
    if out.exists() and not out.is_dir():
        raise PublicTreeError(f"--out {out} is a file, not a folder: choose a folder")
    if out.is_dir():
        held = [p.name for p in out.iterdir() if p.name != ".git"]
        if held and not (out / MARKER).is_file():
            raise PublicTreeError(
                f"--out {out} holds files that make public did not write (it has no {MARKER}), and writing the "
                "public tree replaces everything in it: choose a new or empty folder (a clone holding only .git is "
                "fine), or empty this one yourself"
            )
    return out


def write(out: Path = OUT, allow=ALLOW) -> list[str]:
    """Write the public tree to ``out``, replacing what it held (except ``.git``); return its files, sorted.

    ``allow=None`` copies every file the repository holds (as git lists them) instead of the allowlist: only the
    tests use it, to prove that their check for answers finds what the allowlist keeps out.
    """
    out = _check_out(out)
    policy = assistants.chosen()  # before anything is written: a bad course.toml stops the run
    copies = sources(ROOT, allow)
    partial = out.with_name(f".{out.name}.partial")
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    try:
        for rel, src in copies.items():
            dest = partial / rel
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest)
        values = readme_values()
        (partial / "README.md").write_text(
            render((TEMPLATES / "README.md").read_text(encoding="utf-8"), values), encoding="utf-8"
        )
        shutil.copy2(TEMPLATES / "Makefile", partial / "Makefile")
        (partial / "environment.yml").write_text(envfile.render(envfile.PUBLIC_PIP_LINES), encoding="utf-8")
        colab.write(partial / "notebooks")
        assistants.write(partial, policy)
        (partial / MARKER).write_text(_MARKER_TEXT, encoding="utf-8")
        out.mkdir(parents=True, exist_ok=True)
        for old in out.iterdir():
            if old.name == ".git":
                continue
            if old.is_dir() and not old.is_symlink():
                shutil.rmtree(old)
            else:
                old.unlink()
        for new in partial.iterdir():
            os.replace(new, out / new.name)
    finally:
        shutil.rmtree(partial, ignore_errors=True)
    return tree_files(out)


def tree_files(out: Path) -> list[str]:
    """The files of a written tree, as sorted POSIX paths (without ``.git``)."""
    return sorted(
        p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file() and ".git" not in p.relative_to(out).parts
    )


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(prog="python -m publish.public", description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT, help=f"where to write (default: {OUT.relative_to(ROOT)})")
    args = parser.parse_args(argv)
    try:
        files = write(args.out)
    except (PublicTreeError, assistants.PolicyError) as err:
        raise SystemExit(f"[public] {err}") from None
    out = args.out.resolve()
    size = sum((out / f).stat().st_size for f in files)
    print(f"[public] {len(files)} files ({size / 1e6:.1f} MB) in {out}")
    for warning in config_warnings():
        print(f"[public] warning: {warning}")
    changed = uncommitted()
    if changed:
        print(
            f"[public] note: {len(changed)} file(s) differ from the last commit ({', '.join(changed[:5])}"
            f"{', ...' if len(changed) > 5 else ''}): commit them before publishing"
        )
    url, _, colab_branch = colab.repository()
    print(
        f"[public] push it as {url} (README.md, Publishing), and its notebooks/ folder as the branch {colab_branch!r}"
    )


if __name__ == "__main__":
    main()
