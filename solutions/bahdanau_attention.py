"""Answers to the stubs of book/bahdanau-attention.md (D2L 11.4), by grade_id = function or class name.

The bodies are pasted into the notebook by the assembler, so they use only the notebook's names: ``torch`` and
``ref`` (the course's ``qkv.bahdanau``). They are written out here
rather than imported from ``qkv``: ``init_state`` is a free function in the notebook (a method in ``qkv``), the
decoder's ``forward`` calls the attention layer directly (``qkv``'s projects the keys once per call, an
optimisation that would only distract here), and greedy prediction returns the weights as one tensor.
"""

import torch

from qkv import bahdanau as ref

__all__ = ["init_state", "BahdanauDecoder", "predict_with_attention"]


def init_state(enc_all_outputs, enc_valid_lens=None):
    outputs, hidden_state = enc_all_outputs  # (T, B, N), (L, B, N)
    return [outputs.transpose(0, 1), hidden_state, enc_valid_lens]  # (T, B, N) -> (B, T, N)


class BahdanauDecoder(ref.AttentionDecoder):
    # The notebook's stub gives __init__ (the layers) and init_state (the reference's); forward is the exercise.

    def forward(self, X, state):
        enc_outputs, hidden_state, enc_valid_lens = state
        embs = self.embedding(X.t())  # (B, T) -> (T, B) -> (T, B, E)
        outputs, self._attention_weights = [], []
        for x in embs:  # x: (B, E), the input token of one step
            query = hidden_state[-1].unsqueeze(1)  # (L, B, N) -> (B, N) -> (B, 1, N): the top layer
            context = self.attention(query, enc_outputs, enc_outputs, enc_valid_lens)  # (B, 1, N)
            x = torch.cat((context, x.unsqueeze(1)), dim=-1)  # (B, 1, N) ++ (B, 1, E) -> (B, 1, N + E)
            out, hidden_state = self.rnn(x.transpose(0, 1), hidden_state)  # (1, B, N + E) -> (1, B, N), (L, B, N)
            outputs.append(out)
            self._attention_weights.append(self.attention.attention_weights)  # (B, 1, T_src)
        outputs = self.dense(torch.cat(outputs, dim=0))  # T x (1, B, N) -> (T, B, N) -> (T, B, V)
        return outputs.transpose(0, 1), [enc_outputs, hidden_state, enc_valid_lens]  # (T, B, V) -> (B, T, V)


def predict_with_attention(model, src, src_valid_len, bos, num_steps):
    was_training = model.training
    model.eval()  # no dropout while predicting
    try:
        with torch.no_grad():
            enc_all_outputs = model.encoder(src, src_valid_len)
            state = model.decoder.init_state(enc_all_outputs, src_valid_len)
            token = torch.full((src.shape[0], 1), bos, dtype=torch.long, device=src.device)  # (B, 1): <bos>
            tokens, weights = [], []
            for _ in range(num_steps):
                Y, state = model.decoder(token, state)  # (B, 1) -> (B, 1, V)
                token = Y.argmax(dim=-1)  # (B, 1, V) -> (B, 1): the next input
                tokens.append(token)
                weights.append(model.decoder.attention_weights[-1])  # (B, 1, T_src): this step's
        return torch.cat(tokens, dim=1), torch.cat(weights, dim=1)  # (B, num_steps), (B, num_steps, T_src)
    finally:
        model.train(was_training)
