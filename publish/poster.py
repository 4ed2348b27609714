"""The chapter at a glance as a printable poster: the ten panels on one A3 landscape page, as a PDF and a PNG.

``make book`` builds it (``publish.build_book`` calls :func:`build` before Jupyter Book runs) into the staged
sources, ``book/_poster/``, where ``book/chapter-at-a-glance.md`` links it; Sphinx copies the files it links into the
site. The panels are those of :mod:`qkv.figures.chapter`, drawn into the cells of a 3 x 4 grid. A stamp beside the
files records a hash of what drew them (the ``qkv`` sources, this file, the smoke setting of
:mod:`qkv.recipes.weights`), so that a warm rebuild redraws nothing. Run alone: ``python -m publish.poster [OUT_DIR]``.
"""

from __future__ import annotations

import hashlib
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: A3 landscape, in inches (420 x 297 mm).
A3_LANDSCAPE = (420 / 25.4, 297 / 25.4)
GRID = (3, 4)
NAME = "chapter-at-a-glance-poster"
PNG_DPI = 150

TEXT = {
    "en": {
        "title": "Attention mechanisms and Transformers: chapter 11 at a glance",
        "footer": (
            "Every panel is drawn by the course library qkv when the book is built: the Bahdanau and multi-head "
            "panels from the models the sections train, the timings measured on the building machine, the "
            "encoding and the masks from qkv.positional and qkv.pretraining.\nAfter Dive into Deep Learning "
            "(Zhang, Lipton, Li and Smola), chapter 11. Read each panel's section in the book."
        ),
    },
    "zh": {
        "title": "注意力机制与 Transformer：第 11 章一览",
        "footer": (
            "每幅小图都由课程库 qkv 在构建本书时绘制：Bahdanau 与多头注意力两图来自各节训练的模型，计时在构建的机器上"
            "实测，\n位置编码与掩码取自 qkv.positional 和 qkv.pretraining。内容依据《动手学深度学习》第 11 章。"
        ),
    },
}


def draw(lang: str = "en"):
    """The poster as a matplotlib ``Figure`` of A3 landscape size, one panel per cell of a 3 x 4 grid (the last
    two cells hold the footer)."""
    import matplotlib.pyplot as plt

    from qkv.figures import chapter
    from qkv.figures.chapter._common import check_lang, fonts

    text = TEXT[check_lang(lang)]
    with fonts(lang):
        fig = plt.figure(figsize=A3_LANDSCAPE, layout="constrained")
        fig.suptitle(text["title"], fontsize=18, weight="bold")
        cells = fig.subfigures(*GRID, wspace=0.02, hspace=0.02).ravel()
        for module, cell in zip(chapter.panels(), cells, strict=False):
            module.draw(lang, fig=cell)
        footer = cells[-2:]
        for cell in footer:
            cell.set_facecolor("white")
        footer[0].text(0.05, 0.5, text["footer"], fontsize=9, va="center", ha="left", wrap=True, color="0.25")
    return fig


def key(lang: str = "en") -> str:
    """A hash of what the poster is drawn from: the ``qkv`` sources, this module, the language and the smoke
    setting (``QKV_TRAIN_SMOKE``), under which the trained panels come from other weights."""
    h = hashlib.sha256()
    sources = sorted((ROOT / "lib" / "qkv").rglob("*.py")) + [Path(__file__).resolve()]
    for path in sources:
        h.update(path.relative_to(ROOT).as_posix().encode())
        h.update(path.read_bytes())
    from qkv.recipes.weights import smoke_batches  # the one reader of the setting

    h.update(f"{lang}|{smoke_batches()}".encode())
    return h.hexdigest()


def save(fig, out: Path, title: str = TEXT["en"]["title"]) -> list[Path]:
    """Write the poster ``fig`` as ``out/NAME.pdf`` and ``out/NAME.png``; return the two paths."""
    pdf, png = out / f"{NAME}.pdf", out / f"{NAME}.png"
    fig.savefig(pdf, metadata={"Title": title, "CreationDate": None})
    fig.savefig(png, dpi=PNG_DPI, metadata={"Software": None})
    return [pdf, png]


def build(out: Path, lang: str = "en", log=print) -> list[Path]:
    """Write ``NAME.pdf`` and ``NAME.png`` (and the stamp) under ``out`` unless the stamp says they are up to date;
    return the two paths."""
    import matplotlib

    matplotlib.use("Agg")  # the poster is written to files, never shown
    import matplotlib.pyplot as plt

    out.mkdir(parents=True, exist_ok=True)
    pdf, png, stamp = out / f"{NAME}.pdf", out / f"{NAME}.png", out / f"{NAME}.key"
    wanted = key(lang)
    if pdf.exists() and png.exists() and stamp.exists() and stamp.read_text() == wanted:
        return [pdf, png]
    t0, c0 = time.perf_counter(), time.process_time()
    fig = draw(lang)
    try:
        save(fig, out, TEXT[lang]["title"])
    finally:
        plt.close(fig)
    stamp.write_text(wanted)
    log(f"[poster] {pdf.name} and {png.name}: {time.perf_counter() - t0:.1f} s ({time.process_time() - c0:.1f} s CPU)")
    return [pdf, png]


if __name__ == "__main__":
    build(Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "_build" / "poster")
