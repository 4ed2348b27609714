"""autograder/reference.py: answers that match qkv's reference for their exercise, on the course's real stubs."""

import csv
import re

import pytest

from autograder import assemble, mutants, reference, report, similarity
from autograder.grading.results import Result
from course import notebooks as nbs
from course.section import section, sections
from tests.unit.autograder.test_similarity import ADDITIVE_OWN, answered

SLUG = "attention-scoring-functions"  # 11.3: DotProductAttention is qkv's own; AdditiveAttention is written out


def refs(slug):
    return reference.references(mutants.stub_cells(slug), assemble.solutions_module(slug))


def handout(slug):
    return reference.Handout.of(nbs.read(section(slug).path).cells)


def answer(student, source, grade_id, slug=SLUG):
    return similarity.Answer(student=student, assignment=slug, notebook=slug, grade_id=grade_id, source=source)


def pasted(source: str) -> str:
    """qkv's DotProductAttention as a student who pasted it might hand it in: its variables renamed, the comments
    gone, the two lines of ``__init__`` after ``super().__init__()`` swapped and the two checks of ``forward`` too."""
    head, quotes, body = source.rpartition('"""')
    body = re.sub(r"  # .*", "", body)
    for old, new in {"scores": "s", "d": "size"}.items():
        body = re.sub(rf"\b{old}\b", new, body)
    lines = body.split("\n")
    at = next(i for i, line in enumerate(lines) if "self.dropout = " in line)
    lines[at], lines[at + 1] = lines[at + 1], lines[at]
    first = next(i for i, line in enumerate(lines) if "if queries.shape[-1]" in line)
    second = next(i for i, line in enumerate(lines) if "if keys.shape[1]" in line)
    lines[first : second + 2] = lines[second : second + 2] + lines[first:second]
    return head + quotes + "\n".join(lines)


def test_the_reference_of_a_component_the_solutions_import_is_the_solved_cell():
    found = refs(SLUG)
    assert found["DotProductAttention"].source == mutants.solved_cell(SLUG, "DotProductAttention")
    assert found["DotProductAttention"].components == (
        "qkv.attention.DotProductAttention.__init__",
        "qkv.attention.DotProductAttention.forward",
    )


def test_an_answer_written_out_is_compared_with_qkvs_component_of_its_name_and_one_qkv_lacks_with_nothing():
    found = refs(SLUG)
    additive = found["AdditiveAttention"]
    assert additive.components[-1] == "qkv.attention.AdditiveAttention.forward"
    assert additive.source != mutants.solved_cell(SLUG, "AdditiveAttention")  # qkv's code, not solutions/'s
    assert "ref._linear(" in additive.source  # qkv.attention's own helper, named as the notebook imports it
    assert "DistanceAttention" not in found and "ProjectedDotProductAttention" not in found  # no qkv component
    # A module the solutions do not import is named in full (11.9's solutions import no qkv module).
    masks = refs("large-pretraining-transformers")["bidirectional_mask"]
    assert "qkv.pretraining._pad_keys(" in masks.source


def test_a_pasted_reference_is_listed_and_answers_written_apart_are_not():
    """One student pastes qkv's DotProductAttention, renamed and reordered; the rest of the class wrote their own
    (the written_apart variant, and three own answers to AdditiveAttention); others leave the stub."""
    found, given = refs(SLUG), handout(SLUG)
    dot = found["DotProductAttention"].source
    copy = pasted(dot)
    assert "size = queries.shape[-1]" in copy and "scores" not in copy.split('"""')[-1]  # the disguise took
    assert copy.index("if keys.shape[1]") < copy.index("if queries.shape[-1]")
    apart = next(v for _, v in written_apart() if v.grade_id == "DotProductAttention")
    apart = apart.apply(mutants.solved_cell(SLUG, "DotProductAttention"))
    dots = [answer("copier", copy, "DotProductAttention"), answer("apart", apart, "DotProductAttention")]
    dots += [answer(f"stub{i}", mutants.stub_cells(SLUG)["DotProductAttention"], "DotProductAttention") for i in (1, 2)]
    (match,) = reference.compare(dots, found["DotProductAttention"], given)
    assert match.student == "copier" and match.score >= reference.THRESHOLD and match.shared >= reference.MIN_SHARED
    # The lines shown as shared are the answer's code, never the stub's docstring or signature.
    lines = copy.splitlines()
    assert any("torch.bmm" in lines[n - 1] for n in match.matched)
    assert not any(lines[n - 1].strip().startswith(("def ", '"""', "class ")) for n in match.matched)
    own = [answer(name, answered("AdditiveAttention", src), "AdditiveAttention") for name, src in ADDITIVE_OWN.items()]
    assert reference.compare(own, found["AdditiveAttention"], given) == []


def written_apart():
    for sec in sections():
        for v in mutants.load_variants(sec):
            if v.name == "written_apart":
                yield sec.slug, v


def test_no_answer_written_apart_from_the_reference_is_listed():
    """Every written_apart variant (a whole answer written from the docstring and D2L, proved right by the notebooks
    tier) scored against its exercise's reference: none is listed, and each has one to be compared with."""
    by_slug: dict[str, list] = {}
    for slug, v in written_apart():
        by_slug.setdefault(slug, []).append(v)
    assert sum(map(len, by_slug.values())) >= 10 or len(sections()) < 5  # (a run about a few sections has fewer)
    for slug, group in by_slug.items():
        found, given = refs(slug), handout(slug)
        for v in group:
            cell = v.apply(mutants.solved_cell(slug, v.grade_id))
            scored = reference.scores([answer("apart", cell, v.grade_id, slug)], found[v.grade_id], given)
            listed = reference.compare([answer("apart", cell, v.grade_id, slug)], found[v.grade_id], given)
            assert listed == [], (v.label, scored)


def test_a_short_answer_any_right_one_shares_is_never_listed_but_the_minimum_is_what_decides():
    """11.7's AddNorm: the docstring spells out its layers and its result, so a copy of qkv's and an answer
    written apart are alike; both score high, over too little code of their own to be listed."""
    slug = "transformer"
    found, given = refs(slug)["AddNorm"], handout(slug)
    copy = answer("copier", found.source, "AddNorm", slug)
    apart = next(v for v in mutants.load_variants(slug) if v.grade_id == "AddNorm" and v.name == "written_apart")
    own = answer("apart", apart.apply(mutants.solved_cell(slug, "AddNorm")), "AddNorm", slug)
    scored = reference.scores([copy, own], found, given)
    assert [m.score for m in scored] == [1.0, 1.0] and all(m.shared < reference.MIN_SHARED for m in scored)
    assert reference.compare([copy, own], found, given) == []
    assert [m.student for m in reference.compare([copy, own], found, given, min_shared=0)] == ["apart", "copier"]


def test_what_the_stubs_words_spell_out_is_not_the_students_own_code():
    given = handout("transformer")
    assert given.dictates("self.ln = nn.LayerNorm(norm_shape)")  # the docstring says so, spaces aside
    assert given.dictates("return self.ln(self.dropout(Y) + X)")  # "-> self.ln(self.dropout(Y) + X)"
    assert not given.dictates("return self.ln(self.dropout(Y) - X)")
    assert not given.dictates("return X")  # too short to tell
    numbers, text = given.own("    self.ln = nn.LayerNorm(norm_shape)\n    y = torch.relu(x) * 2\n")
    assert numbers == [2] and "relu" in text


def test_a_class_of_copies_is_a_class_of_matches():
    """Unlike the similarity report, code that many answers share still counts: more than COMMON copies are all
    listed."""
    found, given = refs(SLUG)["DotProductAttention"], handout(SLUG)
    class_ = [answer(f"s{i:02d}", pasted(found.source), "DotProductAttention") for i in range(similarity.COMMON + 3)]
    assert len(reference.compare(class_, found, given)) == similarity.COMMON + 3


def test_line_ranges():
    assert reference.line_ranges({3, 4, 5, 9, 11, 12}) == "3-5 9 11-12"
    assert reference.line_ranges(set()) == ""


def match(**changed):
    fields = dict(
        student="<i>ann</i>",
        assignment=SLUG,
        notebook=SLUG,
        grade_id="DotProductAttention",
        score=0.95,
        share_answer=0.95,
        share_reference=0.9,
        shared=180,
        source="x = 1\ny = '<script>alert(1)</script>'\n",
        reference="z = 1\nw = 2\n",
        components=("qkv.attention.DotProductAttention.forward",),
        matched=frozenset({2}),
        matched_reference=frozenset({1}),
    )
    return reference.Match(**{**fields, **changed})


RESULT = Result(
    student="ann", assignment=SLUG, notebook=SLUG, status="graded", reason="", score=1.0, max_score=1.0,
    exercises={"e": 1.0}, max_points={"e": 1.0},
)  # fmt: skip


def test_the_report_shows_each_match_beside_the_reference_as_text_and_says_it_judges_no_one(tmp_path):
    compared = [(SLUG, "DotProductAttention", ("qkv.attention.DotProductAttention.forward",))]
    compared.append((SLUG, "AdditiveAttention", ("qkv.attention.AdditiveAttention.forward",)))
    many = [match(), *(match(student=f"b{i:02d}") for i in range(report.SHOWN_PAIRS))]
    html = report.write_report([RESULT], tmp_path, [], like_reference=reference.Findings(many, compared)).read_text()
    assert '<h2 id="like-reference">Answers like the library\'s reference</h2>' in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html and "<script>" not in html
    assert "&lt;i&gt;ann&lt;/i&gt;" in html and "<i>ann</i>" not in html
    assert "This changes no grade and accuses no one." in html
    row = '<tr><td class="n same">2</td><td class="same">y = &#39;&lt;script&gt;'
    assert row in html and '<td class="n same">1</td><td class="same">z = 1</td>' in html
    assert html.count('<table class="pair">') == report.SHOWN_PAIRS
    assert "The other 1 answers are listed above and in <code>reference.csv</code>" in html
    none = "<td>AdditiveAttention</td><td><code>qkv.attention.AdditiveAttention.forward</code></td><td>none</td>"
    assert none in html
    # Nothing compared (no reference, or --no-similarity): no section at all.
    assert "like-reference" not in report.write_report([RESULT], tmp_path, [], like_reference=None).read_text()
    empty = reference.Findings([], [])
    assert "like-reference" not in report.write_report([RESULT], tmp_path, [], like_reference=empty).read_text()


def test_the_csv_lists_every_match_with_its_lines(tmp_path):
    reference.write_csv([match(matched=frozenset({2, 3, 4, 7}))], tmp_path / "reference.csv")
    with open(tmp_path / "reference.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert list(rows[0]) == list(reference.FIELDS)
    assert rows == [
        {
            "student": "<i>ann</i>", "assignment": SLUG, "notebook": SLUG, "exercise": "DotProductAttention",
            "score": "0.950", "share_answer": "0.950", "share_reference": "0.900", "shared": "180",
            "reference": "qkv.attention.DotProductAttention.forward", "matched_lines": "2-4 7",
        }
    ]  # fmt: skip
    reference.write_csv([], tmp_path / "none.csv")
    assert (tmp_path / "none.csv").read_text().strip() == ",".join(reference.FIELDS)


@pytest.mark.parametrize("slug", ["queries-keys-values"])
def test_a_section_with_no_qkv_component_has_no_reference(slug):
    assert refs(slug) == {}
