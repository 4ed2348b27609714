"""The chapter at a glance (``book/chapter-at-a-glance.md``, its Chinese edition, ``qkv.figures.chapter``, the poster).

Each panel's numbers are checked against an independent reference (a closed form, PyTorch itself, the qkv function
the section teaches), and what a panel draws against those numbers; every label in both languages must render
without a missing glyph (matplotlib warns, or for mathtext logs, and substitutes a box: "tofu"); the poster must be
one A3 landscape page of the ten panels; and the two pages must stay out of the sections' machinery.
"""

from __future__ import annotations

import logging
import math
import re
import warnings

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402
from matplotlib.image import AxesImage  # noqa: E402

from course import notebooks as nbs  # noqa: E402
from course.section import CHAPTER_PAGES, sections  # noqa: E402
from publish import poster  # noqa: E402
from qkv import pretraining  # noqa: E402
from qkv.figures import chapter  # noqa: E402

#: How matplotlib reports a character that no font of the text has: a warning from the Agg and PDF backends, a log
#: record from mathtext (for text inside $...$).
MISSING_GLYPH = re.compile(r"[Gg]lyph .* missing from|does not have a glyph")


class _Records(logging.Handler):
    def __init__(self):
        super().__init__(logging.WARNING)
        self.messages = []

    def emit(self, record):
        self.messages.append(record.getMessage())


def render_without_tofu(fig, formats=("png",), **savefig):
    """Render ``fig`` in each format; fail on any missing-glyph warning or log record."""
    import io

    records = _Records()
    logger = logging.getLogger("matplotlib")
    logger.addHandler(records)
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("error", message=r".*[Gg]lyph .* missing from.*")
            for fmt in formats:
                fig.savefig(io.BytesIO(), format=fmt, **savefig)
    finally:
        logger.removeHandler(records)
    tofu = [m for m in records.messages if MISSING_GLYPH.search(m)]
    assert not tofu, f"characters drawn as boxes (no font has them): {tofu[:5]}"


def _images(fig):
    return [a for ax in fig.axes for a in ax.get_children() if isinstance(a, AxesImage)]


# --- the tofu check itself ---------------------------------------------------------------------------------------


def test_the_tofu_check_fails_on_chinese_without_a_cjk_font():
    fig = plt.figure(figsize=(2, 1))
    with plt.rc_context({"font.family": ["DejaVu Sans"]}):
        fig.text(0.1, 0.5, "注意力")
        fig.text(0.1, 0.2, "$x$ 注意力")
    try:
        with pytest.raises((AssertionError, UserWarning)):
            render_without_tofu(fig)
    finally:
        plt.close(fig)


# --- every panel, in Chinese (the poster test below renders the English ones) ------------------------------------


def test_chinese_panels_draw_every_label_with_a_font_that_has_it():
    for i, module in enumerate(chapter.panels(), start=1):
        fig = module.draw("zh")
        try:
            assert fig.axes and any(ax.texts or ax.images or ax.patches or ax.lines for ax in fig.axes), i
            texts = [t.get_text() for t in fig.findobj(matplotlib.text.Text)]
            assert any(re.search(r"[\u4e00-\u9fff]", t) for t in texts), f"panel {i} has no Chinese label"
            render_without_tofu(fig, dpi=30)
        finally:
            plt.close(fig)


def test_a_language_that_is_not_there_is_refused_with_the_choices():
    with pytest.raises(ValueError, match=r"lang must be one of \('en', 'zh'\)"):
        chapter.panel(1).draw("fr")
    with pytest.raises(ValueError, match="panels 1 to 10"):
        chapter.panel(11)


# --- each panel's numbers ------------------------------------------------------------------------------------------


def test_panel_2_is_a_gaussian_kernel_softmax_and_its_weighted_sum():
    p = chapter.panel(2)
    weights, output = p.lookup()
    keys, values = torch.tensor(p.KEYS, dtype=torch.float64), torch.tensor(p.VALUES, dtype=torch.float64)
    expected = torch.softmax(-((p.QUERY - keys) ** 2) / (2 * p.SIGMA**2), dim=0)  # Gaussian kernel, D2L 11.2
    torch.testing.assert_close(weights, expected)
    assert output == pytest.approx(float(expected @ values))


def test_panel_3_masks_then_normalises_and_scaling_keeps_the_spread_near_one():
    p = chapter.panel(3)
    s = p.steps()
    w = s["weights"]
    assert torch.all(w[:, p.VALID :] == 0), "masked keys get exactly zero weight"
    torch.testing.assert_close(w[:, : p.VALID], torch.softmax(s["scores"][:, : p.VALID], dim=-1))
    assert torch.isnan(s["masked"][:, p.VALID :]).all() and not torch.isnan(s["masked"][:, : p.VALID]).any()
    raw, scaled = p.spreads()
    for d, r, c in zip(p.DIMS, raw, scaled, strict=True):
        assert r == pytest.approx(math.sqrt(d), rel=0.1) and c == pytest.approx(1, rel=0.1), d


def test_panel_4_shows_the_translators_weights_whose_rows_sum_to_one():
    p = chapter.panel(4)
    weights, source, emitted = p.attention_map()
    assert weights.shape == (len(emitted), len(source)) and source[-1] == "<eos>" and emitted[-1] == "<eos>"
    torch.testing.assert_close(weights.sum(-1), torch.ones(len(emitted)), atol=1e-5, rtol=0)
    fig = p.draw("en")
    try:
        (image,) = _images(fig)
        torch.testing.assert_close(torch.as_tensor(image.get_array().data), weights.to(torch.float32))
        assert [t.get_text() for t in fig.axes[0].get_xticklabels()] == source
    finally:
        plt.close(fig)


def test_panel_5_shows_one_distribution_per_query_for_each_of_four_heads():
    weights, offsets = chapter.panel(5).heads()
    assert weights.shape[0] == len(offsets) == 4
    torch.testing.assert_close(weights.sum(-1), torch.ones(weights.shape[:-1]), atol=1e-5, rtol=0)


def test_panel_6_plots_the_measured_times_and_their_fitted_exponents():
    rows = [
        dict(name=name, n=n, time_ms=c * n**k, status="ok", vary="n")
        for name, c, k in (("ours (11.3)", 1e-5, 2.0), ("GRU", 1e-2, 1.0))
        for n in (128, 256, 512, 1024)
    ]
    from qkv.costlab import fit_sweep

    fits = fit_sweep(rows)
    assert fits["ours (11.3)"][1] == pytest.approx(2.0) and fits["GRU"][1] == pytest.approx(1.0)
    fig = chapter.panel(6).draw("en", measured=(rows, fits))
    try:
        plot = fig.axes[1]
        lines = {line.get_label(): line for line in plot.get_lines()}
        assert set(lines) == {"ours (11.3): time ∝ n^2.00", "GRU: time ∝ n^1.00"}
        assert list(lines["ours (11.3): time ∝ n^2.00"].get_ydata()) == [r["time_ms"] for r in rows[:4]]
    finally:
        plt.close(fig)


def test_panel_7_draws_positional_encodings_table_which_is_the_sinusoid():
    p = chapter.panel(7)
    P = p.table()
    i = torch.arange(p.T, dtype=torch.float64)[:, None]  # (T, 1)
    j = torch.arange(0, p.N, 2, dtype=torch.float64)[None, :]  # (1, N/2)
    angle = i / 10000 ** (j / p.N)  # (T, N/2): D2L 11.6.3
    torch.testing.assert_close(P[:, 0::2].double(), torch.sin(angle), atol=1e-6, rtol=0)
    torch.testing.assert_close(P[:, 1::2].double(), torch.cos(angle), atol=1e-6, rtol=0)
    fig = p.draw("en")
    try:
        (image,) = _images(fig)
        torch.testing.assert_close(torch.as_tensor(image.get_array().data), P)
    finally:
        plt.close(fig)


def test_panel_8_counts_the_parameters_of_the_block():
    p = chapter.panel(8)
    d, f = p.NUM_HIDDENS, p.FFN_NUM_HIDDENS
    assert p.parameter_counts() == {"attention": 4 * d * d, "ffn": d * f + f + f * d + d, "norms": 2 * 2 * d}


def test_panel_9_hides_the_future_and_the_padding():
    p = chapter.panel(9)
    dec, cross = p.masks()
    assert torch.equal(dec, torch.ones(p.T_TGT, p.T_TGT, dtype=torch.bool).tril())
    assert torch.equal(cross, (torch.arange(p.T_SRC) < p.SRC_VALID).expand(p.T_TGT, p.T_SRC))
    fig = p.draw("en")
    try:
        drawn = [torch.as_tensor(im.get_array().data) for im in _images(fig)]
        assert [m.tolist() for m in drawn] == [dec.int().tolist(), cross.int().tolist()]
    finally:
        plt.close(fig)


def test_panel_10_draws_the_masks_of_qkv_pretraining():
    p = chapter.panel(10)
    masks = p.masks()
    assert torch.equal(masks["BERT"], pretraining.bidirectional_mask(p.T_BERT))
    assert torch.equal(masks["GPT"], torch.ones(p.T_GPT, p.T_GPT, dtype=torch.bool).tril())
    assert masks["ViT"].all() and masks["ViT"].shape == (p.PATCHES + 1,) * 2
    # T5 as one square, encoder first: the input seen both ways, the output causally: a prefix LM.
    torch.testing.assert_close(masks["T5"], pretraining.prefix_lm_mask(p.T_SRC + p.T_TGT, p.T_SRC))
    fig = p.draw("en")
    try:
        drawn = [torch.as_tensor(im.get_array().data).bool() for im in _images(fig)]
        assert [m.tolist() for m in drawn] == [m.tolist() for m in masks.values()]
    finally:
        plt.close(fig)


# --- the poster ----------------------------------------------------------------------------------------------------


def test_poster_is_one_a3_landscape_page_of_the_ten_panels(tmp_path):
    from matplotlib.axes import Axes

    fig = poster.draw("en")
    try:
        # Ten panels, each with something drawn and its own title, in the chapter's order; and no tofu.
        cells = [c for c in fig.subfigs if c._suptitle is not None]
        assert [c._suptitle.get_text().split(" ")[0] for c in cells] == [str(i) for i in range(1, 11)]
        assert all(any(isinstance(a, Axes) for a in c.findobj()) for c in cells)
        records = _Records()
        logging.getLogger("matplotlib").addHandler(records)
        try:
            with warnings.catch_warnings():
                warnings.filterwarnings("error", message=r".*[Gg]lyph .* missing from.*")
                pdf, png = poster.save(fig, tmp_path)
        finally:
            logging.getLogger("matplotlib").removeHandler(records)
        assert not [m for m in records.messages if MISSING_GLYPH.search(m)]
    finally:
        plt.close(fig)
    data = pdf.read_bytes()
    boxes = re.findall(rb"/MediaBox\s*\[\s*0\s+0\s+([\d.]+)\s+([\d.]+)\s*\]", data)
    assert len(boxes) == 1 and len(re.findall(rb"/Type\s*/Page\b", data)) == 1, "one page"
    width_mm, height_mm = (float(v) / 72 * 25.4 for v in boxes[0])
    assert (width_mm, height_mm) == (pytest.approx(420, abs=0.5), pytest.approx(297, abs=0.5)), "A3 landscape"
    head = png.read_bytes()[:24]
    width, height = int.from_bytes(head[16:20], "big"), int.from_bytes(head[20:24], "big")
    assert width / height == pytest.approx(420 / 297, rel=0.01) and width >= 2400
    # Up to date (the stamp holds the key of what draws it): a rebuild draws nothing.
    (tmp_path / f"{poster.NAME}.key").write_text(poster.key("en"))
    assert poster.build(tmp_path, log=lambda *a: pytest.fail("redrawn although up to date")) == [pdf, png]


# --- what the pages say about the panels ---------------------------------------------------------------------------


def _page_text(page: str) -> tuple[str, str]:
    """The markdown of ``book/<page>.md`` and its images' alt texts, each with whitespace collapsed."""
    nb = nbs.read(nbs.ROOT / "book" / f"{page}.md")
    prose = " ".join(" ".join(c.source for c in nb.cells if c.cell_type == "markdown").split())
    alts = " ".join(c.metadata.get("mystnb", {}).get("image", {}).get("alt", "") for c in nb.cells)
    return prose, alts


def test_panel_5_alt_texts_say_what_the_trained_heads_do():
    """Panel 5's alt text, both languages: each head at a fixed offset, two heads sharing one, as the model of 11.5
    learns (trained for real here: the suite's smoke runs would not learn the task)."""
    from qkv.figures import multihead_attention as mh
    from qkv.recipes import offsets

    task = mh.OffsetTask()
    with pytest.MonkeyPatch.context() as mp:
        mp.delenv("QKV_TRAIN_SMOKE", raising=False)
        model = offsets.fit_offset_reader(task).model.eval()
    offsets = [offset for offset, _ in mh.head_offsets(model, task)]
    assert len(offsets) == 4 and len(set(offsets)) == 3, f"two of the four heads share an offset: {offsets}"
    _, en = _page_text("chapter-at-a-glance")
    _, zh = _page_text("chapter-at-a-glance-zh")
    assert "each a bright diagonal stripe at a fixed offset, two heads sharing one" in en
    assert "位于固定的偏移处，其中两个头的偏移相同" in zh


def test_panel_3_and_4_texts_say_what_the_panels_show():
    """Panel 3: dividing by sqrt(d) keeps the scores' spread (not the scores, centred at 0) near 1; panel 4: the
    recurrent encoder, not the decoder, squeezed the source into one vector."""
    p = chapter.panel(3)
    g = torch.Generator().manual_seed(3)
    dots = (torch.randn(4000, 256, generator=g) * torch.randn(4000, 256, generator=g)).sum(1) / 16  # (S,)
    assert abs(float(dots.mean())) < 0.1 and float(dots.std()) == pytest.approx(1, rel=0.1), "centred at 0, spread 1"
    assert all(c == pytest.approx(1, rel=0.1) for c in p.spreads()[1])
    en, _ = _page_text("chapter-at-a-glance")
    zh, _ = _page_text("chapter-at-a-glance-zh")
    assert "dividing by $\\sqrt{d}$ keeps the scores' spread near 1" in en
    assert "能让分数的波动幅度保持在 1 附近" in zh
    assert "A recurrent encoder used to squeeze the whole source into one vector" in en
    assert "循环神经网络编码器要把整个源句压缩成一个向量" in zh
    assert "构建本页的机器" in zh and "本机" not in zh, "the timings are those of the machine that built the page"


# --- the pages -----------------------------------------------------------------------------------------------------


def test_the_pages_open_the_chapter_link_each_other_and_are_not_sections():
    toc = nbs.toc_files()
    first_section = toc.index("book/queries-keys-values")
    assert [name.split("/")[1] for name in toc[first_section - 2 : first_section]] == list(CHAPTER_PAGES)
    assert not {s.slug for s in sections()} & set(CHAPTER_PAGES), "the chapter's pages are not graded sections"
    en, zh = (nbs.read(nbs.ROOT / "book" / f"{page}.md") for page in CHAPTER_PAGES)
    for nb, other, lang in ((en, "chapter-at-a-glance-zh.md", "en"), (zh, "chapter-at-a-glance.md", "zh")):
        text = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
        assert f"]({other})" in text.split("\n## ", 1)[0], f"the {lang} page links the other edition at its top"
        assert "_poster/chapter-at-a-glance-poster.pdf" in text
        code = [c.source for c in nb.cells if c.cell_type == "code"]
        drawn = [int(m) for src in code for m in re.findall(rf"panel\((\d+)\)(?:\.draw\(\"{lang}\"|\n)", src)]
        assert sorted(set(drawn)) == list(range(1, 11)), f"the {lang} page draws the ten panels in {lang}"
        assert all("fit(" not in src for src in code), "no training on this page"
