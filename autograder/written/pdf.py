"""The PDFs of written answers, drawn with fpdf2 (pure Python): by question, and one per student for Gradescope.

**By question** (:func:`question_pdf`): the question, its model answer and rubric, then every student's answer in
the assignment's order, as on the web page (:mod:`autograder.written.pages`), flowing over as many pages as it takes.

**Per student, in Gradescope's layout** (:func:`student_pdfs`, :func:`template_pdf`). Gradescope grades PDFs by
question when every submission has the same pages in the same order as a template: the instructor uploads the
template to an *Exam / Quiz* assignment, draws each question's region and the name and ID boxes on it once
(Edit Outline), then uploads one PDF per student (Manage Scans), and each page is graded as the template's page.
So every student's PDF is:

* page 1, the cover: the section's title and two boxes at fixed places, *Name* and *Student ID* (for Gradescope's
  matching of a submission to its roster; nothing else on any page names the student, so Gradescope's anonymous
  grading hides who wrote it), and the list of questions with their pages;
* then one page per written question, in the notebook's order: the question's number, points and text at the top,
  then the answer in a box that reaches the bottom of the page. Every box starts at the same height on that page
  in every student's PDF (the question's text is the same), so one region per page in the template fits them all.

An answer too long for its box is set smaller (11 pt down to 9 pt). If it still does not fit, it fills its box,
a line at the box's bottom says it goes on, and the rest runs over *continuation pages after the last question*
(drawn where they fall, then moved there when the class's document is cut per student), so pages 1 to N + 1 keep
the template's layout. Gradescope keeps pages beyond the template's with the submission, where a grader finds them;
the command names the students whose PDF has them. ``template.pdf`` is the same layout with empty boxes: the
template to upload.

The whole class is drawn as one document, then cut into one file per student with pypdf: fonts are read once (a
TTF font takes fpdf2 a quarter of a second to read), so a student's PDF costs tens of milliseconds.

Text is DejaVu Sans (matplotlib's copy, so no system font is needed), which covers Latin, Greek, Cyrillic and the
mathematical symbols; TeX stays TeX (:mod:`autograder.written.markdown`).
"""

from __future__ import annotations

import dataclasses
import io
from pathlib import Path

from fpdf import FPDF
from fpdf.fonts import FontFace, TextStyle

from autograder.written import markdown
from autograder.written.answers import Answer, Question, Student, Written

#: US Letter (Gradescope takes any size, as long as the template's and the submissions' agree).
FORMAT = "letter"
MARGIN = 18.0  # mm, on every side
FOOTER = 10.0  # mm from the bottom edge to the footer's line
PAD = 3.0  # mm inside an answer box
MM_PER_PT = 25.4 / 72
SIZES = (11.0, 10.0, 9.0)  # pt, an answer's font size, largest first; the last is the smallest used
GREY, INK, RULE, LINK = (90, 90, 90), (20, 20, 20), (170, 170, 170), (31, 78, 121)
#: The cover's boxes, (x, y, width, height) in mm, at the same place in every student's PDF and in the template.
NAME_BOX = (MARGIN + 30, 52.0, 110.0, 12.0)
ID_BOX = (MARGIN + 30, 70.0, 110.0, 12.0)
CONTINUED = "Continued after the last question, on the pages at the end of this PDF."


def _font_files() -> dict[tuple[str, str], Path]:
    import matplotlib

    ttf = Path(matplotlib.get_data_path()) / "fonts" / "ttf"
    return {
        ("sans", ""): ttf / "DejaVuSans.ttf",
        ("sans", "B"): ttf / "DejaVuSans-Bold.ttf",
        ("sans", "I"): ttf / "DejaVuSans-Oblique.ttf",
        ("sans", "BI"): ttf / "DejaVuSans-BoldOblique.ttf",
        (markdown.PDF_MONO, ""): ttf / "DejaVuSansMono.ttf",
        (markdown.PDF_MONO, "B"): ttf / "DejaVuSansMono-Bold.ttf",
    }


def _tag_styles(size: float) -> dict:
    """fpdf2's styles of the HTML tags an answer may hold, for body text of ``size`` points."""
    heading = {f"h{n}": TextStyle("sans", "B", size + max(0, 4 - n), INK, t_margin=3, b_margin=1) for n in range(1, 7)}
    return {
        **heading,
        "code": FontFace(family=markdown.PDF_MONO, size_pt=size - 1),
        "pre": TextStyle(markdown.PDF_MONO, "", size - 1, INK, t_margin=2, b_margin=2),
        "blockquote": TextStyle("sans", "I", size, GREY, t_margin=2, l_margin=6, b_margin=2),
        "a": FontFace(color=LINK, emphasis="UNDERLINE"),
        "p": TextStyle(t_margin=0, b_margin=2),
        "li": TextStyle(t_margin=1, l_margin=6, b_margin=0),
    }


class Document(FPDF):
    """An fpdf2 document with the course's fonts, margins and footer (``footer_text`` on the left of every page,
    its page number on the right)."""

    def __init__(self):
        super().__init__(format=FORMAT, unit="mm")
        for (family, style), path in _font_files().items():
            self.add_font(family, style, str(path))
        self.set_margins(MARGIN, MARGIN, MARGIN)
        self.set_auto_page_break(True, MARGIN)
        self.footer_text = ""
        self.set_text_color(*INK)

    def page_text(self) -> str:
        return f"page {self.page} of {{nb}}"

    def footer(self):
        self.set_y(-FOOTER - 4)
        self.set_font("sans", "", 8)
        self.set_text_color(*GREY)
        width = self.w - 2 * MARGIN
        self.cell(width / 2, 4, self.footer_text, align="L")
        self.cell(width / 2, 4, self.page_text(), align="R")
        self.set_text_color(*INK)

    def html(self, text: str, size: float = SIZES[0], colour=INK) -> None:
        """Draw HTML from :mod:`autograder.written.markdown` at ``size`` points."""
        self.set_font("sans", "", size)
        self.set_text_color(*colour)
        self.write_html(text, font_family="sans", tag_styles=_tag_styles(size), li_prefix_color=colour)
        self.set_text_color(*INK)

    def trial(self, draw, size: float) -> bool | None:
        """Run ``draw(document, size)`` on a scratch document with this page's margins, from this position:
        ``None`` if it raised (fpdf2 rejects some HTML, such as a table in a list), else whether it ran past this
        page's bottom. (fpdf2's own ``offset_rendering`` copies the whole document for each trial, which makes a
        class's document cost the square of its length.)"""
        scratch = _scratch()
        scratch.set_margins(self.l_margin, self.t_margin, self.r_margin)
        scratch.set_auto_page_break(True, self.b_margin)
        scratch.add_page()
        first = scratch.page
        scratch.set_xy(self.get_x(), self.get_y())
        try:
            draw(scratch, size)
        except Exception:  # noqa: BLE001 (whatever fpdf2 raises, the caller draws the answer's text instead)
            return None
        return scratch.page != first

    def drawing(self, source: str, size: float, colour=INK):
        """How to draw Markdown ``source`` (a function of the document and the size): its HTML, or, where fpdf2
        cannot lay that out, its text. Of the HTML that :mod:`autograder.written.markdown` writes, fpdf2 rejects
        only some tables (one wider than the page), so only a table is tried first."""
        html = markdown.to_pdf_html(source)
        if "<table" not in html or self.trial(lambda doc, s: doc.html(html, s), size) is not None:
            return lambda doc, s: doc.html(html, s, colour)
        return lambda doc, s: doc.plain(source, s, colour)

    def roughly_fits(self, source: str, size: float, share: float = 0.8) -> bool:
        """Whether Markdown ``source`` at ``size`` surely takes less than ``share`` of the room left on this page,
        by a generous count of its lines (each line of the source as wide as its text, plus a seventh, in
        lines as high as a paragraph's, and a paragraph's gap per blank line): most answers are short, and this
        spares them a trial (:meth:`trial`), which costs as much as drawing."""
        self.set_font("sans", "", size)
        width = self.w - self.l_margin - self.r_margin
        lines = sum(1 + int(self.get_string_width(line) * 8 / 7 / width) for line in source.split("\n"))
        height = lines * size * markdown.LINE_HEIGHT * MM_PER_PT + source.count("\n\n") * 3
        return height < share * (self.page_break_trigger - self.get_y())

    def markdown(self, source: str, size: float = SIZES[0], colour=INK) -> None:
        """Draw Markdown (an answer, a question), or its source as plain text where fpdf2 cannot lay out its HTML."""
        self.drawing(source, size, colour)(self, size)

    def plain(self, text: str, size: float = SIZES[0], colour=INK) -> None:
        """Draw ``text`` as it is, in the monospaced font."""
        self.set_font(markdown.PDF_MONO, "", size - 1)
        self.set_text_color(*colour)
        self.multi_cell(0, size * 0.45, markdown.clipped(text), new_x="LMARGIN", new_y="NEXT", align="L")
        self.set_text_color(*INK)

    def heading(self, text: str, size: float, style: str = "B", colour=INK, after: float = 1.0) -> None:
        self.set_font("sans", style, size)
        self.set_text_color(*colour)
        self.multi_cell(0, size * 0.5, text, new_x="LMARGIN", new_y="NEXT", align="L")
        self.set_text_color(*INK)
        self.ln(after)

    def rule(self) -> None:
        self.set_draw_color(*RULE)
        self.line(self.l_margin, self.get_y(), self.w - self.r_margin, self.get_y())
        self.ln(2)


_SCRATCH: list[Document] = []
SCRATCH_PAGES = 200  # a scratch document is replaced after this many trials, so that it stays small


def _scratch() -> Document:
    """The document that :meth:`Document.trial` draws on (one per process: reading the fonts takes a while)."""
    if not _SCRATCH or _SCRATCH[0].page >= SCRATCH_PAGES:
        _SCRATCH[:] = [Document()]
    return _SCRATCH[0]


def _points(points: float) -> str:
    return f"{points:g} point" + ("" if points == 1 else "s")


def _rubric(pdf: Document, question: Question) -> None:
    rubric = question.rubric
    pdf.heading("Model answer", 11)
    pdf.markdown(rubric.answer, 10)
    pdf.ln(1)
    pdf.heading(f"Rubric ({_points(rubric.points)})", 11)
    for c in rubric.criteria:
        pdf.set_font("sans", "B", 10)
        pdf.cell(14, 5, f"{c.points:g}", align="R")
        pdf.set_font("sans", "", 10)
        pdf.multi_cell(0, 5, f"  {c.text}", new_x="LMARGIN", new_y="NEXT", align="L")
        pdf.ln(0.8)


def question_pdf(written: Written, question: Question) -> bytes:
    """The PDF of one question: its text, model answer and rubric, then every student's answer, in order."""
    pdf = Document()
    pdf.footer_text = f"{written.assignment} · {question.title}" + (" · blind" if written.blind else "")
    pdf.add_page()
    pdf.heading(written.title, 10, "", GREY)
    pdf.heading(f"{question.title}  ({_points(question.points)}, {question.grade_id})", 16)
    pdf.markdown(question.text, 10.5)
    pdf.ln(2)
    if question.rubric:
        _rubric(pdf, question)
    else:
        pdf.heading(f"No model answer or rubric: rubric.toml has no entry [{question.grade_id}].", 10, "I", GREY)
    pdf.ln(2)
    answers = [written.answer(s, question) for s in written.students]
    missing = sum(a.text is None for a in answers)
    pdf.heading(f"Answers ({len(answers)} students, {missing} without an answer)", 13, after=2)
    for n, (student, answer) in enumerate(zip(written.students, answers, strict=True), 1):
        pdf.rule()
        pdf.heading(f"{n}. {student.shown}", 10.5, "B", (60, 60, 60))
        if answer.text is None:
            pdf.heading(f"({answer.note})", 10, "I", GREY)
        else:
            pdf.markdown(answer.text, 10.5)
        pdf.ln(1)
    return bytes(pdf.output())


# ---------------------------------------------------------------- per student, in Gradescope's layout


@dataclasses.dataclass
class Pages:
    """One student's pages in the class's document (0-based indexes), in the order of their PDF: the cover, each
    question's page, then the continuation pages; and the questions whose answer ran onto continuation pages."""

    order: list[int] = dataclasses.field(default_factory=list)
    continued: list[str] = dataclasses.field(default_factory=list)  # grade_ids


def _cover(pdf: Document, written: Written, student: Student | None) -> None:
    pdf.heading(written.title, 18, after=1)
    pdf.heading("Written answers" + ("" if student else ": template"), 12, "", GREY)
    for label, box, value in (
        ("Name", NAME_BOX, student.name if student else ""),
        ("Student ID", ID_BOX, student.id if student else ""),
    ):
        x, y, w, h = box
        pdf.set_font("sans", "B", 11)
        pdf.set_xy(MARGIN, y + (h - 5) / 2)
        pdf.cell(28, 5, label)
        pdf.set_draw_color(60, 60, 60)
        pdf.rect(x, y, w, h)
        pdf.set_font("sans", "", 12)
        pdf.set_xy(x + 2, y + (h - 6) / 2)
        pdf.cell(w - 4, 6, value)
    pdf.set_xy(MARGIN, ID_BOX[1] + ID_BOX[3] + 12)
    pdf.heading("Questions, one per page", 12, after=2)
    for n, q in enumerate(written.questions, 2):
        pdf.set_font("sans", "", 10.5)
        pdf.cell(30, 6, f"page {n}")
        pdf.cell(0, 6, f"{q.title} ({_points(q.points)}): {q.grade_id}", new_x="LMARGIN", new_y="NEXT")
    pdf.ln(4)
    _note(
        pdf,
        f"One page per question, in this order, as in the template of {written.assignment}. An answer longer than "
        "its page continues on pages after the last question.",
    )


def _question_head(pdf: Document, written: Written, question: Question, continued: bool = False) -> float:
    """The top of a question's page; returns where its answer box starts (the same on every student's page)."""
    pdf.set_font("sans", "B", 14)
    pdf.cell(0, 7, question.title + (" (continued)" if continued else ""), new_x="LMARGIN", new_y="NEXT")
    pdf.heading(f"{_points(question.points)} · {question.grade_id} · {written.title}", 9, "", GREY, after=2)
    if not continued:
        pdf.markdown(question.text, 9.5, GREY)
        pdf.ln(2)
        pdf.set_font("sans", "B", 10)
        pdf.cell(0, 5, "Answer", new_x="LMARGIN", new_y="NEXT")
    return pdf.get_y() + 1


def _note(pdf: Document, text: str) -> None:
    pdf.set_font("sans", "I", 9)
    pdf.set_text_color(*GREY)
    pdf.multi_cell(0, 4.5, text, new_x="LMARGIN", new_y="NEXT", align="L")
    pdf.set_text_color(*INK)


class StudentDocument(Document):
    """The class's document in Gradescope's layout: a cover, then a page per question whose answer box reaches
    the bottom of the page. An answer that runs past its box goes on over pages of its own (:meth:`header` draws
    their head), which :func:`student_pdfs` moves after the last question."""

    def __init__(self, written: Written):
        super().__init__()
        self.written = written
        self.answering: Question | None = None  # the question whose answer runs over (None: no continuation)
        self.page_label = ""  # the footer's right: the page in the student's PDF

    def header(self):
        if self.answering is None:
            return
        self.footer_text = f"{self.written.assignment} · {self.answering.title} (continued)"
        self.page_label = "continued"
        left, right = self.l_margin, self.r_margin
        self.set_margins(MARGIN, MARGIN, MARGIN)
        top = _question_head(self, self.written, self.answering, continued=True)
        self.box(top)
        self.set_left_margin(left)
        self.set_right_margin(right)
        self.set_xy(left, top + PAD)

    def page_text(self) -> str:
        return self.page_label

    def box(self, top: float) -> None:
        self.set_draw_color(*RULE)
        self.rect(MARGIN, top, self.w - 2 * MARGIN, self.h - MARGIN - top)

    def question_page(self, question: Question, number: int, answer: Answer | None) -> list[int]:
        """A question's page (the ``number``-th page of a student's PDF) with ``answer`` in its box (none: the
        template's empty box); returns the pages it took, the first being the question's page."""
        self.add_page()
        first = self.page
        self.footer_text, self.page_label = f"{self.written.assignment} · {question.title}", f"page {number}"
        top = _question_head(self, self.written, question)
        self.box(top)
        self.set_margins(MARGIN + PAD, MARGIN, MARGIN + PAD)
        self.set_xy(MARGIN + PAD, top + PAD)
        if answer is not None and answer.text is None:
            _note(self, f"({answer.note})")
        elif answer is not None:
            self.answer(question, answer.text)
        self.answering = None
        self.set_margins(MARGIN, MARGIN, MARGIN)
        self.set_auto_page_break(True, MARGIN)
        return list(range(first, self.page + 1))

    def answer(self, question: Question, text: str) -> None:
        """Draw an answer in its box: as large as fits (:data:`SIZES`), else at the smallest size with a note at
        the box's bottom, running on over continuation pages."""
        self.set_auto_page_break(True, MARGIN + PAD)
        draw = self.drawing(text, SIZES[0])
        if self.roughly_fits(text, SIZES[0]):
            draw(self, SIZES[0])
            return
        size = next((s for s in SIZES if self.trial(draw, s) is False), None)
        if size is not None:
            draw(self, size)
            return
        y = self.get_y()
        self.set_xy(MARGIN + PAD, self.h - MARGIN - PAD - 5)
        _note(self, CONTINUED)
        self.set_xy(MARGIN + PAD, y)
        self.set_auto_page_break(True, MARGIN + PAD + 7)  # the note's line stays clear
        self.answering = question
        draw(self, SIZES[-1])

    def student(self, student: Student | None) -> Pages:
        """A student's pages (``None``: the template's)."""
        self.add_page()
        pages = Pages(order=[self.page])
        self.footer_text, self.page_label = self.written.assignment, "page 1"
        _cover(self, self.written, student)
        rest = []
        for n, q in enumerate(self.written.questions, 2):
            taken = self.question_page(q, n, self.written.answer(student, q) if student else None)
            pages.order.append(taken[0])
            rest += taken[1:]
            if len(taken) > 1:
                pages.continued.append(q.grade_id)
        pages.order = [p - 1 for p in pages.order + rest]
        return pages


def template_pdf(written: Written) -> bytes:
    """The layout of :func:`student_pdfs` with empty boxes: the template of a Gradescope *Exam / Quiz*."""
    pdf = StudentDocument(written)
    pdf.student(None)
    return bytes(pdf.output())


def student_pdfs(written: Written) -> dict[str, tuple[bytes, Pages]]:
    """student id -> (their PDF, its :class:`Pages`), every student of ``written``: the class drawn as one
    document, then cut into one PDF per student with pypdf, continuation pages moved after the last question."""
    from pypdf import PdfReader, PdfWriter

    pdf = StudentDocument(written)
    placed = {s.id: pdf.student(s) for s in written.students}
    reader = PdfReader(io.BytesIO(bytes(pdf.output())))
    out = {}
    for student in written.students:
        pages = placed[student.id]
        writer = PdfWriter()
        for i in pages.order:
            writer.add_page(reader.pages[i])
        writer.add_metadata({"/Title": f"{written.title}: written answers of {student.id}"})
        buffer = io.BytesIO()
        writer.write(buffer)
        out[student.id] = (buffer.getvalue(), pages)
    return out
