"""nbgrader configuration of the course (copied into the generated course folder, _build/course/)."""

c = get_config()  # noqa: F821 (provided by nbgrader when it loads this file)

c.CourseDirectory.course_id = "qkv-attention"
# One assignment per section; the notebook has the section's slug for its name.
c.CourseDirectory.source_directory = "source"
c.CourseDirectory.release_directory = "release"
c.CourseDirectory.submitted_directory = "submitted"
c.CourseDirectory.autograded_directory = "autograded"
c.CourseDirectory.feedback_directory = "feedback"
c.CourseDirectory.db_url = "sqlite:///gradebook.db"

# Stubs and hidden tests use nbgrader's own markers and stub text, exactly as book/ writes them.
c.ClearSolutions.code_stub = {"python": "# YOUR CODE HERE\nraise NotImplementedError()"}
c.ClearSolutions.text_stub = "YOUR ANSWER HERE"
c.ClearHiddenTests.begin_test_delimeter = "BEGIN HIDDEN TESTS"
c.ClearHiddenTests.end_test_delimeter = "END HIDDEN TESTS"

# The released notebooks carry no outputs; student notebooks run with a generous limit per cell.
c.ClearOutput.enabled = True
c.ExecutePreprocessor.timeout = 300
c.Execute.timeout = 300

# Feedback shows what every test reported (a failed check's message and hint) but not the hidden tests' code, so the
# tests can grade another class next term. nbgrader's default shows the code: drop ClearHiddenTests below for that.
from nbconvert.preprocessors import CSSHTMLHeaderPreprocessor  # noqa: E402
from nbgrader.preprocessors import ClearHiddenTests, GetGrades, NbGraderPreprocessor  # noqa: E402


class ClearModelAnswers(NbGraderPreprocessor):
    """Removes the cells tagged model-answer: the model answer and rubric that the grader (autograder/grade.py)
    writes under each written answer of an autograded notebook, for the formgrader (autograder/rubrics.py).
    Its own class, not nbconvert's TagRemovePreprocessor: that one is on in every HTML export, the formgrader's
    page included, which would hide the model answers from the graders too. (An nbgrader preprocessor, so that
    it is enabled where nbgrader registers it.)"""

    def preprocess(self, nb, resources):
        nb.cells = [cell for cell in nb.cells if "model-answer" not in cell.get("metadata", {}).get("tags", [])]
        return nb, resources


# Feedback never shows the model answers and rubrics: remove ClearModelAnswers from this list to return them too.
c.GenerateFeedback.preprocessors = [ClearHiddenTests, ClearModelAnswers, GetGrades, CSSHTMLHeaderPreprocessor]

# Your own settings (a late-submission penalty, a timezone...) go in nbgrader_config_local.py beside this file:
# `make release` rewrites this file but never that one. Due dates live in the gradebook:
#   nbgrader db assignment add SLUG --duedate="2026-12-10 23:59:00 UTC"
load_subconfig("nbgrader_config_local.py")  # noqa: F821 (provided by nbgrader; a missing file is skipped)
