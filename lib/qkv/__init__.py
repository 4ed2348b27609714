"""qkv: the reference library of the course on D2L chapter 11.

"Attention Mechanisms and Transformers" (Dive into Deep Learning, chapter 11)
builds its components section by section; this package holds our own
reference implementation of each, plus the course's helpers (data loaders,
trainer, cached weights, plotting, timing, widgets) and, apart in
:mod:`qkv.recipes`, the course's own training recipes. One module per concept;
every public object's docstring names the D2L section that introduces it.

Glossary: the names and shape letters used in every module
----------------------------------------------------------
Names follow D2L so the course reads beside the book:
``queries, keys, values, valid_lens, num_hiddens, num_heads, dropout``.

Shape comments sit at the end of the line, in one notation::

    B   batch size                         Q   number of queries
    K   number of key-value pairs           T   number of time steps (tokens)
    d   query/key feature size              v   value feature size
    H   number of heads (num_heads)         N   num_hiddens (= H * N/H)
    h   per-head size, N / H                F   FFN hidden size (ffn_num_hiddens)
    V   vocabulary size                     E   embedding size
    L   number of layers / blocks           P   number of patches
    C   image channels                      S   image side (pixels)
    G   number of key/value heads           M   MLP hidden size (mlp_num_hiddens)
    p   patch side (pixels)

Example: ``scores = queries @ keys.transpose(1, 2)  # (B, Q, d) @ (B, d, K) -> (B, Q, K)``.

In the prose
------------
The sections' equations use the same letters, italic for a size, bold lower case for a vector (``q``, ``k``, ``v``:
one query, key, value) and bold upper case for a matrix (``Q``, ``K``, ``V``: all of them), so that the size K and
the matrix of keys are told apart by the type. A projection matrix is written as ``nn.Linear`` stores its
``weight``, (out, in), acting on a column vector: ``W_q q``; vectors stacked as the rows of a matrix are projected
as ``X W_q^T`` (what ``nn.Linear`` computes). Some pages need more letters, or give a letter a meaning of its own
there; each letter keeps one meaning all through its page:

====  =====================================================================================
D2L   letters of that page's prose beyond the table above
====  =====================================================================================
11.5  r = H / G query heads per key/value head; delta, the offset a head reads (t + delta);
      b, i, t, f the indices of an example, a head, a position and a feature
11.6  n the length of a sequence (D2L's letter in the complexity table; T in the code);
      k the kernel size of a convolution; bold P the sinusoidal table, rows p_i;
      i and t a position, j a pair of columns, delta an offset, omega_j and theta_j
      frequencies
11.4  T_src the source's length (T the target's)
11.7  bold X_enc the encoder's outputs, X^(0) the decoder's input; n the prefix length
      of a cached decoding step
11.8  h, w the image's height and width and p_h, p_w the patch's (D2L's letters; the
      per-head size does not appear on that page); t a patch's place in the sequence;
      bold Z the tokens, Z^(L) after L blocks
11.9  ell a valid length; T_prefix, T_src, T_tgt the prefix, source and target lengths;
      n noise tokens in m spans; w windows; N non-embedding parameters (Kaplan et al.'s
      letter; the width is written num_hiddens on that page); p a probability,
      script L the loss, mask^(...) an attention mask; alpha and a the scaling fit's
      exponent and constant; tau the temperature, k of top-k; bold x and y a prompt and a
      response, y^+ and y^- the preferred and the rejected one; pi and pi_ref the tuned and
      the frozen reference model; r a reward; beta the KL or DPO weight; sigma the logistic
      function
lab   n the sequence length (D2L's complexity table); kappa a kernel size, beta bytes per
      number, tau^start and tau^end clock readings; M a matrix side (step 5), b a block
      size; m, ell and s_i the online softmax's running maximum, running sum and scores;
      k the fitted power-law exponent
dec.  (the decoder lab) P the number of tokens in a key/value cache; bold g RMSNorm's
      scale, epsilon its guard; W_gate, W_up, W_down SwiGLU's matrices; R_m the rotation of
      position m; p the nucleus's probability mass, p_(j) the j-th largest probability
====  =====================================================================================

Sections and modules
--------------------
Every module of the package, by the section that uses it:

====  ===============================  ============================================
D2L   topic                            module
====  ===============================  ============================================
11.1  queries, keys, values            :mod:`qkv.plotting` (show_heatmaps)
11.2  attention pooling by similarity  :mod:`qkv.nadaraya_watson`
11.3  attention scoring functions      :mod:`qkv.attention`
11.4  Bahdanau attention               :mod:`qkv.bahdanau`, :mod:`qkv.seq2seq`
11.5  multi-head attention             :mod:`qkv.multihead`
11.6  self-attention, positions        :mod:`qkv.positional`
lab   the cost of attention            :mod:`qkv.costlab`, :mod:`qkv.timing`
11.7  the Transformer                  :mod:`qkv.transformer`
11.8  the Vision Transformer           :mod:`qkv.vit`; our CPU recipe for it,
                                       :mod:`qkv.recipes.vit`
11.9  large-scale pretraining          :mod:`qkv.pretraining`,
                                       :mod:`qkv.corruption` (BERT, T5 inputs),
                                       :mod:`qkv.lm` (small language models)
dec.  the decoder of 2026 (lab)      :mod:`qkv.modern_decoder`; its recipe,
                                       :mod:`qkv.recipes.modern`
--    translating, BLEU                :mod:`qkv.translate`, :mod:`qkv.bleu`
--    data, training, trained weights  :mod:`qkv.data`, :mod:`qkv.training`,
                                       :mod:`qkv.recipes.weights`, :mod:`qkv.recipes`,
                                       :mod:`qkv._lock` (their caches' lock)
--    the notebooks' tests, figures    :mod:`qkv.checks` (its messages: :mod:`qkv._explain`),
      and interactive explorers        :mod:`qkv.figures`, :mod:`qkv.widgets`
--    the one argument check           :mod:`qkv._validate` (positive_int)
====  ===============================  ============================================

Data
----
Loaders look for each file in ``data_dir=``, then ``$QKV_DATA_DIR``, then (for
Fashion-MNIST) Debian's ``/usr/share/datasets/fashion-mnist``, then the cache
``$QKV_CACHE_DIR`` (default ``~/.cache/qkv``), and only then download it from
its public source, checking a pinned checksum; ``QKV_OFFLINE=1`` forbids the
download (the tests set it).
"""

__version__ = "0.1.0"
