"""H. G. Wells' *The Time Machine* as a language-model corpus (D2L 9.2, 9.3).

The text is reduced to lowercase letters and single spaces (every run of
non-letters becomes one space), split into characters or words, and mapped to
indices by a :class:`~qkv.data.vocab.Vocab`. Training examples are all windows
of ``num_steps + 1`` consecutive tokens: the input is the first ``num_steps``,
the label the last ``num_steps`` (the input shifted by one).

Shape letters: B batch, T = num_steps.
"""

from __future__ import annotations

import re

import torch

from qkv._validate import int_in
from qkv.data._fetch import DataFile, locate
from qkv.data.vocab import Vocab

__all__ = [
    "TIME_MACHINE",
    "TimeMachine",
    "load_corpus",
    "build_corpus",
    "preprocess_timemachine",
    "tokenize_timemachine",
]

TIME_MACHINE = DataFile(
    name="timemachine.txt (The Time Machine, D2L's language-model corpus)",
    relpath="timemachine.txt",
    checksum="090b5e7e70c295757f55df93cb0a180b9691891a",
    url="http://d2l-data.s3-accelerate.amazonaws.com/timemachine.txt",
)

_NON_LETTERS = re.compile(r"[^A-Za-z]+")
_TOKEN_KINDS = ("char", "word")


def preprocess_timemachine(text: str) -> str:
    """Replace every run of non-letters by one space and lowercase (D2L 9.2.1)."""
    return _NON_LETTERS.sub(" ", text).lower()


def tokenize_timemachine(text: str, token: str = "char") -> list[str]:
    """Characters (spaces included) or whitespace-separated words of preprocessed text (D2L 9.2.2)."""
    if token == "char":
        return list(text)
    if token == "word":
        return text.split()
    raise ValueError(f"token must be one of {_TOKEN_KINDS}, got {token!r}")


def load_corpus(token: str = "char", data_dir=None) -> tuple[list[int], Vocab]:
    """The whole book as a list of token indices, and its vocabulary (D2L 9.2.4).

    ``token`` is ``"char"`` or ``"word"``; the file is looked up as :func:`qkv.data.locate` does.
    """
    if token not in _TOKEN_KINDS:
        raise ValueError(f"token must be one of {_TOKEN_KINDS}, got {token!r}")
    with open(locate(TIME_MACHINE, data_dir), encoding="utf-8") as f:
        raw_text = f.read()
    return build_corpus(raw_text, token)


def build_corpus(raw_text: str, token: str = "char", vocab: Vocab | None = None) -> tuple[list[int], Vocab]:
    """Preprocess, tokenize and index raw text; build the vocabulary unless one is given (D2L 9.2.4)."""
    tokens = tokenize_timemachine(preprocess_timemachine(raw_text), token)
    if vocab is None:
        vocab = Vocab(tokens)
    return vocab[tokens], vocab


class TimeMachine:
    """Language-model windows of *The Time Machine* (D2L 9.3.3).

    ``TimeMachine(batch_size, num_steps, num_train=10000, num_val=5000, token="char", data_dir=None)``.
    ``corpus`` holds the token indices of the book, ``vocab`` the vocabulary,
    ``X`` and ``Y`` (n, T) every window and its shift by one token. Window ``i``
    starts at token ``i``; the first ``num_train`` windows train, the next
    ``num_val`` validate.
    """

    def __init__(
        self,
        batch_size: int,
        num_steps: int,
        num_train: int = 10000,
        num_val: int = 5000,
        token: str = "char",
        data_dir=None,
    ):
        for name, value, minimum in (
            ("batch_size", batch_size, 1),
            ("num_steps", num_steps, 1),
            ("num_train", num_train, 1),
            ("num_val", num_val, 0),
        ):
            int_in(value, name, minimum)
        self.batch_size, self.num_steps = batch_size, num_steps
        self.num_train, self.num_val, self.token = num_train, num_val, token
        self.corpus, self.vocab = load_corpus(token, data_dir)
        num_windows = len(self.corpus) - num_steps
        if num_train + num_val > num_windows:
            raise ValueError(
                f"num_train + num_val = {num_train + num_val} is more than the {num_windows} windows of "
                f"{num_steps + 1} {token} tokens in the book; ask for fewer examples or shorter windows"
            )
        windows = torch.tensor(self.corpus).unfold(0, num_steps + 1, 1)  # (len,) -> (len - T, T + 1)
        self.X, self.Y = windows[:, :-1], windows[:, 1:]  # (n, T), (n, T)

    def build(self, raw_text: str, vocab: Vocab | None = None) -> tuple[list[int], Vocab]:
        """Token indices and vocabulary of ``raw_text`` with this data's kind of token (D2L 9.2.4)."""
        return build_corpus(raw_text, self.token, vocab)

    def get_tensorloader(self, tensors, train: bool, indices=slice(0, None)):
        """A DataLoader over ``tensors[i][indices]``, shuffled when ``train`` (D2L 3.3.3)."""
        dataset = torch.utils.data.TensorDataset(*(a[indices] for a in tensors))
        return torch.utils.data.DataLoader(dataset, self.batch_size, shuffle=train)

    def get_dataloader(self, train: bool):
        """Windows ``[0, num_train)`` shuffled, or ``[num_train, num_train + num_val)`` in order (D2L 9.3.3)."""
        idx = slice(0, self.num_train) if train else slice(self.num_train, self.num_train + self.num_val)
        return self.get_tensorloader([self.X, self.Y], train, idx)

    def train_dataloader(self):
        """Shuffled batches ``(X (B, T), Y (B, T))`` of training windows (D2L 9.3.3)."""
        return self.get_dataloader(train=True)

    def val_dataloader(self):
        """Batches ``(X, Y)`` of validation windows, in order (D2L 9.3.3)."""
        return self.get_dataloader(train=False)
