"""Concept checks of lesson 11 (a real LLM): RMSNorm against LayerNorm, what rotary positions
keep, what grouped-query attention saves, tied embeddings (already in the 2017 paper), what
the "it" -> "animal" head does, and what a KV cache holds."""
from __future__ import annotations

from .questions import Choice, Option


def _verify_rms_norm():
    """RMSNorm: x / sqrt(mean(x²) + eps) · γ, no mean subtracted; LayerNorm centres."""
    import torch

    from course_lib.nn import LayerNorm, RMSNorm

    x = torch.tensor([[2.0, 4.0, 6.0, 8.0]])
    with torch.no_grad():
        rms = RMSNorm(4)(x)
        ln = LayerNorm(4)(x)
    eps = RMSNorm(4).eps
    assert torch.allclose(rms, x / torch.sqrt(x.pow(2).mean(-1, keepdim=True) + eps), atol=1e-6)
    assert not torch.allclose(rms, x / torch.sqrt(x.pow(2).sum(-1, keepdim=True) + eps), atol=1e-3), \
        "without the 1/d it would be another function"
    assert (rms > 0).all() and abs(float(ln.sum())) < 1e-5, "RMSNorm keeps the sign pattern, LayerNorm centres"


def _verify_rope():
    """Rotation keeps each vector's norm, and q_m · k_n depends on n - m only."""
    import torch

    from course_lib.nn import apply_rotary

    g = torch.Generator().manual_seed(0)
    q, k = torch.randn(5, 16, generator=g), torch.randn(5, 16, generator=g)
    for pairs in ("interleaved", "halves"):
        rq0, rk0 = apply_rotary(q, 1e5, pairs=pairs), apply_rotary(k, 1e5, pairs=pairs)
        rq1, rk1 = apply_rotary(q, 1e5, offset=1000, pairs=pairs), apply_rotary(k, 1e5, offset=1000, pairs=pairs)
        assert torch.allclose(rq0.norm(dim=-1), q.norm(dim=-1), atol=1e-4), "rotation keeps the norm"
        assert torch.allclose(rq0 @ rk0.T, rq1 @ rk1.T, atol=1e-3), "scores depend on n - m only"
        assert not torch.allclose(rq0, rq1, atol=1e-3), "the vectors themselves do change"


def _verify_gqa():
    """SmolLM2's sizes: 9 query heads, 3 key/value heads -> a KV cache 3x smaller than 9 heads'."""
    from course_lib.nn.llama import LlamaConfig
    from course_lib.nn.modern import KVCache

    c = LlamaConfig()
    assert (c.h, c.h_kv) == (9, 3), (c.h, c.h_kv)
    gqa = KVCache(2, 1, c.h_kv, c.d_k, capacity=4)
    mha = KVCache(2, 1, c.h, c.d_k, capacity=4)
    ratio = sum(t.numel() for t in mha.k + mha.v) / sum(t.numel() for t in gqa.k + gqa.v)
    assert ratio == c.h / c.h_kv == 3, ratio


def _verify_tied():
    """Tied: no separate output matrix; untying would add |V| · d = 28 311 552 parameters."""
    import torch

    from course_lib.nn.llama import LlamaConfig, LlamaLM

    c = LlamaConfig()
    assert c.tie_embeddings and c.vocab_size * c.d_model == 28_311_552
    tiny = LlamaLM(LlamaConfig(vocab_size=11, d_model=8, n_layers=1, h=2, h_kv=1, d_ff=8, max_len=8))
    assert tiny.lm_head is None
    x = torch.tensor([[1, 2, 3]])
    with torch.no_grad():
        h = tiny.norm(tiny.blocks[0](tiny.embed(x), _rope(tiny, 3)))
        assert torch.allclose(tiny(x), h @ tiny.embed.weight.T, atol=1e-6), "logits = x Eᵀ"


def _rope(model, n):
    from course_lib.nn import rotary_cos_sin

    return rotary_cos_sin(n, model.config.d_k, model.config.rope_base)


def _verify_kv_cache():
    """The new token's attention over cached keys/values equals the last row of full causal attention."""
    import torch

    from course_lib.nn import causal_mask, scaled_dot_product_attention

    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(1, 2, 5, 4, generator=g) for _ in range(3))
    full, _ = scaled_dot_product_attention(q, k, v, causal_mask(5))
    step, _ = scaled_dot_product_attention(q[:, :, -1:], k, v)       # cached k, v of all 5 positions
    assert torch.allclose(full[:, :, -1:], step, atol=1e-6)


def _verify_animal_head():
    """11.q5: 270 heads (30 blocks x 9 heads, as the lesson prints the config); the head the view
    opens on is the one with the largest "it" -> "animal" weight; "didn", "'t", "cross" give
    "animal" more than "it" does (the lesson's rows, read from its saved output: pretrained)."""
    from .questions import printed
    blocks, heads = printed("11", "read_gguf_config", r"(\d+) blocks, .*?h = (\d+) query heads")
    assert int(blocks) * int(heads) == 270, f"{blocks} blocks x {heads} heads, the question says 270"
    top = printed("11", "head_weight_grid", r"layer\s+(\d+) head (\d+): [\d.]+ of 'it''s attention")
    shown = printed("11", "bertviz_views", r"opens on layer (\d+), head (\d+)")
    assert top == shown, f"largest 'it'->'animal' head {top}, the view opens on {shown}"
    (more,) = printed("11", "That head's whole map", r"(\d+) give it more \(didn, 't, cross\)")
    assert int(more) == 3, more


QUESTIONS = [
    Choice(
        "11.q1",
        "What does RMSNorm leave out of LayerNorm?",
        [
            Option("The mean subtraction and $\\beta$: it divides by $\\sqrt{\\frac{1}{d}\\sum_j x_j^2 + "
                   "\\varepsilon}$ and multiplies by $\\gamma$.",
                   "Right: no centring, one statistic instead of two. The cell above shows it: "
                   "LayerNorm's output sums to 0, RMSNorm's keeps the direction of $x$.", right=True),
            Option("The $\\frac{1}{d}$: it divides by the root of the *sum* of squares.",
                   "That would shrink every vector by $\\sqrt{d}$ more. The root *mean* square keeps the "
                   "$\\frac{1}{d}$, as LayerNorm's variance does (section 2.1's formula)."),
            Option("The gain $\\gamma$.",
                   "RMSNorm keeps $\\gamma$ — SmolLM2 learned gains of about 0.04–0.4 (section 2.1's plot). "
                   "It drops the shift $\\beta$ and the mean."),
            Option("The $\\varepsilon$: the root mean square is never 0.",
                   "It keeps $\\varepsilon$ ($10^{-5}$ in SmolLM2, printed in section 1) for the same reason "
                   "as LayerNorm: a vector of zeros must not divide by zero."),
        ],
        verify=_verify_rms_norm,
    ),
    Choice(
        "11.q2",
        "Placed at positions 1000–1011 instead of 0–11, the sentence gives the same logits. Why, with "
        "rotary positions?",
        [
            Option("Rotating $q_m$ and $k_n$ keeps their norms, and the score $q_m^\\top R_{n-m} k_n$ depends "
                   "on the positions only through $n - m$.",
                   "Right: shifting every position by 1000 leaves every difference $n - m$, and so every score, "
                   "as it was. Only $q$ and $k$ are rotated, never $x$ or $v$.", right=True),
            Option("The rotation is a small vector added to the input, too small to matter.",
                   "That describes lesson 03's added sinusoids, which change every input vector when the "
                   "positions change. RoPE adds nothing: it rotates $q$ and $k$ inside attention."),
            Option("RoPE ignores positions beyond the length it was trained on.",
                   "Positions 1000–1011 are well inside SmolLM2's 8 192-token context, and RoPE rotates by "
                   "any angle. Equal logits come from relative positions, not from a cut-off. (Section 2.2: the logits at positions 0 and 1000, printed above.)"),
            Option("The causal mask cancels the offset.",
                   "The mask only decides which keys a query may see; it is the same triangle at any offset. "
                   "The scores stay equal because they depend on $n - m$ only. (Section 2.2's cell above: same logits at offset 1000.)"),
        ],
        verify=_verify_rope,
    ),
    Choice(
        "11.q3",
        "SmolLM2 has 9 query heads but only 3 key/value heads (grouped-query attention). What does that "
        "save?",
        [
            Option("Memory at generation time: the KV cache holds 3 key/value heads per layer instead of 9, "
                   "3× less (and smaller $W^K$, $W^V$).",
                   "Right: section 2.4 measured the cache 3.00× smaller with the same logits, 377 MB instead "
                   "of 1 132 MB over the full context.", right=True),
            Option("Two thirds of the attention scores: only 3 heads compute $q k^\\top$.",
                   "All 9 query heads still compute their own scores and weights; they share the keys "
                   "(`repeat_kv` copies each to its group). The saving is in what is stored, not computed. (Section 2.4: the two caches printed above.)"),
            Option("Nothing at generation time; it only makes training faster.",
                   "The point is generation: every generated token keeps its keys and values in every layer, "
                   "and with 3 K/V heads that cache is 3× smaller (section 2.4)."),
            Option("Accuracy: sharing keys makes the heads agree.",
                   "Sharing is a trade of memory against freedom, not a gain in accuracy; each query head "
                   "still has its own $W^Q$ and attends in its own way. (Section 2.4: the multi-head copy printed above gives the same logits.)"),
        ],
        verify=_verify_gqa,
    ),
    Choice(
        "11.q4",
        "SmolLM2's logits are $x E^\\top$: the output projection is the embedding matrix (tied "
        "embeddings). Is that a change since the 2017 Transformer?",
        [
            Option("No: the 2017 paper (§3.4) already shares one matrix between its embedding layers and the "
                   "pre-softmax linear layer.",
                   "Right: \"we share the same weight matrix between the two embedding layers and the "
                   "pre-softmax linear transformation\", citing Press & Wolf (arXiv 2016, EACL 2017). "
                   "Unlike SmolLM2, the paper also multiplies the embeddings by $\\sqrt{d_{model}}$.",
                   right=True),
            Option("Yes: the 2017 Transformer had a separate output matrix; tying came with GPT-style models.",
                   "Read §3.4 of \"Attention Is All You Need\": the output layer shares the embeddings' "
                   "weights. Tying is older than the Transformer (Press & Wolf; Inan et al.)."),
            Option("Yes, and it is what makes the KV cache small.",
                   "Tying saves parameters — $|V| \\cdot d$ = 28.3 M here (section 2.5) — not cache memory. The "
                   "cache shrinks with grouped-query attention."),
            Option("It is not tied at all: a separate output matrix is loaded from the file.",
                   "Section 2.5 prints `separate output matrix: False`: the file has no output matrix, and "
                   "the logits are $x E^\\top$."),
        ],
        verify=_verify_tied,
    ),
    Choice(
        "11.q5",
        "The head the view above opens on gives \"it\" → \"animal\" the largest weight of all 270 heads. "
        "Measured over its whole map, what does that head do?",
        [
            Option("It looks back at the subject, \"animal\", from most tokens after it — \"it\" is one of "
                   "them.",
                   "Right: \"didn\", \"'t\" and \"cross\" give \"animal\" even more weight than \"it\" "
                   "does (the rows printed above). The famous picture, from another model (an encoder), "
                   "shows only the row of \"it\".", right=True),
            Option("It resolves the pronoun: it links \"it\" to the noun it refers to.",
                   "Then \"it\" would stand out in its row of the map. It does not: several tokens that are "
                   "not pronouns give \"animal\" more weight (the rows printed above)."),
            Option("It attends from \"it\" to \"animal\" and from nowhere else.",
                   "The rows printed above say otherwise: most tokens after \"animal\" put much of their "
                   "weight on it, some more than \"it\" does."),
            Option("It sees that the animal was tired, so \"it\" must be the animal.",
                   "At \"it\" a decoder has not read \"tired\": the causal mask hides it. The next cells show "
                   "that \"it\" attends exactly alike in the *tired* and *wide* sentences."),
        ],
        verify=_verify_animal_head,
    ),
    Choice(
        "11.q6",
        "A KV cache speeds up generation. What exactly does it keep from earlier steps?",
        [
            Option("The keys and values of every earlier token, in every layer.",
                   "Right: in a causal model they never change when a token is appended, so each step "
                   "computes $q, k, v$ for the new token only and attends over the cache (exercise 11.5).",
                   right=True),
            Option("The queries, keys and values of every earlier token.",
                   "An earlier token's query is never used again: only the *new* token asks. Keeping "
                   "queries would waste memory — the cache holds $2 \\cdot L \\cdot h_{kv} \\cdot n \\cdot "
                   "d_k$ numbers, keys and values. (Section 7 and exercise 11.5: the cache is `k_cache`, `v_cache`.)"),
            Option("The attention weights of the earlier steps, reused for the new token.",
                   "The new token's weights are a new row — its own query against all keys — and every "
                   "earlier row stays as it was. Nothing about weights is reused. (Exercise 11.5: each step computes a new row of weights.)"),
            Option("The logits of earlier positions, so they need not be recomputed.",
                   "Earlier logits are never needed again once their token is chosen. What the new token "
                   "needs from the past is the keys and values to attend over. (Section 7 and exercise 11.5.)"),
        ],
        verify=_verify_kv_cache,
    ),
]
