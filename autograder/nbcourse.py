"""An nbgrader course folder as the grader sees it: its config, gradebook and release notebooks.

``make release`` (:mod:`autograder.release`) builds it; :mod:`autograder.grading`,
:mod:`autograder.gradebook` and :mod:`autograder.submissions` read it. It lives in
its own module so that those three do not import each other. Every path inside
the folder comes from :func:`course_path` (nbgrader's own
``CourseDirectory.format_path``, with the folder names of the course's
``nbgrader_config.py``); ``tests/unit/course/test_layout.py`` checks that nothing else spells them.
"""

from __future__ import annotations

import dataclasses
import functools
import os
from pathlib import Path

import nbformat


class GradingError(RuntimeError):
    """A problem with the course or the command line (not with a submission): the run stops before grading."""


#: The steps of nbgrader's layout (``CourseDirectory.<step>_directory``).
STEPS = ("source", "release", "submitted", "autograded", "feedback")


@functools.lru_cache(maxsize=8)
def _config(root: Path):
    """The nbgrader config of the course folder ``root`` (its ``nbgrader_config.py``, else the repository's)."""
    from traitlets.config import Config
    from traitlets.config.loader import PyFileConfigLoader

    for folder in (root, Path(__file__).parent):
        name = "nbgrader_config.py"
        if (folder / name).exists():
            try:
                return PyFileConfigLoader(name, path=str(folder)).load_config()
            except Exception:  # noqa: BLE001 (a config that needs nbgrader's get_config alone: folder names only)
                break
    return Config()


def course_path(root: Path, step: str, assignment: str, notebook: str | None = None, student: str = ".") -> Path:
    """Where nbgrader keeps ``step`` (one of :data:`STEPS`) of ``assignment`` in the course folder ``root``:
    ``root/release/ASSIGNMENT``, ``root/autograded/STUDENT/ASSIGNMENT``..., and with ``notebook``, the
    notebook's file there. Built by nbgrader's ``CourseDirectory.format_path`` from the course's config."""
    root = Path(root).resolve()
    coursedir = _coursedir(root)
    folder = _step_directory(root, step)
    path = Path(os.path.normpath(coursedir.format_path(folder, student, assignment)))
    return path / f"{notebook}.ipynb" if notebook is not None else path


def _coursedir(root: Path):
    from nbgrader.coursedir import CourseDirectory

    return CourseDirectory(config=_config(root), root=str(root))


def _step_directory(root: Path, step: str) -> str:
    """The folder name of ``step`` in the course's config (``CourseDirectory.<step>_directory``)."""
    if step not in STEPS:
        raise ValueError(f"step must be one of {', '.join(STEPS)}, not {step!r}")
    return getattr(_coursedir(Path(root).resolve()), f"{step}_directory")


@dataclasses.dataclass(frozen=True)
class Course:
    """An nbgrader course folder: its config, gradebook and release notebooks."""

    root: Path
    config: object
    db_url: str
    course_id: str
    notebooks: dict[str, list[str]]  # assignment -> notebook names, from the gradebook

    @classmethod
    def load(cls, root: Path, db_url: str | None = None) -> Course:
        """Read the course at ``root``: its ``nbgrader_config.py`` and the assignments of its gradebook, in the
        course's database or in ``db_url`` (another gradebook, e.g. PostgreSQL, that grading writes to)."""
        from nbgrader.api import Gradebook
        from traitlets.config import Config
        from traitlets.config.loader import PyFileConfigLoader

        root = Path(root).resolve()
        config = Config()
        if (root / "nbgrader_config.py").exists():
            config = PyFileConfigLoader("nbgrader_config.py", path=str(root)).load_config()
        db_url = db_url or config.CourseDirectory.get("db_url", "sqlite:///gradebook.db")
        if db_url.startswith("sqlite:///") and not db_url.startswith("sqlite:////"):
            db_url = f"sqlite:///{root / db_url[len('sqlite:///') :]}"
        course_id = config.CourseDirectory.get("course_id", "default_course")
        if not (root / "gradebook.db").exists() and db_url.endswith("/gradebook.db"):
            raise GradingError(f"{root} has no gradebook.db: build the course first (make release)")
        config.CourseDirectory.root = str(root)
        config.CourseDirectory.db_url = db_url
        notebooks = {}
        with Gradebook(db_url, course_id) as gb:
            for assignment in gb.assignments:
                notebooks[assignment.name] = sorted(nb.name for nb in assignment.notebooks)
        if not notebooks:
            raise GradingError(f"the gradebook of {root} has no assignment: run make release first")
        return cls(root=root, config=config, db_url=db_url, course_id=course_id, notebooks=notebooks)

    def path(self, step: str, assignment: str, notebook: str | None = None, student: str = ".") -> Path:
        """:func:`course_path` in this course."""
        return course_path(self.root, step, assignment, notebook, student)

    def folder(self, step: str) -> Path:
        """The folder of ``step`` (one of :data:`STEPS`): one folder per student, or per assignment."""
        return self.root / _step_directory(self.root, step)

    def release_path(self, assignment: str, notebook: str) -> Path:
        """The instructor's release notebook (what students received, with nbgrader's metadata)."""
        path = self.path("release", assignment, notebook)
        if not path.exists():
            raise GradingError(f"{path} is missing: run make release (nbgrader generate_assignment) first")
        return path

    def release(self, assignment: str, notebook: str) -> nbformat.NotebookNode:
        """The release notebook, read."""
        return nbformat.read(self.release_path(assignment, notebook), as_version=4)
