"""The policy for coding assistants (course/assistants.py): the instructor's choice in course.toml, checked, and
written as AGENTS.md (and its copies) into the folders students get: every section's nbgrader release folder, the
public tree and the Colab branch (those two: tests/book/test_public.py, tests/unit/publish/test_colab.py)."""

from __future__ import annotations

import re

import pytest

from autograder import release
from autograder.nbcourse import course_path
from course import assistants
from course.section import sections
from tests.unit.publish.test_public_text import BLIND_SPOTS

NAMES = list(assistants.POLICIES)


def _config(tmp_path, text: str):
    path = tmp_path / "course.toml"
    path.write_text(text, encoding="utf-8")
    return path


def _section(text: str, heading: str) -> str:
    """The body of the ``## heading`` section of a rendered policy."""
    match = re.search(rf"^## {re.escape(heading)}\n\n(.*?)(?=^## |\Z)", text, flags=re.M | re.S)
    assert match, f"no '## {heading}' section"
    return " ".join(match.group(1).split())


def test_the_repositorys_configuration_chooses_a_policy_of_the_course():
    assert assistants.CONFIG.name == "course.toml" and assistants.CONFIG.parent == assistants.ROOT
    assert assistants.chosen() in assistants.POLICIES
    assert assistants.DEFAULT in assistants.POLICIES
    comment = assistants.CONFIG.read_text(encoding="utf-8")
    assert all(f'"{name}"' in comment for name in assistants.POLICIES), "course.toml's comment lists every policy"


@pytest.mark.parametrize("name", NAMES)
def test_the_policy_the_configuration_chooses_is_the_one_written(tmp_path, monkeypatch, name):
    """Every policy can be chosen, and the files written are that policy's, under every name, saying which policy
    they are and where they came from (not the default whatever the configuration says)."""
    monkeypatch.setattr(assistants, "CONFIG", _config(tmp_path, f'# a comment\n[assistants]\npolicy = "{name}"\n'))
    assert assistants.chosen() == name
    folder = tmp_path / "release" / "some-section"
    (folder).mkdir(parents=True)
    (folder / "AGENTS.md").write_text("an older policy")
    paths = assistants.write(folder)
    assert [p.name for p in paths] == list(assistants.FILE_NAMES) and "AGENTS.md" in assistants.FILE_NAMES
    for path in paths:
        text = path.read_text(encoding="utf-8")
        assert text == assistants.render(name)
        assert text.startswith(f'# Coding assistants in this course: the "{name}" policy\n')
        assert f'`[assistants] policy = "{name}"`' in text and "`course/assistants.py`" in text
    others = [other for other in NAMES if other != name]
    assert all(f'"{other}" policy' not in paths[0].read_text() for other in others)


@pytest.mark.parametrize(
    "text, says",
    [
        ('[assistants]\npolicy = "strict"\n', 'policy = "strict" is not a policy of this course'),
        ('[assistants]\npolicy = "Explain-Only"\n', 'policy = "Explain-Only" is not a policy'),
        ("[assistants]\npolicy = 3\n", "policy = 3 is not a policy"),
        ('[assistants]\npolicy = ["hints"]\n', "is not a policy"),
        ('[assistants]\npolicy = "hints"\npolcy = "open"\n', "[assistants] has no setting polcy"),
        ('[assistant]\npolicy = "hints"\n', "names no policy for coding assistants"),
        ('policy = "hints"\n', "names no policy for coding assistants"),
        ("[assistants\n", "is not valid TOML"),
    ],
)
def test_a_bad_configuration_names_the_file_what_is_wrong_and_every_policy(tmp_path, text, says):
    config = _config(tmp_path, text)
    with pytest.raises(assistants.PolicyError) as caught:
        assistants.chosen(config)
    message = str(caught.value)
    assert str(config) in message and says in message
    for name, policy in assistants.POLICIES.items():
        assert f'"{name}": {policy.summary}' in message


def test_a_missing_configuration_says_what_to_write(tmp_path):
    with pytest.raises(assistants.PolicyError, match=r"(?s)is missing.*\[assistants\]\npolicy = \"explain-only\""):
        assistants.chosen(tmp_path / "course.toml")
    with pytest.raises(assistants.PolicyError, match="'strict' is not a policy"):
        assistants.render("strict")


@pytest.mark.parametrize("name", NAMES)
def test_every_policy_states_its_rule_for_graded_stubs_and_the_rules_of_every_policy(name):
    text = assistants.render(name)
    assert "`# YOUR CODE HERE`" in text and "`raise NotImplementedError()`" in text  # what a graded stub is
    stubs = _section(text, "Graded stubs")
    assert stubs == " ".join(assistants.POLICIES[name].stubs.split()) and len(stubs) > 80
    assert _section(text, "Written answers")
    never = _section(text, "Under every policy, never")
    assert "hidden tests" in never and "locked cells" in never
    may = _section(text, "What you may do")
    assert "error message" in may and "`qkv`" in may  # explaining concepts, errors and the library: always
    if name == "open":
        assert "may write or complete a graded stub" in stubs and "must say in the notebook what you wrote" in stubs
    else:
        assert "do not write" in stubs.lower() and "`qkv`'s implementation" in stubs


def test_only_hints_and_open_let_the_assistant_point_at_the_wrong_line():
    explain, hints = assistants.render("explain-only"), assistants.render("hints")
    assert "point at the line or expression that is wrong" in _section(hints, "What you may do")
    assert "point at" not in _section(explain, "What you may do")
    assert "mistakes that the messages do not name" in _section(explain, "Graded stubs")


@pytest.mark.parametrize("name", NAMES)
def test_no_policy_explains_the_grader_and_every_line_fits(name):
    text = assistants.render(name)
    flat = " ".join(text.lower().split())
    assert not [phrase for phrase in BLIND_SPOTS if phrase in flat]
    assert max(len(line) for line in text.splitlines()) <= assistants.WIDTH
    assert '`[assistants] policy = "' in text  # a code span is never broken across lines


def test_the_release_puts_the_configured_policy_beside_every_sections_notebook(tmp_path, monkeypatch):
    """``make release`` writes the policy into each section's nbgrader source folder, from which
    ``nbgrader generate_assignment`` copies it into the release folder (that copy: tests/grading/test_release.py);
    a bad configuration stops the release before it writes anything."""
    monkeypatch.setattr(assistants, "CONFIG", _config(tmp_path, '[assistants]\npolicy = "hints"\n'))
    monkeypatch.setattr(release.assemble, "solved", lambda nb, *args, **kwargs: nb)  # the assembler: not tested here
    course, chosen = tmp_path / "course", sections()[:2]  # two sections: each is written alike
    release.write_sources(course, chosen)
    for section in chosen:
        folder = course_path(course, "source", section.assignment)
        assert (folder / f"{section.slug}.ipynb").is_file()
        for name in assistants.FILE_NAMES:
            assert (folder / name).read_text(encoding="utf-8") == assistants.render("hints"), section.slug
    release.check_assistant_files(folder)
    (folder / "GEMINI.md").unlink()
    with pytest.raises(SystemExit, match="lacks GEMINI.md"):
        release.check_assistant_files(folder)

    monkeypatch.setattr(assistants, "CONFIG", _config(tmp_path, '[assistants]\npolicy = "lenient"\n'))
    elsewhere = tmp_path / "other-course"
    with pytest.raises(assistants.PolicyError, match='"lenient" is not a policy'):
        release.write_sources(elsewhere, chosen)
    assert not elsewhere.exists()
