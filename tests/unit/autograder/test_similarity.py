"""autograder/similarity.py: answers alike beyond the code every student was given, on 11.3's real stubs."""

import csv
import json
import os
import re
import subprocess
import sys

import pytest

from autograder import mutants, report, similarity
from autograder.grading.options import GradeOptions
from autograder.grading.results import Result
from autograder.nbcourse import GradingError
from course import notebooks as nbs
from course.section import section

SLUG = "attention-scoring-functions"

# Three students' own answers to Exercise 3 (AdditiveAttention), each right, each written its own way.
ADDITIVE_OWN = {
    "ines": """
    def __init__(self, num_hiddens, dropout):
        super().__init__()
        self.W_q = nn.LazyLinear(num_hiddens, bias=False)
        self.W_k = nn.LazyLinear(num_hiddens, bias=False)
        self.w_v = nn.LazyLinear(1, bias=False)
        self.dropout = nn.Dropout(dropout)

    def forward(self, queries, keys, values, valid_lens=None):
        q = self.W_q(queries)[:, :, None, :]            # (B, Q, 1, N)
        k = self.W_k(keys)[:, None, :, :]               # (B, 1, K, N)
        scores = self.w_v(torch.tanh(q + k))[..., 0]    # (B, Q, K)
        self.attention_weights = ref.masked_softmax(scores, valid_lens)
        return self.dropout(self.attention_weights) @ values
""",
    "jun": """
    def __init__(self, num_hiddens, dropout):
        super().__init__()
        # three projections; their input sizes come with the first batch
        self.W_k, self.W_q = (nn.LazyLinear(num_hiddens, bias=False) for _ in range(2))
        self.w_v = nn.LazyLinear(1, bias=False)
        self.dropout = nn.Dropout(p=dropout)

    def forward(self, queries, keys, values, valid_lens=None):
        projected_q = self.W_q(queries)
        projected_k = self.W_k(keys)
        B, Q, N = projected_q.shape
        K = projected_k.shape[1]
        summed = projected_q.reshape(B, Q, 1, N).expand(B, Q, K, N) + projected_k.reshape(B, 1, K, N)
        scores = self.w_v(summed.tanh()).reshape(B, Q, K)
        weights = ref.masked_softmax(scores, valid_lens)
        self.attention_weights = weights
        out = torch.einsum("bqk,bkv->bqv", self.dropout(weights), values)
        return out
""",
    "kofi": """
    def __init__(self, num_hiddens, dropout):
        super(AdditiveAttention, self).__init__()
        self.dropout = nn.Dropout(dropout)
        self.w_v = nn.LazyLinear(1, bias=False)
        self.W_q = nn.LazyLinear(num_hiddens, bias=False)
        self.W_k = nn.LazyLinear(num_hiddens, bias=False)

    def forward(self, queries, keys, values, valid_lens=None):
        features = []
        for i in range(queries.shape[1]):
            one = self.W_q(queries[:, i : i + 1, :]) + self.W_k(keys)    # (B, K, N) for query i
            features.append(self.w_v(torch.tanh(one)).squeeze(-1))     # (B, K)
        scores = torch.stack(features, dim=1)                           # (B, Q, K)
        self.attention_weights = ref.masked_softmax(scores, valid_lens)
        return torch.matmul(self.dropout(self.attention_weights), values)
""",
}


def stub(grade_id: str) -> str:
    return mutants.stub_cells(SLUG)[grade_id]


def answered(grade_id: str, methods: str) -> str:
    """The stub cell of a class exercise with its methods replaced by ``methods``, as a student's cell is."""
    head = stub(grade_id).split("\n    def __init__", 1)[0]
    return head + "\n" + methods


def renamed(source: str, names: dict[str, str]) -> str:
    """``source`` with each name of ``names`` replaced after the docstring (a copy whose variables were renamed)."""
    head, quotes, body = source.rpartition('"""')
    for old, new in names.items():
        body = re.sub(rf"\b{old}\b", new, body)
    return head + quotes + body


def disguised(source: str) -> str:
    """The reference answer as a student who copied it might hand it in: variables renamed, the comments gone and
    others added, the layers of ``__init__`` in another order, a tuple assignment split in two swapped lines, a
    blank line here and there."""
    names = {"queries": "qs", "keys": "ks", "features": "feats", "scores": "s", "num_hiddens": "hidden"}
    body = re.sub(r"  # .*", "", renamed(source, names))
    body = body.replace(
        "        qs, ks = self.W_q(qs), self.W_k(ks)\n",
        "        # project both, then score every pair\n\n        ks = self.W_k(ks)\n        qs = self.W_q(qs)\n",
    )
    lines = body.splitlines()
    at = next(i for i, line in enumerate(lines) if "self.W_k = " in line)
    lines[at], lines[at + 1], lines[at + 2] = lines[at + 2], lines[at], lines[at + 1]  # w_v, W_k, W_q
    return "\n".join(lines)


def given():
    release = nbs.read(section(SLUG).path)
    return similarity.Given.of(c.source for c in release.cells if c.cell_type == "code")


def answer(student, source, grade_id="AdditiveAttention"):
    return similarity.Answer(student=student, assignment=SLUG, notebook=SLUG, grade_id=grade_id, source=source)


def test_a_copy_under_renamed_variables_and_reordered_lines_is_flagged_and_nothing_else():
    reference = mutants.solved_cell(SLUG, "AdditiveAttention")
    copied = disguised(reference)
    assert "ks = self.W_k(ks)" in copied and "queries" not in copied.split('"""')[-1]  # the disguise took
    class_ = [answer("alba", reference), answer("bruno", copied)]
    class_ += [answer(name, answered("AdditiveAttention", src)) for name, src in ADDITIVE_OWN.items()]
    class_ += [answer(f"stub{i}", stub("AdditiveAttention")) for i in range(12)]
    pairs = similarity.compare(class_, given())
    assert [(p.student_a, p.student_b) for p in pairs] == [("alba", "bruno")]
    (pair,) = pairs
    assert pair.similarity >= 0.85, pair
    assert pair.student_a == "alba" and pair.source_a == reference and pair.source_b == copied
    # The lines shown as matching are the answer's, never the stub's docstring or signature.
    lines = reference.splitlines()
    end = max(n for n, line in enumerate(lines, 1) if '"""' in line)  # the docstring's last line
    body_a = {n for n, line in enumerate(lines, 1) if n > end and "self." in line and "=" in line}
    split = {n for n in body_a if "queries, keys = " in lines[n - 1]}  # bruno wrote it as two lines
    assert len(body_a) == 7 and len(split) == 1 and body_a - split <= pair.matched_a
    signatures = {n for n, line in enumerate(lines, 1) if line.strip().startswith("def ")}
    assert len(signatures) == 2 and not signatures & pair.matched_a
    docstring = {n for n, line in enumerate(reference.splitlines(), 1) if "LazyLinear(..., bias=False)" in line}
    assert docstring and not docstring & pair.matched_a


def test_unchanged_stubs_are_like_no_other():
    stubs = [answer(f"s{i}", stub(g), g) for g in ("masked_softmax", "AdditiveAttention") for i in range(5)]
    assert similarity.compare([a for a in stubs if a.grade_id == "masked_softmax"], given(), threshold=0.0) == []
    assert similarity.compare([a for a in stubs if a.grade_id != "masked_softmax"], given(), threshold=0.0) == []


def test_independent_answers_stay_below_the_threshold():
    own = [answer(name, answered("AdditiveAttention", src)) for name, src in ADDITIVE_OWN.items()]
    own.append(answer("alba", mutants.solved_cell(SLUG, "AdditiveAttention")))
    scores = similarity.compare(own, given(), threshold=0.0, min_match=0)
    assert max((p.similarity for p in scores), default=0) < similarity.THRESHOLD, scores


def test_what_most_of_the_class_wrote_is_no_evidence_but_a_rarer_copy_still_is():
    reference = mutants.solved_cell(SLUG, "AdditiveAttention")
    kofi = answered("AdditiveAttention", ADDITIVE_OWN["kofi"])
    copied = renamed(kofi, {"features": "rows", "one": "summed", "i": "q"}).replace("# (B, K, N) for query i", "")
    class_ = [answer(f"s{i:02d}", reference) for i in range(similarity.COMMON + 2)]
    class_ += [answer("kofi", kofi), answer("lea", copied)]
    pairs = similarity.compare(class_, given())
    assert [(p.student_a, p.student_b) for p in pairs] == [("kofi", "lea")]
    # With as many copies of the reference as COMMON allows, they are pairs again: the limit is what decides.
    few = [answer(f"s{i:02d}", reference) for i in range(similarity.COMMON)]
    assert len(similarity.compare(few, given())) == similarity.COMMON * (similarity.COMMON - 1) // 2


def test_a_short_match_is_not_a_pair():
    """Two answers whose only own code is the same short line: alike by chance, not listed."""
    line = "    return torch.softmax(X, dim=-1) if valid_lens is None else None\n"
    head = stub("masked_softmax").split("    # YOUR CODE HERE")[0]
    two = [answer(s, head + line, "masked_softmax") for s in ("a", "b")]
    assert similarity.compare(two, given(), min_match=0)[0].similarity == 1.0
    assert similarity.compare(two, given()) == []


_SHARES = """
import json, sys
from tests.unit.autograder import test_similarity as t
from autograder import mutants
own = [t.answer(n, t.answered("AdditiveAttention", s)) for n, s in t.ADDITIVE_OWN.items()]
own.append(t.answer("alba", mutants.solved_cell(t.SLUG, "AdditiveAttention")))
pairs = t.similarity.compare(own, t.given(), threshold=0.01, min_match=0)
print(json.dumps([[p.student_a, p.student_b, p.similarity, sorted(p.matched_a)] for p in pairs]))
"""


def test_the_same_class_gives_the_same_pairs_whatever_the_hash_seed():
    """Python salts str hashes per process; with every k-gram kept (no winnowing), no seed decides what matches."""
    found = []
    for seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": seed, "PYTHONPATH": "."}
        done = subprocess.run([sys.executable, "-c", _SHARES], capture_output=True, text=True, env=env, check=True)
        found.append(json.loads(done.stdout))
    assert found[0] == found[1] and len(found[0]) >= 4  # several fractional shares, each the same


def pair(**changed):
    fields = dict(
        assignment=SLUG,
        notebook=SLUG,
        grade_id="AdditiveAttention",
        student_a="<i>ann</i>",
        student_b="ben",
        similarity=0.9,
        share_a=0.9,
        share_b=0.85,
        source_a="x = 1\ny = '<script>alert(1)</script>'\n",
        source_b="z = 1\n",
        matched_a=frozenset({2}),
        matched_b=frozenset({1}),
    )
    return similarity.Pair(**{**fields, **changed})


def test_the_report_shows_pairs_side_by_side_as_text_and_the_csv_lists_them(tmp_path):
    result = Result(
        student="ann", assignment=SLUG, notebook=SLUG, status="graded", reason="", score=1.0, max_score=1.0,
        exercises={"e": 1.0}, max_points={"e": 1.0},
    )  # fmt: skip
    pairs = [pair(), *(pair(student_b=f"b{i:02d}", similarity=0.85) for i in range(report.SHOWN_PAIRS))]
    html = report.write_report([result], tmp_path, pairs).read_text()
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html and "<script>" not in html
    assert "&lt;i&gt;ann&lt;/i&gt;" in html and "<i>ann</i>" not in html
    row_a = '<tr><td class="n">1</td><td class="">x = 1</td><td class="n same">1</td><td class="same">z = 1</td></tr>'
    assert row_a in html
    assert html.count('<table class="pair">') == report.SHOWN_PAIRS
    assert "The other 1 pairs are shown in <code>similarity.csv</code> only." in html
    similarity.write_csv(pairs[:2], tmp_path / "similarity.csv")
    with open(tmp_path / "similarity.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert [(r["student_a"], r["student_b"], r["similarity"]) for r in rows] == [
        ("<i>ann</i>", "ben", "0.900"),
        ("<i>ann</i>", "b00", "0.850"),
    ]
    assert "Answers alike" not in report.write_report([result], tmp_path, []).read_text()


@pytest.mark.parametrize("bad", [0, 1.5, -0.1, True, "0.8"])
def test_the_threshold_is_a_share(bad):
    with pytest.raises(GradingError, match="similarity is a share"):
        GradeOptions(similarity=bad)


def test_a_notebook_graded_alone_reads_and_imports_nothing(monkeypatch):
    """Gradescope grades one notebook at a time: no pair is possible, so neither the release nor copydetect is used."""

    class Unreadable:
        def release(self, *args):
            raise AssertionError("the release was read")

    alone = [Result(
        student="ann", assignment=SLUG, notebook=SLUG, status="graded", reason="", score=1.0, max_score=1.0,
        exercises={}, max_points={},
    )]  # fmt: skip
    release = given()
    monkeypatch.setitem(sys.modules, "copydetect", None)  # importing it would raise
    assert similarity.find(Unreadable(), alone) == []
    assert similarity.compare([answer("ann", stub("masked_softmax"), "masked_softmax")], release) == []
