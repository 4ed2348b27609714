"""An nbgrader course folder as the grader sees it: its config, gradebook and release notebooks.

``make release`` (:mod:`autograder.release`) builds it; :mod:`autograder.grade`,
:mod:`autograder.gradebook` and :mod:`autograder.submissions` read it. It lives in
its own module so that those three do not import each other.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import nbformat


class GradingError(RuntimeError):
    """A problem with the course or the command line (not with a submission): the run stops before grading."""


@dataclasses.dataclass
class Course:
    """An nbgrader course folder: its config, gradebook and release notebooks."""

    root: Path
    config: object
    db_url: str
    course_id: str
    notebooks: dict[str, list[str]]  # assignment -> notebook names, from the gradebook
    tampered: str = "zero"  # what a notebook with edited locked cells gets: "zero", or "keep" its answers' score

    @classmethod
    def load(cls, root: Path) -> Course:
        """Read the course at ``root``: its ``nbgrader_config.py`` and the assignments of its gradebook."""
        from nbgrader.api import Gradebook
        from traitlets.config import Config
        from traitlets.config.loader import PyFileConfigLoader

        root = Path(root).resolve()
        config = Config()
        if (root / "nbgrader_config.py").exists():
            config = PyFileConfigLoader("nbgrader_config.py", path=str(root)).load_config()
        db_url = config.CourseDirectory.get("db_url", "sqlite:///gradebook.db")
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
        return cls(root, config, db_url, course_id, notebooks)

    def release_path(self, assignment: str, notebook: str) -> Path:
        """The instructor's release notebook (what students received, with nbgrader's metadata)."""
        path = self.root / "release" / assignment / f"{notebook}.ipynb"
        if not path.exists():
            raise GradingError(f"{path} is missing: run make release (nbgrader generate_assignment) first")
        return path

    def release(self, assignment: str, notebook: str) -> nbformat.NotebookNode:
        """The release notebook, read."""
        return nbformat.read(self.release_path(assignment, notebook), as_version=4)
