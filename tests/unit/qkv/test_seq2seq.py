"""qkv.seq2seq: the padding-aware loss, greedy decoding and initialisation shared by 11.4 and 11.7."""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from qkv.seq2seq import Decoder, Encoder, EncoderDecoder, Seq2Seq, init_seq2seq


class ShiftEncoder(Encoder):
    def forward(self, X, *args):
        return X


class CountingDecoder(Decoder):
    """Logits that make the next token (previous token + 1) mod V; keeps a fake attention weight per step."""

    def __init__(self, vocab_size=7):
        super().__init__()
        self.V = vocab_size
        self.calls = 0

    def init_state(self, enc_all_outputs, *args):
        return {"enc": enc_all_outputs, "args": args}

    def forward(self, X, state):
        self.calls += 1
        self.attention_weights = torch.full((X.shape[0], 1), float(self.calls))
        return F.one_hot((X + 1) % self.V, self.V).float() * 5.0, state  # (B, T) -> (B, T, V)


def test_loss_ignores_padding_exactly():
    torch.manual_seed(0)
    model = Seq2Seq(ShiftEncoder(), CountingDecoder(), tgt_pad=0, lr=0.1)
    Y_hat = torch.randn(2, 4, 7)
    Y = torch.tensor([[3, 4, 0, 0], [1, 2, 5, 0]])
    keep = [(b, t) for b in range(2) for t in range(4) if Y[b, t] != 0]
    expected = sum(F.cross_entropy(Y_hat[b, t][None], Y[b, t][None]) for b, t in keep) / len(keep)
    assert torch.allclose(model.loss(Y_hat, Y), expected, atol=1e-6)
    changed = Y_hat.clone()
    changed[0, 2:] = 100.0  # logits at padded positions do not matter
    assert torch.allclose(model.loss(changed, Y), expected, atol=1e-6)


def test_predict_step_decodes_greedily_and_keeps_weights_and_mode():
    decoder = CountingDecoder()
    model = EncoderDecoder(ShiftEncoder(), decoder)
    model.train()
    src, tgt = torch.zeros(2, 3, dtype=torch.long), torch.tensor([[2, 9, 9], [5, 9, 9]])
    out, weights = model.predict_step((src, tgt, torch.tensor([3, 3]), tgt), "cpu", 4, save_attention_weights=True)
    assert out.tolist() == [[3, 4, 5, 6], [6, 0, 1, 2]]
    assert [w[0, 0].item() for w in weights] == [1.0, 2.0, 3.0, 4.0]
    assert model.training, "predict_step restores training mode"


def test_forward_passes_args_to_encoder_and_init_state():
    seen = {}

    class Recorder(CountingDecoder):
        def init_state(self, enc_all_outputs, *args):
            seen["args"] = args
            return super().init_state(enc_all_outputs, *args)

    model = EncoderDecoder(ShiftEncoder(), Recorder())
    lens = torch.tensor([2])
    logits = model(torch.zeros(1, 2, dtype=torch.long), torch.tensor([[1, 2]]), lens)
    assert logits.shape == (1, 2, 7) and seen["args"][0] is lens


def test_init_seq2seq_is_xavier_uniform_on_linear_and_gru_weights():
    torch.manual_seed(1)
    linear, gru = nn.Linear(50, 40), nn.GRU(8, 16, num_layers=2)
    init_seq2seq(linear)
    init_seq2seq(gru)
    bound = (6 / (50 + 40)) ** 0.5
    assert linear.weight.abs().max() <= bound and linear.weight.abs().max() > 0.9 * bound
    for name, p in gru.named_parameters():
        if name.startswith("weight"):
            fan_out, fan_in = p.shape
            assert p.abs().max() <= (6 / (fan_in + fan_out)) ** 0.5


class DropoutDecoder(Decoder):
    """Logits pass through dropout with p close to 1, so a decoding in training mode is random and mostly zeros."""

    def __init__(self, vocab_size=9):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, vocab_size)
        self.dropout = nn.Dropout(0.9)
        self.modes = []

    def init_state(self, enc_all_outputs, *args):
        return None

    def forward(self, X, state):
        self.modes.append(self.training)
        return self.dropout(self.embedding(X)), state  # (B, T) -> (B, T, V)


def test_predict_step_decodes_in_eval_mode_and_restores_the_mode():
    """Greedy decoding must not drop out: with dropout p = 0.9 two decodings agree and equal the eval-mode ones."""
    torch.manual_seed(0)
    decoder = DropoutDecoder()
    model = EncoderDecoder(ShiftEncoder(), decoder)
    batch = (
        torch.zeros(4, 3, dtype=torch.long),
        torch.tensor([[1], [2], [5], [8]]),
        torch.tensor([3] * 4),
        torch.zeros(4, 1),
    )
    with torch.no_grad():  # the reference: the decoder run by hand in eval mode, one token at a time
        decoder.eval()
        tokens, expected = batch[1], []
        for _ in range(6):
            tokens = decoder(tokens, None)[0].argmax(dim=2)  # (B, 1, V) -> (B, 1)
            expected.append(tokens)
        expected = torch.cat(expected, dim=1)  # (B, 6)
    for mode in (True, False):
        model.train(mode)
        decoder.modes.clear()
        first, _ = model.predict_step(batch, "cpu", 6)
        second, _ = model.predict_step(batch, "cpu", 6)
        assert decoder.modes == [False] * 12, f"predict_step ran the decoder with training={decoder.modes}"
        assert torch.equal(first, expected) and torch.equal(second, expected), "decoding went through dropout"
        assert model.training is mode and decoder.training is mode, "predict_step must restore the mode it found"
