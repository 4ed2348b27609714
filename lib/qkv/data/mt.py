"""The English-French translation data (D2L 10.5).

Each line of ``fra.txt`` is ``english<TAB>french``. As in D2L, the text is
normalised (narrow and ordinary no-break spaces become spaces, letters are
lowercased, a space is put before ``, . ! ?`` when none is there), split into
word tokens on spaces, and ``<eos>`` ends every sentence. Each sentence is then
cut or padded with ``<pad>`` to ``num_steps`` tokens; the target also gets a
leading ``<bos>``, so its array has ``num_steps + 1`` columns from which the
decoder input (all but the last) and the label (all but the first) are taken.
Vocabularies keep the tokens seen at least twice in those arrays.

Token ids differ from D2L's. D2L 1.0.3's ``Vocab`` sorts all its tokens alphabetically (``<unk>`` and the reserved
tokens among them), so ``<unk>`` is not index 0 there. We keep :class:`qkv.data.Vocab`'s numbering, shared by every
data set of the course: ``<unk>`` at 0, the reserved tokens next, then the other tokens from the most frequent.
The vocabularies hold the same tokens as D2L's (194 English and 214 French at the defaults), so the numbering is a
permutation of the embedding rows: it changes which random vector each token starts from, not what a model can
learn. Translations and BLEU are comparable with D2L's; printed token ids are not.

Shape letters: B batch, T = num_steps.
"""

from __future__ import annotations

import itertools
import re

import torch

from qkv._validate import int_in, positive_int
from qkv.data._fetch import DataFile, locate
from qkv.data.vocab import Vocab

__all__ = ["FRA_ENG", "MTFraEng", "preprocess_fra_eng", "tokenize_fra_eng"]

FRA_ENG = DataFile(
    name="fra.txt (D2L's English-French sentence pairs)",
    relpath="fra-eng/fra.txt",
    checksum="c43f99dce27311d3afd4d3e0716848194cfcc103",
    url="http://d2l-data.s3-accelerate.amazonaws.com/fra-eng.zip",
    archive_checksum="94646ad1522d915e7b0f9296181140edcf86a4f5",
    member="fra-eng/fra.txt",
    alt_relpaths=("fra.txt",),
)

SRC_RESERVED = ("<pad>", "<eos>")
TGT_RESERVED = ("<pad>", "<bos>", "<eos>")

# A punctuation mark with a character other than a space right before it.
_GLUED_PUNCT = re.compile(r"(?<=[^ ])([,.!?])")


def preprocess_fra_eng(text: str) -> str:
    """Normalise raw ``fra.txt`` text as D2L 10.5.1 does.

    U+202F and U+00A0 become spaces; a space is inserted before each of
    ``, . ! ?`` whose preceding character is not a space; everything is lowercased.
    """
    text = text.replace("\u202f", " ").replace("\xa0", " ")
    return _GLUED_PUNCT.sub(r" \1", text).lower()


def tokenize_fra_eng(text: str, num_lines: int | None = None) -> tuple[list[list[str]], list[list[str]]]:
    """Word tokens of the pairs on the first ``num_lines`` lines of preprocessed text (D2L 10.5.2).

    Lines without exactly one tab are skipped. Tokens are split on single spaces,
    empty tokens dropped, and ``<eos>`` appended. Returns ``(src, tgt)``, two
    lists of token lists.
    """
    src, tgt = [], []
    for line in itertools.islice(text.split("\n"), num_lines):
        parts = line.split("\t")
        if len(parts) == 2:
            src.append([t for t in parts[0].split(" ") if t] + ["<eos>"])
            tgt.append([t for t in parts[1].split(" ") if t] + ["<eos>"])
    return src, tgt


def _pad_or_trim(tokens: list[str], num_steps: int) -> list[str]:
    return tokens[:num_steps] + ["<pad>"] * (num_steps - len(tokens))


class MTFraEng:
    """English-to-French translation pairs, as tensors and data loaders (D2L 10.5).

    ``MTFraEng(batch_size, num_steps=9, num_train=512, num_val=128, data_dir=None)``.
    ``arrays`` is the tuple ``(src (n, T), tgt_input (n, T), src_valid_len (n,),
    label (n, T))`` of every pair; ``src_vocab`` and ``tgt_vocab`` are the
    vocabularies (``min_freq=2``; ``<pad>``, ``<eos>`` and, on the target side,
    ``<bos>`` always present). Batches have the same four fields.

    Like D2L, which stops reading after line ``num_train + num_val`` counted from
    0, the first ``num_train + num_val + 1`` lines are used: the first
    ``num_train`` pairs train and the remaining ``num_val + 1`` validate. This
    keeps D2L's vocabulary sizes (194 English and 214 French tokens at the defaults).
    ``data_dir`` is searched for ``fra-eng/fra.txt`` first (see :func:`qkv.data.locate`).
    """

    def __init__(self, batch_size: int, num_steps: int = 9, num_train: int = 512, num_val: int = 128, data_dir=None):
        self.batch_size = positive_int(batch_size, "batch_size")
        self.num_steps = positive_int(num_steps, "num_steps")
        self.num_train = positive_int(num_train, "num_train")
        self.num_val = int_in(num_val, "num_val", 0)
        path = locate(FRA_ENG, data_dir)
        with open(path, encoding="utf-8") as f:
            raw_text = "".join(itertools.islice(f, num_train + num_val + 1))
        src, tgt = tokenize_fra_eng(preprocess_fra_eng(raw_text))
        if len(src) < num_train:
            raise ValueError(f"num_train = {num_train} is more than the {len(src)} pairs read from {path}")
        self.arrays, self.src_vocab, self.tgt_vocab = self._build_arrays(src, tgt)

    def _build_arrays(self, src, tgt, src_vocab=None, tgt_vocab=None):
        """Token lists -> the four arrays, building the vocabularies unless given (D2L 10.5.3)."""
        if not src or len(src) != len(tgt):
            raise ValueError(f"need as many source as target sentences, at least one; got {len(src)} and {len(tgt)}")
        src_rows = [_pad_or_trim(s, self.num_steps) for s in src]
        tgt_rows = [["<bos>"] + _pad_or_trim(t, self.num_steps) for t in tgt]
        if src_vocab is None:
            src_vocab = Vocab(src_rows, min_freq=2, reserved_tokens=SRC_RESERVED)
        if tgt_vocab is None:
            tgt_vocab = Vocab(tgt_rows, min_freq=2, reserved_tokens=TGT_RESERVED)
        src_array = torch.tensor(src_vocab[src_rows], dtype=torch.long)  # (n, T)
        tgt_array = torch.tensor(tgt_vocab[tgt_rows], dtype=torch.long)  # (n, T + 1)
        src_valid_len = (src_array != src_vocab["<pad>"]).sum(dim=1).to(torch.int32)  # (n, T) -> (n,)
        arrays = (src_array, tgt_array[:, :-1], src_valid_len, tgt_array[:, 1:])
        return arrays, src_vocab, tgt_vocab

    def build(self, src_sentences: list[str], tgt_sentences: list[str]):
        """Batch of raw sentence pairs for prediction, with this data's vocabularies (D2L 10.5.4).

        Returns ``(src (B, T), tgt_input (B, T), src_valid_len (B,), label (B, T))``;
        words not in a vocabulary map to ``<unk>``.
        """
        if isinstance(src_sentences, str) or isinstance(tgt_sentences, str):
            raise TypeError("build() takes two lists of sentences, not single strings; wrap them in lists")
        if len(src_sentences) != len(tgt_sentences):
            raise ValueError(
                f"build() needs one target per source sentence, got {len(src_sentences)} and {len(tgt_sentences)}"
            )
        lines = []
        for s, t in zip(src_sentences, tgt_sentences):
            if any(c in s + t for c in "\t\n"):
                raise ValueError(f"sentences must not contain tabs or newlines: {s!r}, {t!r}")
            lines.append(f"{s}\t{t}")
        src, tgt = tokenize_fra_eng(preprocess_fra_eng("\n".join(lines)))
        arrays, _, _ = self._build_arrays(src, tgt, self.src_vocab, self.tgt_vocab)
        return arrays

    def get_tensorloader(self, tensors, train: bool, indices=slice(0, None)):
        """A DataLoader over ``tensors[i][indices]``, shuffled when ``train`` (D2L 3.3.3)."""
        dataset = torch.utils.data.TensorDataset(*(a[indices] for a in tensors))
        return torch.utils.data.DataLoader(dataset, self.batch_size, shuffle=train)

    def get_dataloader(self, train: bool):
        """Training loader (the first ``num_train`` pairs, shuffled) or validation loader (the rest) (D2L 10.5.4)."""
        idx = slice(0, self.num_train) if train else slice(self.num_train, None)
        return self.get_tensorloader(self.arrays, train, idx)

    def train_dataloader(self):
        """Shuffled batches ``(src, tgt_input, src_valid_len, label)`` of the training pairs (D2L 10.5.4)."""
        return self.get_dataloader(train=True)

    def val_dataloader(self):
        """Batches of the validation pairs, in file order (D2L 10.5.4)."""
        return self.get_dataloader(train=False)
