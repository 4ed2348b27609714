"""Panel 4 of the chapter at a glance: Bahdanau attention, the map of the trained 11.4 translator (D2L 11.4)."""

from __future__ import annotations

import functools

import torch

from qkv.figures.chapter._common import check_lang, fonts, new_figure, title

SECTION = "bahdanau-attention"
SENTENCE = "i'm home ."

TEXT = {
    "en": {
        "title": "4 · Bahdanau: each output step queries every encoder state",
        "xlabel": "source tokens (keys: encoder states)",
        "ylabel": "decoding step (token emitted)",
        "note": "the translator of section 11.4, trained as D2L trains it",
    },
    "zh": {
        "title": "4 · Bahdanau 注意力：每个解码步都查询全部编码器状态",
        "xlabel": "源句词元（键：编码器状态）",
        "ylabel": "解码步（输出的词元）",
        "note": "第 11.4 节的翻译模型，按 D2L 的设置训练",
    },
}


@functools.cache
def attention_map(sentence: str = SENTENCE):
    """The trained 11.4 translator's weights for ``sentence``: ``(weights (steps, T_valid), source tokens, emitted
    tokens)``, one row per decoding step up to the one that emitted ``<eos>``, the source cut to its valid tokens.

    The model comes from :func:`qkv.recipes.translate.train_bahdanau`, which loads the cached weights of section 11.4
    (and trains them once, in D2L's setting, where no cache has them)."""
    from qkv.recipes.translate import train_bahdanau
    from qkv.translate import translate

    fitted, data = train_bahdanau(progress=False, log=lambda *args: None)
    ((translation, steps),) = translate(fitted.model, data, [sentence])
    weights = torch.cat([w[0] for w in steps], dim=1)[0]  # n x (1, 1, T) -> (1, n, T) -> (n, T)
    src_ids = data.build([sentence], ["."])[0][0]  # (T,): the source, padded
    src_tokens = data.src_vocab.to_tokens(src_ids.tolist())
    n_valid = src_tokens.index("<eos>") + 1
    return weights[:, :n_valid].detach().clone(), src_tokens[:n_valid], translation.split() + ["<eos>"]


def draw(lang: str = "en", fig=None):
    """Draw panel 4 into ``fig`` (or a new figure) and return the figure."""
    t = TEXT[check_lang(lang)]
    weights, src, out = attention_map()
    with fonts(lang):
        fig = new_figure(fig)
        title(fig, t["title"])
        ax = fig.subplots()
        image = ax.imshow(weights.numpy(), cmap="Reds", vmin=0, vmax=1)
        ax.set_xticks(range(len(src)), src)
        ax.set_yticks(range(len(out)), out)
        ax.set_xlabel(t["xlabel"])
        ax.set_ylabel(t["ylabel"])
        for i in range(weights.shape[0]):
            for j in range(weights.shape[1]):
                value = float(weights[i, j])
                ax.text(
                    j,
                    i,
                    f"{value:.2f}",
                    ha="center",
                    va="center",
                    fontsize=7,
                    color="white" if value > 0.6 else "black",
                )
        fig.colorbar(image, ax=ax, shrink=0.8)
        ax.set_title(t["note"], fontsize=7.5, style="italic")
    return fig
