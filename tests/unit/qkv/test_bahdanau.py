"""Tests for qkv.bahdanau: the GRU encoder and the Bahdanau attention decoder (D2L 10.7, 11.4)."""

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn

from qkv.bahdanau import AttentionDecoder, BahdanauConfig, Seq2SeqAttentionDecoder, Seq2SeqEncoder, make_bahdanau
from qkv.seq2seq import Seq2Seq

V, E, N, L = 11, 6, 8, 2  # vocabulary, embedding, hidden size, GRU layers


def _model(dropout=0.0, seed=0):
    torch.manual_seed(seed)
    return Seq2SeqEncoder(V, E, N, L, dropout), Seq2SeqAttentionDecoder(V, E, N, L, dropout)


def _batch(B, T_src, T, seed=0):
    g = torch.Generator().manual_seed(seed)
    src = torch.randint(0, V, (B, T_src), generator=g)
    tgt = torch.randint(0, V, (B, T), generator=g)
    valid_lens = torch.randint(1, T_src + 1, (B,), generator=g)
    return src, tgt, valid_lens


def test_shapes_of_encoder_decoder_and_weights():
    """Encoder: (T, B, N), (L, B, N); decoder: logits (B, T, V), state, and one (B, 1, T_src) weight per step."""
    encoder, decoder = _model()
    B, T_src, T = 3, 7, 5
    src, tgt, valid_lens = _batch(B, T_src, T)
    outputs, state = encoder(src, valid_lens)
    assert outputs.shape == (T_src, B, N), f"encoder outputs: expected (T, B, N) = {(T_src, B, N)}, got {outputs.shape}"
    assert state.shape == (L, B, N), f"encoder state: expected (L, B, N) = {(L, B, N)}, got {state.shape}"
    dec_state = decoder.init_state((outputs, state), valid_lens)
    assert dec_state[0].shape == (B, T_src, N), "init_state must make the encoder outputs batch-major (B, T, N)"
    Y, new_state = decoder(tgt, dec_state)
    assert Y.shape == (B, T, V), f"logits: expected (B, T, V) = {(B, T, V)}, got {Y.shape}"
    assert new_state[1].shape == (L, B, N)
    assert new_state[0] is dec_state[0] and new_state[2] is valid_lens, "encoder outputs/lengths pass through"
    assert isinstance(decoder, AttentionDecoder)
    weights = decoder.attention_weights
    assert len(weights) == T and all(w.shape == (B, 1, T_src) for w in weights)


def test_encoder_matches_builtin_gru_on_embeddings():
    """The encoder is exactly embedding -> multi-layer GRU, time-major (checked against a fresh nn.GRU)."""
    encoder, _ = _model()
    src, _, _ = _batch(4, 6, 1)
    gru = nn.GRU(E, N, L)
    gru.load_state_dict(encoder.rnn.state_dict())
    ref_out, ref_state = gru(encoder.embedding.weight[src.t()])  # (T, B, E) -> (T, B, N), (L, B, N)
    outputs, state = encoder(src)
    torch.testing.assert_close(outputs, ref_out)
    torch.testing.assert_close(state, ref_state)


def test_gru_weights_are_xavier_initialised():
    """init_seq2seq's Xavier-uniform bound sqrt(6 / (fan_in + fan_out)) holds for the GRU weights, and is used."""
    torch.manual_seed(0)
    encoder = Seq2SeqEncoder(50, 64, 64, 1)
    w = encoder.rnn.weight_hh_l0  # (3N, N): fan_in N, fan_out 3N
    bound = (6 / (64 + 3 * 64)) ** 0.5
    assert w.abs().max() <= bound
    assert w.abs().max() > 0.9 * bound, "the GRU weights look like PyTorch's default init, not Xavier"


def test_only_the_decoders_gru_is_xavier_initialised():
    """D2L 11.4: the decoder's GRU weights are Xavier-uniform; the embedding, attention and output layer keep
    PyTorch's defaults (N(0, 1) for an embedding, U(+-1/sqrt(fan_in)) for a linear layer's weight and bias)."""
    vocab, embed, hidden = 40, 32, 64
    torch.manual_seed(0)
    decoder = Seq2SeqAttentionDecoder(vocab, embed, hidden, 2)
    for name, w in decoder.rnn.named_parameters():
        if name.startswith("weight"):
            fan_out, fan_in = w.shape
            xavier, default = (6 / (fan_in + fan_out)) ** 0.5, 1 / hidden**0.5
            assert w.abs().max() <= xavier, f"GRU {name} exceeds the Xavier bound {xavier:.4f}"
            assert w.abs().max() > default, f"GRU {name} stays within PyTorch's default bound: not Xavier"
    linears = {"attention.W_q": decoder.attention.W_q, "attention.W_k": decoder.attention.W_k}
    linears |= {"attention.w_v": decoder.attention.w_v, "dense": decoder.dense}
    for name, layer in linears.items():
        bound = 1 / layer.in_features**0.5  # PyTorch's default U(-1/sqrt(fan_in), 1/sqrt(fan_in))
        xavier = (6 / (layer.in_features + layer.out_features)) ** 0.5
        assert xavier > 1.5 * bound, "the sizes must tell the two initialisations apart"
        assert layer.weight.abs().max() <= bound, f"{name} was re-initialised (Xavier?), not PyTorch's default"
    assert decoder.dense.bias.abs().max() <= 1 / hidden**0.5
    emb = decoder.embedding.weight
    assert 0.9 < emb.std().item() < 1.1 and emb.abs().max() > 2.5, "the embedding keeps its N(0, 1) init"


def test_decoder_parameters_equal_seeded_modules_built_as_documented():
    """With the same seed, the decoder's parameters are those of its layers built one by one in the same order,
    with torch's own Xavier initialiser applied to the GRU weights only."""
    torch.manual_seed(3)
    decoder = Seq2SeqAttentionDecoder(V, E, N, L)
    torch.manual_seed(3)
    embedding = nn.Embedding(V, E)
    gru = nn.GRU(E + N, N, L)
    for name, p in gru.named_parameters():
        if name.startswith("weight"):
            nn.init.xavier_uniform_(p)
    W_k, W_q, w_v = nn.Linear(N, N, bias=False), nn.Linear(N, N, bias=False), nn.Linear(N, 1, bias=False)
    dense = nn.Linear(N, V)
    expected = {f"embedding.{k}": v for k, v in embedding.state_dict().items()}
    expected |= {f"rnn.{k}": v for k, v in gru.state_dict().items()}
    expected |= {"attention.W_k.weight": W_k.weight, "attention.W_q.weight": W_q.weight}
    expected |= {"attention.w_v.weight": w_v.weight, "dense.weight": dense.weight, "dense.bias": dense.bias}
    got = decoder.state_dict()
    assert sorted(got) == sorted(expected)
    for name, value in expected.items():
        torch.testing.assert_close(got[name], value, atol=0, rtol=0, msg=f"{name} is not initialised as documented")


@settings(max_examples=20, deadline=None)
@given(
    B=st.integers(1, 4),
    T_src=st.integers(1, 7),
    T=st.integers(1, 4),
    seed=st.integers(0, 10_000),
)
def test_weights_are_zero_on_padding_and_sum_to_one(B, T_src, T, seed):
    """At every decoding step the attention weights over the source sum to 1 and vanish past the valid length."""
    encoder, decoder = _model(seed=seed % 3)
    src, tgt, valid_lens = _batch(B, T_src, T, seed)
    decoder(tgt, decoder.init_state(encoder(src), valid_lens))
    padded = torch.arange(T_src)[None, :] >= valid_lens[:, None]  # (B, T_src)
    for step, w in enumerate(decoder.attention_weights):
        w = w.squeeze(1)  # (B, 1, T_src) -> (B, T_src)
        torch.testing.assert_close(w.sum(-1), torch.ones(B), msg=f"step {step}: weights must sum to 1")
        assert (w[padded] == 0).all(), f"step {step}: weight on a padded source position: {w[padded]}"
        assert (w[~padded] > 0).all()


def test_step_by_step_decoding_equals_teacher_forcing():
    """T calls with one token each, carrying the state, give the logits of one call on the whole sequence."""
    encoder, decoder = _model(dropout=0.3)
    encoder.eval(), decoder.eval()
    src, tgt, valid_lens = _batch(3, 6, 5)
    state = decoder.init_state(encoder(src), valid_lens)
    Y_all, _ = decoder(tgt, state)
    steps, weights = [], []
    for t in range(tgt.shape[1]):
        Y, state = decoder(tgt[:, t : t + 1], state)
        steps.append(Y)
        weights.append(decoder.attention_weights[0])
    torch.testing.assert_close(torch.cat(steps, dim=1), Y_all, atol=1e-6, rtol=1e-6)
    decoder(tgt, decoder.init_state(encoder(src), valid_lens))
    for t, w in enumerate(weights):
        torch.testing.assert_close(w, decoder.attention_weights[t], atol=1e-6, rtol=1e-6)


def _reference_decode(decoder, enc_outputs, hidden, valid_lens, tgt):
    """An independent decoder: explicit additive scores, masked softmax, weighted sum, GRUCells with copied weights."""
    att = decoder.attention
    cells = []
    for layer in range(L):
        cell = nn.GRUCell(E + N if layer == 0 else N, N)
        cell.weight_ih.data = getattr(decoder.rnn, f"weight_ih_l{layer}").detach().clone()
        cell.weight_hh.data = getattr(decoder.rnn, f"weight_hh_l{layer}").detach().clone()
        cell.bias_ih.data = getattr(decoder.rnn, f"bias_ih_l{layer}").detach().clone()
        cell.bias_hh.data = getattr(decoder.rnn, f"bias_hh_l{layer}").detach().clone()
        cells.append(cell)
    keys = enc_outputs.transpose(0, 1)  # (T_src, B, N) -> (B, T_src, N)
    T_src = keys.shape[1]
    h = list(hidden)  # L tensors (B, N)
    logits, contexts = [], []
    for t in range(tgt.shape[1]):
        q = h[-1]  # (B, N)
        feats = torch.tanh((q @ att.W_q.weight.T)[:, None, :] + keys @ att.W_k.weight.T)  # (B, T_src, N)
        scores = (feats @ att.w_v.weight.T).squeeze(-1)  # (B, T_src, 1) -> (B, T_src)
        scores = scores.masked_fill(torch.arange(T_src)[None, :] >= valid_lens[:, None], float("-inf"))
        alpha = torch.softmax(scores, dim=-1)  # (B, T_src)
        context = (alpha[:, :, None] * keys).sum(1)  # (B, T_src, 1) * (B, T_src, N) -> (B, N)
        contexts.append(context)
        x = torch.cat([context, decoder.embedding.weight[tgt[:, t]]], dim=-1)  # (B, N + E)
        for layer in range(L):
            h[layer] = cells[layer](x, h[layer])
            x = h[layer]
        logits.append(x @ decoder.dense.weight.T + decoder.dense.bias)  # (B, V)
    return torch.stack(logits, dim=1), contexts  # (B, T, V)


def test_decoder_matches_explicit_bahdanau_equations():
    """Each step's context is sum_t alpha_t h_t with explicit additive weights; the logits match a GRUCell decoder."""
    encoder, decoder = _model()
    src, tgt, valid_lens = _batch(4, 6, 5, seed=1)
    enc_outputs, hidden = encoder(src)
    gru_inputs = []  # the GRU's input at each step is [context, embedded token]
    handle = decoder.rnn.register_forward_hook(lambda mod, inp, out: gru_inputs.append(inp[0].squeeze(0)))
    Y, _ = decoder(tgt, decoder.init_state((enc_outputs, hidden), valid_lens))
    handle.remove()
    with torch.no_grad():
        ref_Y, ref_contexts = _reference_decode(decoder, enc_outputs, hidden, valid_lens, tgt)
    assert len(gru_inputs) == tgt.shape[1], "the GRU must run once per decoding step"
    for t, (x, ref) in enumerate(zip(gru_inputs, ref_contexts)):
        torch.testing.assert_close(x[:, :N], ref, atol=1e-5, rtol=1e-5, msg=f"context at step {t} differs")
        torch.testing.assert_close(x[:, N:], decoder.embedding.weight[tgt[:, t]], msg=f"token embedding at step {t}")
    torch.testing.assert_close(Y, ref_Y, atol=1e-5, rtol=1e-5)


def test_weights_and_contexts_equal_the_additive_attention_module():
    """Recomputing each step with decoder.attention(query = previous top hidden state, keys = values = h) agrees."""
    encoder, decoder = _model()
    src, tgt, valid_lens = _batch(3, 5, 4, seed=3)
    state = decoder.init_state(encoder(src), valid_lens)
    keys = state[0]  # (B, T_src, N)
    gru_inputs = []
    handle = decoder.rnn.register_forward_hook(lambda mod, inp, out: gru_inputs.append(inp[0].squeeze(0)))
    queries = []
    for t in range(tgt.shape[1]):  # one token per call, so the query of each step can be read from the state
        queries.append(state[1][-1].unsqueeze(1))  # (B, N) -> (B, 1, N)
        _, state = decoder(tgt[:, t : t + 1], state)
        weights = decoder.attention_weights[0]
        context = decoder.attention(queries[-1], keys, keys, valid_lens)  # (B, 1, N)
        torch.testing.assert_close(weights, decoder.attention.attention_weights, msg=f"weights at step {t}")
        torch.testing.assert_close(gru_inputs[-1][:, :N], context.squeeze(1), msg=f"context at step {t}")
    handle.remove()


def test_padded_source_tokens_do_not_reach_the_attention():
    """Changing source tokens past the valid length changes no valid encoder output and no decoder logit.

    The encoder's final state does run over padding (as in D2L), so the decoder starts from the same hidden
    state in both runs; only the keys and values the attention sees differ, at masked positions.
    """
    encoder, decoder = _model()
    B, T_src = 3, 7
    src, tgt, _ = _batch(B, T_src, 4, seed=2)
    valid_lens = torch.tensor([2, 5, 7])
    other = src.clone()
    padded = torch.arange(T_src)[None, :] >= valid_lens[:, None]  # (B, T_src)
    other[padded] = (src[padded] + 1 + torch.arange(int(padded.sum())) % (V - 1)) % V
    out1, state1 = encoder(src)
    out2, _ = encoder(other)
    assert not torch.allclose(out1, out2), "the perturbation must change the encoder outputs at padded positions"
    torch.testing.assert_close(out2.transpose(0, 1)[~padded], out1.transpose(0, 1)[~padded])
    Y1, _ = decoder(tgt, decoder.init_state((out1, state1), valid_lens))
    Y2, _ = decoder(tgt, decoder.init_state((out2, state1), valid_lens))
    torch.testing.assert_close(Y1, Y2, atol=0, rtol=0)


def test_bad_inputs_raise_clear_errors():
    encoder, decoder = _model()
    with pytest.raises(TypeError, match="integer token ids"):
        encoder(torch.rand(2, 3))
    with pytest.raises(ValueError, match=r"\(B, T\)"):
        encoder(torch.tensor([1, 2, 3]))
    other = Seq2SeqEncoder(V, E, N, L + 1)
    with pytest.raises(ValueError, match="num_layers"):
        decoder.init_state(other(torch.zeros(2, 3, dtype=torch.long)), None)
    with pytest.raises(TypeError, match="output pair"):
        decoder.init_state(torch.zeros(3, 2, N), None)


def test_config_defaults_are_d2ls_and_build_the_model_they_describe():
    """D2L 11.4.3: embed 256, hidden 256, 2 GRU layers, dropout 0.2, lr 0.005; sizes land where they belong."""
    c = BahdanauConfig()
    assert (c.embed_size, c.num_hiddens, c.num_layers, c.dropout, c.lr) == (256, 256, 2, 0.2, 0.005)
    model = BahdanauConfig(embed_size=6, num_hiddens=10, num_layers=3, dropout=0.1).build(20, 30, tgt_pad=1)
    assert isinstance(model, Seq2Seq) and model.tgt_pad == 1 and model.lr == 0.005
    assert model.encoder.embedding.weight.shape == (20, 6) and model.decoder.embedding.weight.shape == (30, 6)
    assert (model.encoder.rnn.input_size, model.encoder.rnn.hidden_size, model.encoder.rnn.num_layers) == (6, 10, 3)
    assert (model.decoder.rnn.input_size, model.decoder.rnn.hidden_size) == (6 + 10, 10), "GRU input: [context, token]"
    assert model.decoder.dense.weight.shape == (30, 10) and model.decoder.rnn.dropout == 0.1
    assert model.configure_optimizers().param_groups[0]["lr"] == 0.005
    with pytest.raises(ValueError, match="num_layers"):
        BahdanauConfig(num_layers=0)
    with pytest.raises(ValueError, match="tgt_pad"):
        make_bahdanau(20, 30, tgt_pad=30)


PAD, BOS, EOS, NSYM, T_REV = 0, 1, 2, 8, 8


def _reverse_batch(n, g):
    """Random sequences of 3..6 symbols; the target is the sequence reversed, then <eos>."""
    lens = torch.randint(3, T_REV - 1, (n,), generator=g)
    seq = torch.randint(3, 3 + NSYM, (n, T_REV - 1), generator=g)
    src = torch.full((n, T_REV), PAD)
    label = torch.full((n, T_REV), PAD)
    for i, k in enumerate(lens.tolist()):
        src[i, :k], src[i, k] = seq[i, :k], EOS
        label[i, :k], label[i, k] = seq[i, :k].flip(0), EOS
    tgt = torch.cat([torch.full((n, 1), BOS), label[:, :-1]], dim=1)  # (n, 1) ++ (n, T - 1) -> (n, T)
    return src, tgt, lens + 1, label


@pytest.mark.slow
def test_learns_to_reverse_sequences():
    """A small attention seq2seq learns to reverse held-out sequences (greedy decoding) in a few hundred steps."""
    torch.manual_seed(0)
    vocab = 3 + NSYM
    model = Seq2Seq(Seq2SeqEncoder(vocab, 16, 32, 1), Seq2SeqAttentionDecoder(vocab, 16, 32, 1), PAD, lr=0.01)
    optimizer = model.configure_optimizers()
    g = torch.Generator().manual_seed(0)
    for _ in range(200):
        src, tgt, valid_lens, label = _reverse_batch(64, g)
        loss = model.loss(model(src, tgt, valid_lens), label)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    src, tgt, valid_lens, label = _reverse_batch(256, torch.Generator().manual_seed(123))
    pred, _ = model.predict_step((src, tgt, valid_lens, label), "cpu", T_REV)
    keep = label != PAD
    token_acc = ((pred == label) & keep).sum().item() / keep.sum().item()
    assert token_acc > 0.95, f"token accuracy on held-out reversals is only {token_acc:.3f}"


def test_train_d2l_trains_once_in_d2ls_setting_then_loads(tmp_path, monkeypatch, data_dir):
    """D2L's setting (batch 128, clip 1, BahdanauConfig's defaults) through qkv.recipes.weights: one epoch here, to keep
    the test short; the second call loads the same weights instead of training."""
    from qkv.data import MTFraEng
    from qkv.recipes.translate import train_bahdanau, train_d2l

    monkeypatch.setenv("QKV_TRAINED_DIR", str(tmp_path))
    monkeypatch.delenv("NBGRADER_EXECUTION", raising=False)
    data = MTFraEng(128, data_dir=data_dir)
    first, same_data = train_d2l("bahdanau", BahdanauConfig(), data, epochs=1, progress=False, log=lambda m: None)
    second, _ = train_bahdanau(data=data, epochs=1, progress=False, log=lambda m: None)  # the page's recipe
    assert same_data is data and first.trained and not second.trained
    key = first.key
    assert key["trainer"]["gradient_clip_val"] == 1.0 and key["trainer"]["max_epochs"] == 1
    assert key["config"] == {"class": "BahdanauConfig", **vars(BahdanauConfig())}
    assert data.batch_size == 128 and "qkv.bahdanau" in key["modules"]
    a, b = first.model.state_dict(), second.model.state_dict()
    assert all(torch.equal(a[k], b[k]) for k in a)
    assert not second.model.training, "the model comes back in evaluation mode"
