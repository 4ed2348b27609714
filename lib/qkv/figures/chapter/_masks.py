"""Drawing a boolean attention mask (True: the query may attend to the key) for panels 9 and 10."""

from __future__ import annotations

from matplotlib.colors import ListedColormap

from qkv.figures.chapter._common import COLORS

#: False (hidden) in grey, True (attended) in blue.
MASK_CMAP = ListedColormap([COLORS["mask"], "#5b8fd6"])


def show_mask(ax, mask, keys, queries, title: str, fontsize: float = 7) -> None:
    """Draw ``mask`` (Q, K) on ``ax``: rows the queries, columns the keys, grey where the mask hides a key."""
    ax.imshow(mask.to(int).numpy(), cmap=MASK_CMAP, vmin=0, vmax=1)
    ax.set_xticks(range(len(keys)), keys, fontsize=fontsize - 1, rotation=90)
    ax.set_yticks(range(len(queries)), queries, fontsize=fontsize - 1)
    ax.tick_params(length=0)
    ax.set_xticks([x - 0.5 for x in range(1, len(keys))], minor=True)
    ax.set_yticks([y - 0.5 for y in range(1, len(queries))], minor=True)
    ax.grid(which="minor", color="white", lw=0.8)
    ax.tick_params(which="minor", length=0)
    ax.set_title(title, fontsize=fontsize)
