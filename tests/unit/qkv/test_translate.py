"""Tests for qkv.translate: greedy translation, <eos> stripping, per-sentence attention weights, BLEU rows."""

import math

import pytest
import torch
from torch import nn

from qkv.data.vocab import Vocab
from qkv.seq2seq import Decoder, Encoder, EncoderDecoder
from qkv.translate import BleuRow, evaluate_bleu, translate

SRC_WORDS = ["a", "b", "c", "d"]
TGT_WORDS = ["x", "y", "z", "q", "w"]
WORD_MAP = {"a": "x", "b": "y", "c": "z", "d": "q", "<eos>": "<eos>", "<pad>": "w", "<unk>": "w"}


class FakeData:
    """Whitespace tokens, <eos> appended, padded to num_steps; the target input is <bos> then the target."""

    def __init__(self, num_steps=6):
        self.num_steps = num_steps
        self.src_vocab = Vocab(SRC_WORDS, reserved_tokens=["<pad>", "<eos>"])
        self.tgt_vocab = Vocab(TGT_WORDS, reserved_tokens=["<pad>", "<bos>", "<eos>"])

    def _rows(self, sentences, vocab):
        rows = [(s.split() + ["<eos>"])[: self.num_steps] for s in sentences]
        rows = [r + ["<pad>"] * (self.num_steps - len(r)) for r in rows]
        return torch.tensor([vocab[r] for r in rows])

    def build(self, src_sentences, tgt_sentences):
        src = self._rows(src_sentences, self.src_vocab)
        label = self._rows(tgt_sentences, self.tgt_vocab)
        bos = torch.full((len(src), 1), self.tgt_vocab["<bos>"])
        valid = (src != self.src_vocab["<pad>"]).sum(1)
        return src, torch.cat([bos, label[:, :-1]], 1), valid, label


class WordByWord(EncoderDecoder):
    """Translates source token t into WORD_MAP's target word at step t (after <eos> it keeps emitting 'w').

    At step t the attention weights of sentence b are (b + 1) * one_hot(t), so a test can tell whose rows it got.
    """

    def __init__(self, data):
        table = torch.tensor([data.tgt_vocab[WORD_MAP[tok]] for tok in data.src_vocab.idx_to_token])

        class Enc(Encoder):
            def forward(self, X, *args):
                return X

        class Dec(Decoder):
            def __init__(self):
                super().__init__()
                self.table = table
                self.vocab_size = len(data.tgt_vocab)
                self.attention_weights = None
                self.anchor = nn.Parameter(torch.zeros(1))  # so the model has a device

            def init_state(self, src, *args):
                return [src, 0]

            def forward(self, X, state):
                src, t = state
                B, T_src = src.shape
                words = self.table[src[:, t]] if t < T_src else torch.full((B,), int(self.table[0]))
                logits = nn.functional.one_hot(words, self.vocab_size).float()[:, None, :]  # (B, 1, V)
                scale = torch.arange(1, B + 1, dtype=torch.float)[:, None, None]  # (B, 1, 1)
                self.attention_weights = [scale * nn.functional.one_hot(torch.tensor(t), T_src).float()]
                return logits, [src, t + 1]

        super().__init__(Enc(), Dec())


def test_translation_is_cut_at_first_eos_and_weights_belong_to_each_sentence():
    data = FakeData()
    model = WordByWord(data)
    out = translate(model, data, ["a b c", "d", "b a"])
    assert [t for t, _ in out] == ["x y z", "q", "y x"], "each source word maps to its target word; <eos> stops"
    for i, (translation, weights) in enumerate(out):
        n = len(translation.split())
        assert len(weights) == n + 1, f"sentence {i}: expected {n} word steps plus the <eos> step, got {len(weights)}"
        for t, w in enumerate(weights):
            expected = (i + 1) * nn.functional.one_hot(torch.tensor(t), data.num_steps).float()[None, None]
            torch.testing.assert_close(w[0], expected, msg=f"sentence {i}, step {t}: rows of another sentence?")


def test_no_eos_keeps_every_step_and_num_steps_limits_decoding():
    data = FakeData(num_steps=4)
    model = WordByWord(data)
    [(translation, weights)] = translate(model, data, ["a b c d a"])  # trimmed to 4 tokens: no <eos> in the source
    assert translation == "x y z q" and len(weights) == 4
    [(translation, weights)] = translate(model, data, ["a b c"], num_steps=2)
    assert translation == "x y" and len(weights) == 2


def test_evaluate_bleu_rows_match_hand_computed_scores():
    data = FakeData()
    model = WordByWord(data)
    rows = evaluate_bleu(model, data, [("a b c", "x y z"), ("a b c", "x y q"), ("a", "x y")], k=2)
    assert all(isinstance(r, BleuRow) for r in rows)
    assert [(r.src, r.reference, r.prediction) for r in rows] == [
        ("a b c", "x y z", "x y z"),
        ("a b c", "x y q", "x y z"),
        ("a", "x y", "x"),
    ]
    assert rows[0].bleu == pytest.approx(1.0)
    assert rows[1].bleu == pytest.approx((2 / 3) ** 0.5 * (1 / 2) ** 0.25), "p1 = 2/3, p2 = 1/2, no brevity penalty"
    assert rows[2].bleu == pytest.approx(math.exp(1 - 2 / 1)), "p1 = 1 but one word for two: penalty exp(1 - 2)"


def test_bad_arguments_raise_clear_errors():
    data = FakeData()
    model = WordByWord(data)
    with pytest.raises(TypeError, match="list of sentences"):
        translate(model, data, "a b")
    with pytest.raises(ValueError, match="empty"):
        translate(model, data, [])
    with pytest.raises(ValueError, match="num_steps"):
        translate(model, data, ["a"], num_steps=0)
    with pytest.raises(TypeError, match="pairs"):
        evaluate_bleu(model, data, ("a", "x"))


def test_multihead_weights_of_each_sentence_are_its_own_heads():
    """A Transformer (2 heads) keeps (B * H, 1, T) weights per step; each sentence of a batch of 3 gets the weights
    it gets when translated alone: all its heads, not rows of other sentences."""
    from qkv.transformer import make_transformer

    data = FakeData()
    torch.manual_seed(0)
    pad = data.tgt_vocab["<pad>"]
    model = make_transformer(len(data.src_vocab), len(data.tgt_vocab), 8, 16, 2, 2, 0.0, tgt_pad=pad).double()
    sentences = ["a b c", "d", "b a c d"]
    together = translate(model, data, sentences)
    for i, sentence in enumerate(sentences):
        [(alone, alone_weights)] = translate(model, data, [sentence])  # batch of one: nothing to slice
        translation, weights = together[i]
        assert translation == alone and len(weights) == len(alone_weights)
        for t, (w, ref) in enumerate(zip(weights, alone_weights)):
            for kind, (got_blocks, ref_blocks) in zip(("self", "cross"), zip(w, ref)):
                for blk, (got, expected) in enumerate(zip(got_blocks, ref_blocks)):
                    assert got.shape == expected.shape == (2, 1, expected.shape[-1]), "(H, 1, T) per sentence"
                    torch.testing.assert_close(
                        got, expected, msg=f"sentence {i}, step {t}, {kind}-attention of block {blk}: wrong rows"
                    )


class DeviceRecorder(nn.Module):
    """A stand-in model whose parameter lives on ``device``; predict_step records the device it is given."""

    def __init__(self, device):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(1, device=device))
        self.devices = []

    def predict_step(self, batch, device, num_steps, save_attention_weights=False):
        self.devices.append(torch.device(device))
        return torch.zeros(len(batch[0]), num_steps, dtype=torch.long), []


def test_decoding_runs_on_the_models_device_by_default():
    """device=None means the device of the model's parameters. The 'meta' device stands in for a GPU here: a
    parameter can live there without any hardware, and it is neither the CPU nor a default."""
    data = FakeData()
    model = DeviceRecorder("meta")
    translate(model, data, ["a b"])
    evaluate_bleu(model, data, [("a", "x")])
    translate(model, data, ["a b"], device="cpu")
    assert model.devices == [torch.device("meta"), torch.device("meta"), torch.device("cpu")]


def test_real_bahdanau_model_on_the_translation_data(data_dir):
    """With MTFraEng and an untrained Bahdanau model, each step's weights are one sentence's row over the source."""
    from qkv.bahdanau import Seq2SeqAttentionDecoder, Seq2SeqEncoder
    from qkv.data import MTFraEng
    from qkv.seq2seq import Seq2Seq

    data = MTFraEng(batch_size=8, num_train=64, num_val=8, data_dir=data_dir)
    torch.manual_seed(0)
    src_v, tgt_v = len(data.src_vocab), len(data.tgt_vocab)
    model = Seq2Seq(Seq2SeqEncoder(src_v, 8, 8, 1), Seq2SeqAttentionDecoder(tgt_v, 8, 8, 1), 0, lr=0.01)
    sentences = ["go .", "i'm home ."]
    out = translate(model, data, sentences)
    src_lens = data.build(sentences, sentences)[2]
    for (translation, weights), length in zip(out, src_lens.tolist()):
        assert "<eos>" not in translation.split()
        assert 1 <= len(weights) <= data.num_steps
        for [w] in weights:
            assert w.shape == (1, 1, data.num_steps)
            torch.testing.assert_close(w.sum(), torch.tensor(1.0))
            assert (w[0, 0, length:] == 0).all(), "weight on a padded source position"
