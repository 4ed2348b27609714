"""Tests of qkv.data.mt (D2L 10.5): preprocessing, tokens, vocabularies, arrays and loaders of the fra-eng pairs."""

from __future__ import annotations

from collections import Counter

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from qkv.data import MTFraEng
from qkv.data.mt import preprocess_fra_eng, tokenize_fra_eng

NUM_TRAIN, NUM_VAL, NUM_STEPS = 512, 128, 9


def reference_preprocess(text: str) -> str:
    """D2L 10.5.1's rule, one character at a time: a space before ,.!? whose previous character is not a space."""
    text = text.replace("\u202f", " ").replace("\xa0", " ")
    out = []
    for i, char in enumerate(text):
        out.append(" " + char if i > 0 and char in ",.!?" and text[i - 1] != " " else char)
    return "".join(out).lower()


def reference_rows(path, num_lines: int, num_steps: int):
    """Padded token rows built independently of qkv: source rows and <bos>-prefixed target rows."""
    with open(path, encoding="utf-8") as f:
        lines = [next(f) for _ in range(num_lines)]
    src, tgt = [], []
    for line in reference_preprocess("".join(lines)).split("\n"):
        if line.count("\t") != 1:
            continue
        english, french = line.split("\t")
        for side, out in ((english, src), (french, tgt)):
            tokens = [t for t in side.split(" ") if t != ""] + ["<eos>"]
            tokens = tokens[:num_steps] + ["<pad>"] * max(0, num_steps - len(tokens))
            out.append(tokens)
    return src, [["<bos>"] + t for t in tgt]


def d2l_vocab_size(rows) -> int:
    """D2L's vocabulary: <unk> plus every token counted at least twice in the padded rows."""
    counts = Counter(token for row in rows for token in row)
    return len({token for token, n in counts.items() if n >= 2} | {"<unk>"})


@pytest.fixture(scope="module")
def data(data_dir):
    return MTFraEng(batch_size=32, data_dir=data_dir)


def tokens(vocab, row) -> list[str]:
    return vocab.to_tokens(row)


def test_number_of_pairs_follows_d2l(data):
    # D2L's _tokenize stops when the line number exceeds num_train + num_val, so it reads lines 0..640: 641 pairs.
    n = NUM_TRAIN + NUM_VAL + 1
    src, tgt_input, valid_len, label = data.arrays
    assert src.shape == tgt_input.shape == label.shape == (n, NUM_STEPS)
    assert valid_len.shape == (n,)
    assert sum(len(b[0]) for b in data.train_dataloader()) == NUM_TRAIN
    assert sum(len(b[0]) for b in data.val_dataloader()) == n - NUM_TRAIN


def test_hand_tokenised_first_lines(data_dir):
    with open(data_dir / "fra-eng" / "fra.txt", encoding="utf-8") as f:
        head = "".join(next(f) for _ in range(50))
    src, tgt = tokenize_fra_eng(preprocess_fra_eng(head))
    assert len(src) == len(tgt) == 50
    # Line 1 "Go.\tVa !"; line 3 "Run!\tCours\u202f!" (a narrow no-break space before "!");
    # line 6 "Wow!\tÇa alors\u202f!"; line 8 "Help!\tÀ l'aide\u202f!"; line 50 "I lost.\tJ'ai perdu.".
    assert (src[0], tgt[0]) == (["go", ".", "<eos>"], ["va", "!", "<eos>"])
    assert (src[2], tgt[2]) == (["run", "!", "<eos>"], ["cours", "!", "<eos>"])
    assert tgt[5] == ["ça", "alors", "!", "<eos>"]
    assert tgt[7] == ["à", "l'aide", "!", "<eos>"]
    assert (src[49], tgt[49]) == (["i", "lost", ".", "<eos>"], ["j'ai", "perdu", ".", "<eos>"])


def test_hand_tokenised_rows_of_the_arrays(data):
    src, tgt_input, _, label = data.arrays
    pad = ["<pad>"] * 6
    # fra.txt line 1 is "Go.\tVa !" and line 3 "Run!\tCours\u202f!" (a narrow no-break space before the "!").
    assert tokens(data.src_vocab, src[0]) == ["go", ".", "<eos>", *pad]
    assert tokens(data.tgt_vocab, label[0]) == ["va", "!", "<eos>", *pad]
    assert tokens(data.tgt_vocab, tgt_input[0]) == ["<bos>", "va", "!", "<eos>", *pad[:5]]
    assert tokens(data.src_vocab, src[2]) == ["run", "!", "<eos>", *pad]
    assert tokens(data.tgt_vocab, label[2]) == ["cours", "!", "<eos>", *pad]
    # Line 6 "Wow!\tÇa alors\u202f!": "alors" occurs once in the 641 pairs, under min_freq=2, so it is <unk>.
    assert tokens(data.tgt_vocab, label[5]) == ["ça", "<unk>", "!", "<eos>", *pad[:5]]
    assert tokens(data.src_vocab, src[49]) == ["i", "lost", ".", "<eos>", *pad[:5]]
    assert tokens(data.tgt_vocab, label[49]) == ["j'ai", "perdu", ".", "<eos>", *pad[:5]]


def test_arrays_match_an_independent_tokenisation(data, data_dir):
    src_rows, tgt_rows = reference_rows(data_dir / "fra-eng" / "fra.txt", NUM_TRAIN + NUM_VAL + 1, NUM_STEPS)
    src, tgt_input, _, label = data.arrays
    unk_src = [[t if t in data.src_vocab.token_to_idx else "<unk>" for t in row] for row in src_rows]
    unk_tgt = [[t if t in data.tgt_vocab.token_to_idx else "<unk>" for t in row] for row in tgt_rows]
    assert [tokens(data.src_vocab, row) for row in src] == unk_src
    assert [tokens(data.tgt_vocab, row) for row in tgt_input] == [row[:-1] for row in unk_tgt]
    assert [tokens(data.tgt_vocab, row) for row in label] == [row[1:] for row in unk_tgt]


def test_vocabulary_sizes_match_d2ls_counting(data, data_dir):
    src_rows, tgt_rows = reference_rows(data_dir / "fra-eng" / "fra.txt", NUM_TRAIN + NUM_VAL + 1, NUM_STEPS)
    assert len(data.src_vocab) == d2l_vocab_size(src_rows)
    assert len(data.tgt_vocab) == d2l_vocab_size(tgt_rows)
    assert data.src_vocab["<unk>"] == data.tgt_vocab["<unk>"] == 0
    for special in ("<pad>", "<eos>"):
        assert data.src_vocab[special] != 0 and data.tgt_vocab[special] != 0
    assert data.tgt_vocab["<bos>"] != 0


def test_pad_positions_agree_with_valid_lengths(data):
    src, _, valid_len, _ = data.arrays
    assert valid_len.dtype == torch.int32
    positions = torch.arange(NUM_STEPS)[None, :]
    is_pad = src == data.src_vocab["<pad>"]
    assert torch.equal(is_pad, positions >= valid_len[:, None].long())
    assert valid_len.min() >= 2  # at least a word and <eos>


def test_decoder_input_is_the_label_shifted_right_after_bos(data):
    _, tgt_input, _, label = data.arrays
    assert (tgt_input[:, 0] == data.tgt_vocab["<bos>"]).all()
    assert torch.equal(tgt_input[:, 1:], label[:, :-1])


def test_loaders_split_and_shapes(data):
    torch.manual_seed(0)
    batches = list(data.train_dataloader())
    src, tgt_input, valid_len, label = batches[0]
    assert src.shape == tgt_input.shape == label.shape == (32, NUM_STEPS) and valid_len.shape == (32,)
    seen = torch.cat([b[0] for b in batches])
    train_rows = data.arrays[0][:NUM_TRAIN]
    assert sorted(map(tuple, seen.tolist())) == sorted(map(tuple, train_rows.tolist()))
    assert not torch.equal(seen, train_rows)  # shuffled
    val = [torch.cat(parts) for parts in zip(*data.val_dataloader())]
    for got, full in zip(val, data.arrays):
        assert torch.equal(got, full[NUM_TRAIN:])  # in file order


def test_build_matches_the_rows_of_the_same_pairs(data):
    src, tgt_input, valid_len, label = data.build(["Go.", "I lost."], ["Va !", "J'ai perdu."])
    for got, full in zip((src, tgt_input, valid_len, label), data.arrays):
        assert torch.equal(got, full[[0, 49]])


def test_build_maps_unknown_words_to_unk(data):
    src, _, valid_len, _ = data.build(["xylophone zebra ."], ["?"])
    unk = data.src_vocab.unk
    assert src[0, :4].tolist() == [unk, unk, data.src_vocab["."], data.src_vocab["<eos>"]]
    assert valid_len.tolist() == [4]


def test_short_windows_truncate(data_dir):
    small = MTFraEng(batch_size=4, num_steps=3, num_train=40, num_val=9, data_dir=data_dir)
    src, tgt_input, valid_len, label = small.arrays
    assert src.shape == tgt_input.shape == label.shape == (50, 3)
    # Line 50 "I lost." has four tokens with <eos>: cut to three, no padding, no <eos>. "i" and "." are
    # frequent, "lost" occurs once in the first 50 lines: <unk>.
    assert tokens(small.src_vocab, src[49]) == ["i", "<unk>", "."]
    assert valid_len[49] == 3
    # Line 3 "Run!\tCours\u202f!": the target row is <bos> + three tokens, split into input and label.
    assert tokens(small.tgt_vocab, tgt_input[2]) == ["<bos>", "<unk>", "!"]
    assert tokens(small.tgt_vocab, label[2]) == ["<unk>", "!", "<eos>"]


@pytest.mark.parametrize(
    "kwargs, error",
    [
        ({"batch_size": 0}, ValueError),
        ({"batch_size": 2.0}, TypeError),
        ({"batch_size": 2, "num_train": 0}, ValueError),
    ],
)
def test_bad_arguments(kwargs, error, data_dir):
    with pytest.raises(error):
        MTFraEng(data_dir=data_dir, **kwargs)


def test_build_rejects_mismatched_lists(data):
    with pytest.raises(ValueError, match="one target per source"):
        data.build(["go ."], [])
    with pytest.raises(TypeError, match="lists"):
        data.build("go .", "va !")


@settings(max_examples=80, deadline=None)
@given(st.text(alphabet="aZé ,.!?\t\n\u202f\xa0", max_size=40))
def test_preprocess_matches_the_character_rule(text):
    assert preprocess_fra_eng(text) == reference_preprocess(text)


def test_tokenize_skips_lines_without_exactly_one_tab():
    src, tgt = tokenize_fra_eng("a  b\tc\nno tab here\nx\ty\tz\nd\t\n", num_lines=None)
    assert src == [["a", "b", "<eos>"], ["d", "<eos>"]]
    assert tgt == [["c", "<eos>"], ["<eos>"]]
    assert tokenize_fra_eng("a\tb\nc\td", num_lines=1) == ([["a", "<eos>"]], [["b", "<eos>"]])
