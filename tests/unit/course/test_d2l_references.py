"""Every D2L section number the course writes is one that D2L 1.0.3 has, and docstrings name where D2L defines.

The table of D2L's numbered sections is ``tests/support/d2l_sections.csv`` (made from d2l-en's sources by
``tests/support/d2l_toc.py``). A reference is any phrasing the course uses for a D2L number: "D2L 11.7.3",
"D2L's 10.7", "D2L section 10.7.8", "D2L 11.6 ex. 3", "sections 11.3 to 11.6", "第 11.4 节", and a bare
three-part number such as "the 11.6.2 entry". The course's own sections carry D2L's numbers, so "section 11.5"
of the book is checked too. Not references: figure and equation numbers ("Fig. 11.4.2"), versions ("D2L 1.0.3",
"jupytext_version: 1.19.6"), numbers with a 0 part ("1.0") and a paper's section ("Raffel et al., 2020, section
3.2").

A number that exists can still be the wrong one (BLEU is 10.7.8, not 10.7.6): :data:`DEFINED_IN` says, for the
``qkv`` objects with a D2L counterpart, in which subsection D2L defines it, and their docstrings, and those of the
book's and the solutions' definitions of the same names, must name that subsection and no other of its section.
"""

from __future__ import annotations

import importlib
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from course.section import ROOT
from tests.support import d2l_sections

TABLE = d2l_sections.load()
#: Where the course writes D2L numbers.
SCANNED = ("book", "lib", "solutions", "autograder")
SUFFIXES = {".md", ".py", ".toml", ".yml", ".yaml", ".txt", ".j2", ".html", ".cfg"}
SKIPPED = {"_build", "__pycache__", ".ipynb_checkpoints"}

_NUM = r"[1-9]\d?(?:\.[1-9]\d?){1,3}(?![\w]|\.\d)"  # 11.7, 11.7.3, 11.3.2.1; no 0 part, not 11.7.3x
#: Between two numbers of one list: a comma, "and", "to", a dash...; after a name in code (10.5 ``MTFraEng``, 9.2).
_SEP = r"(?:\s*``[\w.]+``)?\s*(?:,|;|/|\u2013|\u2014|-|\band\b|\bor\b|\bto\b)\s*(?:(?:sections?|§)\s*)?"
_LIST = rf"(?<![\w.]){_NUM}(?:{_SEP}{_NUM})*"
_ANCHORS = [
    # D2L 11.7.3; D2L's 10.7; D2L section 10.7.8; D2L sections 11.3 and 11.4; D2L (10.5)
    rf"\bD2L(?:['\u2019]s)?(?:\s+(?:sub)?(?:sections?|§))?\s*\(?\s*(?P<list>{_LIST})",
    # D2L's data modules (10.5 ...: a few lower-case words, then a parenthesis
    rf"\bD2L(?:['\u2019]s)?(?:\s+[a-z]+){{1,3}}\s+\((?P<list>{_LIST})",
    # section 11.5, Sections 11.3 to 11.6, § 11.2 (the book's sections carry D2L's numbers)
    rf"(?<![\w-])(?:[Ss]ub)?(?:[Ss]ections?|§)\s*(?P<list>{_LIST})",
    # 第 11.4 节
    rf"第\s*(?P<list>{_LIST})\s*节",
    # a bare number of three parts: the 11.6.2 entry (of a chapter the table holds: 1.19.6 is a version)
    r"(?<![\w.])(?P<list>[1-9]\d?(?:\.[1-9]\d?){2})(?![\w]|\.\d)",
]
_BARE = len(_ANCHORS) - 1
_LISTS = [re.compile(a) for a in _ANCHORS]
#: Text just before a match that makes it no D2L reference: a figure, an equation, a version, a paper's section.
_NOT_BEFORE = re.compile(
    r"(?:\b(?:Fig|Figs|Figure|Figures|Eq|Eqs|Equation|Equations|Table|Tables)\.?\s*|version:?\s*|\bv"
    r"|\b(?:19|20)\d\d[a-z]?\)?,\s*|\]\([^()\s]*\),\s*)$",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Reference:
    """One D2L number written in a file: where, the phrase it is in, and the number."""

    path: str
    line: int
    text: str
    number: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.text!r}"


def references(text: str, path: str = "<text>") -> list[Reference]:
    """The D2L numbers ``text`` writes, in order (a phrase that names several gives one each)."""
    found, seen = [], set()
    for kind, pattern in enumerate(_LISTS):
        for match in pattern.finditer(text):
            start = match.start("list")
            if _NOT_BEFORE.search(text[max(0, match.start() - 200) : match.start()]):
                continue
            if kind == _BARE and match.group("list").split(".")[0] not in TABLE:
                continue
            for number in re.finditer(_NUM, match.group("list")):
                at = start + number.start()
                if at in seen:
                    continue
                seen.add(at)
                line = text.count("\n", 0, at) + 1
                phrase = " ".join(match.group(0).split())
                found.append((at, Reference(path, line, phrase, number.group(0))))
    return [ref for _, ref in sorted(found, key=lambda pair: pair[0])]


def scanned_files() -> list[Path]:
    files = []
    for folder in SCANNED:
        for path in sorted((ROOT / folder).rglob("*")):
            if path.is_file() and path.suffix in SUFFIXES and not set(path.relative_to(ROOT).parts) & SKIPPED:
                files.append(path)
    return files


def problem(ref: Reference, table=TABLE) -> str | None:
    """Why ``ref`` names no section of ``table``, with the entries it was most likely meant to be; None if it does."""
    if ref.number in table:
        return None
    chapter = ref.number.split(".")[0]
    if chapter not in table:
        return (
            f"{ref} names D2L {ref.number}, but chapter {chapter} is not in tests/support/d2l_sections.csv; remake the "
            f"table with tests/support/d2l_toc.py --chapters "
            f"{' '.join(e.number for e in table.values() if not e.parent)} {chapter}"
        )
    nearest = "; ".join(str(e) for e in d2l_sections.nearest(ref.number, table))
    return f"{ref} names D2L {ref.number}, which D2L 1.0.3 does not have; nearest: {nearest}"


# -- the table ---------------------------------------------------------------------------------------------------


def test_the_table_numbers_d2l_as_the_review_checked_by_hand():
    """Spot checks against D2L's rendered numbering (the content review of 2026-12-01, section 1.1)."""
    expected = {
        "10.7.2": "Encoder",
        "10.7.7": "Prediction",
        "10.7.8": "Evaluation of Predicted Sequences",
        "11.3.3": "Scaled Dot Product Attention",
        "11.3.4": "Additive Attention",
        "11.3.2.1": "Masked Softmax Operation",
        "11.7.3": "Residual Connection and Layer Normalization",
        "11.7.6": "Training",
        "11": "Attention Mechanisms and Transformers",
    }
    got = {number: TABLE[number].title if number in TABLE else None for number in expected}
    assert got == expected
    assert TABLE["11.7.3"].source == "chapter_attention-mechanisms-and-transformers/transformer.md"


def test_the_table_numbers_are_consecutive_and_every_entry_has_a_title_and_a_source():
    bad, children = [], {}
    for number, entry in TABLE.items():
        if not entry.title.strip():
            bad.append(f"{number}: no title")
        if not re.fullmatch(r"chapter_[\w-]+/[\w-]+\.md", entry.source):
            bad.append(f"{number}: source {entry.source!r} is not a D2L chapter file")
        if entry.parent:
            if entry.parent not in TABLE:
                bad.append(f"{number}: its parent {entry.parent} is not in the table")
            elif entry.number.count(".") > 1 and TABLE[entry.parent].source != entry.source:
                bad.append(f"{number}: in {entry.source}, its section {entry.parent} in {TABLE[entry.parent].source}")
        elif not entry.source.endswith("/index.md"):
            bad.append(f"{number}: a chapter whose source is not its index.md")
        children.setdefault(entry.parent, []).append(int(number.rpartition(".")[2]))
    for parent, numbers in children.items():
        if parent and numbers != list(range(1, len(numbers) + 1)):
            bad.append(f"the entries under {parent} are numbered {numbers}")
    assert not bad, "tests/support/d2l_sections.csv:\n" + "\n".join(bad)


def test_the_table_holds_every_chapter_the_course_cites():
    cited = {ref.number.split(".")[0] for path in scanned_files() for ref in references(path.read_text("utf-8"))}
    chapters = {n for n, e in TABLE.items() if not e.parent}
    missing = sorted(cited - chapters, key=int)
    assert not missing, f"chapters cited but not in tests/support/d2l_sections.csv: {missing}"


# -- finding references ------------------------------------------------------------------------------------------

#: Each phrasing the course uses, and the numbers it names.
FORMS = [
    ("Greedy decoding (D2L 10.7.7).", ["10.7.7"]),
    ("the GRU encoder is D2L's 10.7 ``Seq2SeqEncoder``", ["10.7"]),
    ("starting from `<bos>` (D2L section 10.7.7). The", ["10.7.7"]),
    ("Follows D2L section\n11.5 ([Zhang", ["11.5"]),
    ("BLEU (section 10.7.8) compares", ["10.7.8"]),
    ("(D2L 11.3 exercises, 11.6.2 complexity table)", ["11.3", "11.6.2"]),
    ("(D2L 11.3.3, 11.6.2)", ["11.3.3", "11.6.2"]),
    ("RoPE (Su et al., 2021; D2L 11.6 ex. 3).", ["11.6"]),
    ("Sections 11.3 to 11.6 built every part", ["11.3", "11.6"]),
    ("the vision Transformer of sections 11.8 and 11.9 use", ["11.8", "11.9"]),
    ("D2L's data modules (10.5 ``MTFraEng``, 9.2 ``TimeMachine``, 4.2 ``FashionMNIST``)", ["10.5", "9.2", "4.2"]),
    ("a **GRU** (section 10.2 of D2L) with", ["10.2"]),
    ("第 11.4 节训练的翻译模型", ["11.4"]),
    ("self-attention (Q = K = T), the 11.6.2 entry O(T^2 d).", ["11.6.2"]),
    ("for every row p_i of the sinusoidal table (D2L 11.6.3.2).", ["11.6.3.2"]),
    ("d2l_bleu = [1.000, 0.687]  # D2L 11.7.6, PyTorch edition", ["11.7.6"]),
    ("(D2L 10.7.4\u201310.7.5)", ["10.7.4", "10.7.5"]),
]
#: Numbers that are not D2L section references.
NOT_REFERENCES = [
    "D2L's Fig. 11.4.2 draws it",
    "as in D2L 1.0.3, which",
    "jupytext_version: 1.19.6",
    "(Raffel et al., 2020, section 3.2): a decoder-only",
    "([Vaswani et al., 2017](https://arxiv.org/abs/1706.03762), section 3.1),",
    "([Radford et al., 2019](https://cdn.openai.com/a.pdf),\nsection 2.3) moved it",
    "D2L_BATCH_SIZE, D2L_EPOCHS, D2L_CLIP = 128, 30, 1.0",
    "D2L's row is 1 / 0.687 / 0.658 / 1",
    "the resolver 1.1.1.1 answers",
    "beta=10.0, the 11.3 notebook",
]


@pytest.mark.parametrize(("text", "numbers"), FORMS, ids=[t for t, _ in FORMS])
def test_every_phrasing_of_a_reference_is_found(text, numbers):
    assert [ref.number for ref in references(text)] == numbers


@pytest.mark.parametrize("text", NOT_REFERENCES)
def test_figures_versions_and_papers_are_not_references(text):
    assert references(text) == []


def test_a_wrong_number_fails_with_its_place_and_the_nearest_entries():
    (ref,) = references("x = 1\n# the decoder (D2L 11.7.9)\n", "lib/qkv/example.py")
    message = problem(ref)
    assert message.startswith("lib/qkv/example.py:2: 'D2L 11.7.9' names D2L 11.7.9, which D2L 1.0.3 does not have")
    assert "11.7 The Transformer Architecture; 11.7.1 Model;" in message and "11.7.8 Exercises" in message
    (ref,) = references("(D2L 12.40)", "book/x.md")
    assert "chapter 12 is not in tests/support/d2l_sections.csv" in problem(ref)
    (ref,) = references("(D2L 11.3.4)")
    assert problem(ref) is None


# -- the course's references ---------------------------------------------------------------------------------------


def test_every_d2l_reference_names_a_section_of_d2l():
    found = [
        ref
        for path in scanned_files()
        for ref in references(path.read_text(encoding="utf-8"), str(path.relative_to(ROOT)))
    ]
    assert len(found) > 300, f"only {len(found)} references found: is the pattern still matching?"
    wrong = [message for ref in found if (message := problem(ref))]
    assert not wrong, f"{len(wrong)} references to no section of D2L 1.0.3:\n" + "\n".join(wrong)


# -- docstrings name the subsection that defines the object --------------------------------------------------------

#: qkv object -> the subsection where D2L 1.0.3 defines its counterpart (from ``class``/``def`` in D2L's sources),
#: and other numbers of the same D2L section its docstring may also name.
DEFINED_IN: dict[str, tuple[str, ...]] = {
    "qkv.seq2seq.Encoder": ("10.6.1",),
    "qkv.seq2seq.Decoder": ("10.6.2",),
    "qkv.seq2seq.EncoderDecoder": ("10.6.3",),
    "qkv.seq2seq.EncoderDecoder.predict_step": ("10.7.7",),
    "qkv.seq2seq.init_seq2seq": ("10.7.2",),
    "qkv.seq2seq.Seq2Seq": ("10.7.4", "10.7.5"),  # the class in 10.7.4, its loss in 10.7.5
    "qkv.bahdanau.Seq2SeqEncoder": ("10.7.2",),
    "qkv.bahdanau.AttentionDecoder": ("11.4.2",),
    "qkv.bahdanau.Seq2SeqAttentionDecoder": ("11.4.2",),
    "qkv.bleu": ("10.7.8",),
    "qkv.bleu.bleu": ("10.7.8",),
    "qkv.translate.BleuRow": ("10.7.8",),
    "qkv.translate.evaluate_bleu": ("10.7.8",),
    "qkv.attention.sequence_mask": ("11.3.2.1",),  # masked_softmax's _sequence_mask; 10.7 has none in 1.0.3
    "qkv.attention.masked_softmax": ("11.3.2.1",),
    "qkv.attention.DotProductAttention": ("11.3.3",),
    "qkv.attention.AdditiveAttention": ("11.3.4",),
    "qkv.multihead.MultiHeadAttention": ("11.5.2",),
    "qkv.multihead.transpose_qkv": ("11.5.2",),
    "qkv.multihead.transpose_output": ("11.5.2",),
    "qkv.positional.PositionalEncoding": ("11.6.3",),
    "qkv.transformer.PositionWiseFFN": ("11.7.2",),
    "qkv.transformer.AddNorm": ("11.7.3",),
    "qkv.transformer.TransformerEncoderBlock": ("11.7.4",),
    "qkv.transformer.TransformerEncoder": ("11.7.4",),
    "qkv.transformer.TransformerDecoderBlock": ("11.7.5",),
    "qkv.transformer.TransformerDecoder": ("11.7.5",),
    "qkv.recipes.translate.train_d2l": ("11.7.6",),  # and 11.4.3, the same setting in another section
    "qkv.vit.PatchEmbedding": ("11.8.2",),
    "qkv.vit.ViTMLP": ("11.8.3",),
    "qkv.vit.ViTBlock": ("11.8.3",),
    "qkv.vit.ViT": ("11.8.4",),
    "qkv.nadaraya_watson.gaussian": ("11.2.1",),
    "qkv.nadaraya_watson.boxcar": ("11.2.1",),
    "qkv.nadaraya_watson.constant": ("11.2.1",),
    "qkv.nadaraya_watson.epanechikov": ("11.2.1",),
    "qkv.nadaraya_watson.nadaraya_watson": ("11.2.2", "11.2.3"),  # 11.2.3 adapts it
    "qkv.plotting.use_svg_display": ("2.4.2",),
    "qkv.plotting.plot": ("2.4.2",),
    "qkv.plotting.show_heatmaps": ("11.1.1",),
    "qkv.training.Trainer": ("3.2.4", "3.4.4"),  # the class in 3.2.4, its fit_epoch in 3.4.4
    "qkv.training.Trainer.prepare_batch": ("6.7.3",),
    "qkv.training.resolve_device": ("6.7.1",),  # try_gpu
    "qkv.training.clip_gradients": ("9.5.3",),
    "qkv.data.MTFraEng": ("10.5",),  # begun in 10.5.1, and each subsection adds a method
    "qkv.data.MTFraEng.build": ("10.5.4",),
    "qkv.data.MTFraEng.get_dataloader": ("10.5.4",),
    "qkv.data.MTFraEng.get_tensorloader": ("3.3.3",),
    "qkv.data.mt.preprocess_fra_eng": ("10.5.1",),
    "qkv.data.mt.tokenize_fra_eng": ("10.5.2",),
    "qkv.data.TimeMachine": ("9.3.3",),  # the windows of a language model: D2L's TimeMachine.__init__ of 9.3.3
    "qkv.data.TimeMachine.build": ("9.2.4",),
    "qkv.data.TimeMachine.get_dataloader": ("9.3.3",),
    "qkv.data.TimeMachine.get_tensorloader": ("3.3.3",),
    "qkv.data.timemachine.preprocess_timemachine": ("9.2.1",),
    "qkv.data.timemachine.tokenize_timemachine": ("9.2.2",),
    "qkv.data.Vocab": ("9.2.3",),
    "qkv.data.FashionMNIST": ("4.2",),  # begun in 4.2.1, extended in 4.2.2 and 4.2.3
    "qkv.data.FashionMNIST.text_labels": ("4.2.1",),
    "qkv.data.FashionMNIST.get_dataloader": ("4.2.2",),
}


def _resolve(name: str):
    parts = name.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ModuleNotFoundError:
            continue
        for attr in parts[cut:]:
            obj = getattr(obj, attr)
        return obj
    raise ImportError(name)


def docstring_problem(where: str, doc: str | None, allowed: tuple[str, ...]) -> str | None:
    """Why ``doc`` does not name ``allowed[0]`` (where D2L defines the object), or names another subsection of the
    same section other than those in ``allowed``; None if it is right."""
    defining = allowed[0]
    section = ".".join(defining.split(".")[:2])
    named = [ref.number for ref in references(doc or "")]
    siblings = [n for n in named if n.startswith(section + ".")]
    wrong = [n for n in siblings if n not in allowed and not any(n.startswith(a + ".") for a in allowed)]
    if defining in named and not wrong:
        return None
    named_text = ", ".join(str(TABLE[n]) if n in TABLE else n for n in named) or "no section"
    return f"{where}: D2L defines it in {TABLE[defining]}; its docstring names {named_text}" + (
        f" ({', '.join(wrong)}: another subsection of {section})" if wrong else ""
    )


@pytest.mark.parametrize("name", DEFINED_IN)
def test_a_qkv_docstring_names_the_subsection_that_defines_its_object(name):
    message = docstring_problem(name, _resolve(name).__doc__, DEFINED_IN[name])
    assert message is None, message


#: Names too common to mean D2L's object wherever the book or a solution defines them.
GENERIC = {"Encoder", "Decoder", "build", "get_dataloader", "get_tensorloader", "plot", "constant", "Trainer"}


def _definitions(text: str, names: set[str]):
    """``(name, line, docstring)`` of each ``class``/``def`` of one of ``names`` in ``text`` that has a docstring."""
    pattern = re.compile(
        r"^[ \t]*(?:class|def)[ \t]+(?P<name>\w+)\b(?:(?!\n[ \t]*\n|\bdef\b|\bclass\b).)*?:[ \t]*\n"
        r"[ \t]*[rR]?(?P<q>\"\"\"|''')(?P<doc>.*?)(?P=q)",
        re.MULTILINE | re.DOTALL,
    )
    for match in pattern.finditer(text):
        if match.group("name") in names:
            yield match.group("name"), text.count("\n", 0, match.start("doc")) + 1, match.group("doc")


def test_the_book_and_the_solutions_name_the_defining_subsection_too():
    """The stubs of the book and the answers of ``solutions/`` define D2L's objects again (AddNorm, ViTBlock, ...)."""
    by_name = {}
    for name, allowed in DEFINED_IN.items():
        by_name.setdefault(name.rpartition(".")[2], set()).add(allowed)
    unique = {n: next(iter(a)) for n, a in by_name.items() if len(a) == 1 and n not in GENERIC}
    files = sorted((ROOT / "book").glob("*.md")) + sorted((ROOT / "solutions").glob("*.py"))
    checked, wrong = 0, []
    for path in files:
        for name, line, doc in _definitions(path.read_text(encoding="utf-8"), set(unique)):
            if references(doc):
                checked += 1
                wrong.append(docstring_problem(f"{path.relative_to(ROOT)}:{line}: {name}", doc, unique[name]))
    wrong = [w for w in wrong if w]
    assert checked >= 10, f"only {checked} definitions with a D2L reference found in book/ and solutions/"
    assert not wrong, "\n".join(wrong)


#: A word that names one D2L subsection: a line with the word and a number of that section names that subsection.
TOPICS = [
    ("BLEU", re.compile(r"\bBLEU\b"), "10.7.8"),  # D2L 10.7.8, Evaluation of Predicted Sequences, defines BLEU
]


def test_a_line_about_bleu_names_the_subsection_that_defines_it():
    wrong = []
    for path in scanned_files():
        text = path.read_text(encoding="utf-8")
        lines = text.split("\n")
        for ref in references(text, str(path.relative_to(ROOT))):
            for topic, word, number in TOPICS:
                section = number.rpartition(".")[0]
                if ref.number.startswith(section + ".") and ref.number != number and word.search(lines[ref.line - 1]):
                    wrong.append(f"{ref}: a line about {topic} names {TABLE[ref.number]}, not {TABLE[number]}")
    assert not wrong, "\n".join(wrong)
