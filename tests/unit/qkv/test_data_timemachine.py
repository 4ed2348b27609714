"""Tests of qkv.data.timemachine (D2L 9.2, 9.3) and of qkv.data.vocab (D2L 9.2.3), which it introduces."""

from __future__ import annotations

from collections import Counter

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from qkv.data import TimeMachine, Vocab, load_corpus
from qkv.data.timemachine import build_corpus, preprocess_timemachine


def reference_text(raw: str) -> str:
    """D2L 9.2.1 by hand: ASCII letters kept (lowercased), each run of anything else becomes one space."""
    out, in_gap = [], False
    for char in raw:
        if ("a" <= char <= "z") or ("A" <= char <= "Z"):
            out.append(char.lower())
            in_gap = False
        elif not in_gap:
            out.append(" ")
            in_gap = True
    return "".join(out)


@pytest.fixture(scope="module")
def book(data_dir) -> str:
    return reference_text((data_dir / "timemachine.txt").read_text(encoding="utf-8"))


# --- Vocab ------------------------------------------------------------------------------------------------------


def test_vocab_hand_case():
    tokens = ["b", "a", "b", "c", "a", "b", "d"]  # b: 3, a: 2, c: 1, d: 1
    vocab = Vocab(tokens, min_freq=2, reserved_tokens=["<pad>"])
    assert vocab.idx_to_token == ["<unk>", "<pad>", "b", "a"]
    assert len(vocab) == 4 and vocab.unk == 0
    assert vocab["b"] == 2 and vocab["c"] == 0 and vocab[["a", "zzz", "b"]] == [3, 0, 2]
    assert vocab[("a", ["b"])] == [3, [2]]
    assert vocab.to_tokens(3) == "a" and vocab.to_tokens([2, 3]) == ["b", "a"]
    assert vocab.to_tokens(torch.tensor([1, 0])) == ["<pad>", "<unk>"] and vocab.to_tokens(torch.tensor(2)) == "b"
    assert vocab.token_freqs == [("b", 3), ("a", 2), ("c", 1), ("d", 1)]


def test_vocab_flattens_sentences_and_breaks_ties_by_text():
    vocab = Vocab([["y", "x"], ["z", "x", "y"]])  # x: 2, y: 2, z: 1
    assert vocab.idx_to_token == ["<unk>", "x", "y", "z"]


def test_vocab_errors():
    vocab = Vocab(["a"])
    with pytest.raises(IndexError, match="outside"):
        vocab.to_tokens(5)
    with pytest.raises(TypeError, match="to_tokens"):
        vocab[3]
    with pytest.raises(TypeError, match="strings"):
        Vocab([["a", 1]])


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from("abcdefg"), max_size=40), st.integers(0, 4), st.randoms(use_true_random=False))
def test_vocab_properties(tokens, min_freq, rnd):
    vocab = Vocab(tokens, min_freq=min_freq)
    counts = Counter(tokens)
    assert set(vocab.idx_to_token) == {"<unk>"} | {t for t, n in counts.items() if n >= min_freq}
    assert vocab.idx_to_token[0] == "<unk>"
    freqs = [counts[t] for t in vocab.idx_to_token[1:]]
    assert freqs == sorted(freqs, reverse=True)
    assert all(vocab[vocab.to_tokens(i)] == i for i in range(len(vocab)))
    shuffled = list(tokens)
    rnd.shuffle(shuffled)
    assert Vocab(shuffled, min_freq=min_freq).idx_to_token == vocab.idx_to_token  # order-independent


# --- the corpus --------------------------------------------------------------------------------------------------


def test_preprocessing_keeps_letters_only():
    assert preprocess_timemachine("The Time-Machine, by H. G. Wells [1898]\n\nI") == "the time machine by h g wells i"


def test_char_corpus_against_an_independent_reading(data_dir, book):
    corpus, vocab = load_corpus("char", data_dir=data_dir)
    assert len(vocab) == 28  # 26 letters, the space, <unk>
    assert "".join(vocab.to_tokens(corpus)) == book
    assert book.startswith("the time machine by h g wells i the time traveller")
    assert vocab.to_tokens(1) == Counter(book).most_common(1)[0][0]


def test_word_corpus_against_an_independent_reading(data_dir, book):
    corpus, vocab = load_corpus("word", data_dir=data_dir)
    words = book.split()
    assert vocab.to_tokens(corpus) == words
    assert len(vocab) == len(set(words)) + 1
    assert vocab.to_tokens(1) == "the"


def test_windows_and_loaders(data_dir):
    torch.manual_seed(0)
    data = TimeMachine(batch_size=8, num_steps=5, num_train=40, num_val=16, data_dir=data_dir)
    corpus = torch.tensor(data.corpus)
    assert data.X.shape == data.Y.shape == (len(corpus) - 5, 5)
    for i in (0, 1, 17, len(corpus) - 6):
        assert torch.equal(data.X[i], corpus[i : i + 5]) and torch.equal(data.Y[i], corpus[i + 1 : i + 6])
    X, Y = next(iter(data.train_dataloader()))
    assert X.shape == Y.shape == (8, 5) and X.dtype == torch.long
    train_X = torch.cat([b[0] for b in data.train_dataloader()])
    assert sorted(map(tuple, train_X.tolist())) == sorted(map(tuple, data.X[:40].tolist()))
    val_X, val_Y = (torch.cat(parts) for parts in zip(*data.val_dataloader()))
    assert torch.equal(val_X, data.X[40:56]) and torch.equal(val_Y, data.Y[40:56])


def test_word_windows(data_dir):
    data = TimeMachine(batch_size=2, num_steps=3, num_train=4, num_val=2, token="word", data_dir=data_dir)
    assert data.vocab.to_tokens(data.X[0]) == ["the", "time", "machine"]
    assert data.vocab.to_tokens(data.Y[0]) == ["time", "machine", "by"]


def test_build_with_a_given_vocabulary():
    vocab = Vocab(list("ab "))
    corpus, same = build_corpus("Ab, c!", "char", vocab)
    assert same is vocab and vocab.to_tokens(corpus) == ["a", "b", " ", "<unk>", " "]


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({"token": "bpe"}, ValueError, "token"),
        ({"num_train": 10**6}, ValueError, "windows"),
        ({"num_steps": 0}, ValueError, "num_steps"),
        ({"batch_size": "8"}, TypeError, "batch_size"),
    ],
)
def test_bad_arguments(kwargs, error, match, data_dir):
    args = {"batch_size": 8, "num_steps": 5, **kwargs}
    with pytest.raises(error, match=match):
        TimeMachine(data_dir=data_dir, **args)


def test_shuffle_uses_the_torch_seed(data_dir):
    data = TimeMachine(batch_size=4, num_steps=2, num_train=32, num_val=0, data_dir=data_dir)
    orders = []
    for _ in range(2):
        torch.manual_seed(3)
        orders.append(torch.cat([b[0] for b in data.train_dataloader()]))
    assert torch.equal(*orders)
    assert not torch.equal(orders[0], data.X[:32])
