"""Concept checks of lesson 07 (cross-attention and the encoder-decoder), in notebook order."""
from __future__ import annotations

from .questions import Choice, Number, Option, Predict, get


def _verify_sources():
    """Q from the decoder, K and V from the memory: one output row per target position, and a
    decoder state changes only its own row."""
    import torch
    from course_lib.nn import MultiHeadAttention
    torch.manual_seed(0)
    mha = MultiHeadAttention(d_model=8, h=2)
    x, memory = torch.randn(1, 3, 8), torch.randn(1, 5, 8)
    with torch.no_grad():
        out, w = mha(x, memory, need_weights=True)
        assert out.shape == (1, 3, 8) and w.shape == (1, 2, 3, 5)
        x2 = x.clone()
        x2[0, 1] += 1.0
        moved = (mha(x2, memory) - out).abs().amax(-1)[0] > 1e-6
    assert moved.tolist() == [False, True, False]


def _verify_masks():
    """DecoderLayer: a causal self-mask keeps earlier outputs exact; cross-attention is unmasked in time."""
    import torch
    from course_lib.nn import DecoderLayer, causal_mask
    torch.manual_seed(0)
    block = DecoderLayer(d_model=8, h=2, d_ff=16).eval()
    x, memory = torch.randn(1, 4, 8), torch.randn(1, 5, 8)
    with torch.no_grad():
        y = block(x, memory, self_mask=causal_mask(4))
        x_later = x.clone()
        x_later[0, 3] = torch.randn(8)
        assert torch.equal(block(x_later, memory, self_mask=causal_mask(4))[0, :3], y[0, :3])


def _verify_source_word():
    """Changing one source word changes every target position's output."""
    import torch
    from course_lib.nn import DecoderLayer, causal_mask
    torch.manual_seed(0)
    block = DecoderLayer(d_model=16, h=4, d_ff=32).eval()
    x, memory = torch.randn(1, 6, 16), torch.randn(1, 5, 16)
    with torch.no_grad():
        y = block(x, memory, self_mask=causal_mask(6))
        memory2 = memory.clone()
        memory2[0, 2] += 1.0
        moved = (block(x, memory2, self_mask=causal_mask(6)) - y)[0].abs().amax(-1) > 1e-6
    assert moved.all(), moved.tolist()


def _verify_lookup():
    import torch
    import torch.nn.functional as F
    E = torch.randn(5, 3)
    ids = torch.tensor([3, 0, 3, 1])
    assert torch.equal(F.one_hot(ids, 5).float() @ E, E[ids])


def _verify_cross_count():
    """Cross-attention weights at the diagram's sizes: (batch, h, n_tgt, n_src) = (2, 4, 3, 5)."""
    import torch
    from course_lib.nn import MultiHeadAttention
    mha = MultiHeadAttention(d_model=32, h=4)
    with torch.no_grad():
        _, w = mha(torch.randn(2, 3, 32), torch.randn(2, 5, 32), need_weights=True)
    assert tuple(w.shape) == (2, 4, 3, 5) and w.numel() == get("7.q5").answer, tuple(w.shape)


QUESTIONS = [
    Choice(
        "7.q1",
        "In cross-attention, where do the queries, the keys and the values come from?",
        [
            Option("Queries from the encoder's output; keys and values from the decoder.",
                   "Reversed. Then the output would have one row per **source** word; the decoder needs one "
                   "per **target** position. The decoder asks (queries), the encoder's output answers "
                   "(keys and values) — section 1."),
            Option("Queries and keys from the encoder's output, values from the decoder.",
                   "Keys and values come in pairs from the same sequence: the weights $\\alpha_{ij}$ say "
                   "which *source* word $j$ to read, so the values read must be the source's. Section 1: "
                   "$K = H_\\text{enc} W^K$, $V = H_\\text{enc} W^V$."),
            Option("Queries from the decoder's states; keys and values from the encoder's output.",
                   "Right: $Q = X W^Q$, $K = H_\\text{enc} W^K$, $V = H_\\text{enc} W^V$. The weights are "
                   "$n_\\text{tgt} \\times n_\\text{src}$, and changing one decoder state changed only its own "
                   "output row "
                   "(section 1).", right=True),
            Option("All three from both sequences, concatenated into one.",
                   "That would be self-attention over a joined sequence. Cross-attention keeps them apart: "
                   "queries from the target side, keys and values from the memory (section 1's shapes: q "
                   "(3, 8), k and v (5, 8))."),
        ],
        verify=_verify_sources,
    ),
    Choice(
        "7.q2",
        "Which masks does each attention of a decoder block get, when both source and target are padded?",
        [
            Option("Both attentions get the causal mask and both padding masks.",
                   "A causal mask on cross-attention is the slip the checker names after exercise 7.1: the "
                   "whole source is known before decoding starts, so every target position may read every "
                   "source word."),
            Option("Masked self-attention: causal + target padding. Cross-attention: source padding only.",
                   "Right. Self-attention must not read later target tokens; cross-attention reads a source "
                   "that is known in full, so only its pads are hidden (section 2).", right=True),
            Option("Self-attention: target padding only. Cross-attention: causal + source padding.",
                   "The causal mask belongs to the *self*-attention over the target: that is where later "
                   "tokens would leak (lesson 06). Cross-attention needs no causal mask (section 1)."),
            Option("Self-attention: causal. Cross-attention: none — the source is never padded.",
                   "In a batch, short source sentences are padded, and no query should read a pad: "
                   "cross-attention gets the source padding mask (section 1, the 3-word source padded "
                   "to 5)."),
        ],
        verify=_verify_masks,
    ),
    Predict(
        "7.q3",
        "Predict: a decoder block with the causal mask on its self-attention, 6 target positions, 5 source "
        "words. You change source word 2 only. Which target positions' outputs change?",
        [
            Option("Positions 2 to 5: the causal mask hides the change from the earlier ones.",
                   "The causal mask is on the *self*-attention over target positions; it says nothing about "
                   "the source. Cross-attention has no causal mask, so every target position reads source "
                   "word 2. (Section 1: the checker's demo names a causal mask in cross-attention as a slip.)"),
            Option("Only position 2, the one aligned with source word 2.",
                   "Source and target positions are not aligned one to one (the lengths even differ). Each "
                   "target position's query weighs *every* source word. (Section 1: the weights' shape `(batch, h, n_tgt, n_src)` printed above.)"),
            Option("None: the decoder's outputs depend on the target tokens only.",
                   "The cross-attention sublayer mixes the memory into every target position — that is how "
                   "the source reaches the translation. (Section 2: the decoder block's three sublayers.)"),
            Option("All 6.",
                   "Right: cross-attention needs no causal mask, so every target position reads every "
                   "source word, and changing one changes all six outputs.", right=True),
        ],
        reveal="7b6dcf16",
        verify=_verify_source_word,
    ),
    Choice(
        "7.q4",
        "Token $i$ as a one-hot vector $e_i$ of length $V$ times the embedding matrix $E$ "
        "($V \\times d_\\text{model}$): what is $e_i^\\top E$?",
        [
            Option("Column $i$ of $E$.",
                   "A column of $E$ has $V$ entries, not $d_\\text{model}$. The one-hot vector selects along the "
                   "vocabulary axis, the rows (section 3's printed example)."),
            Option("Row $i$ of $E$ — so an embedding layer just looks the row up.",
                   "Right: every other row is multiplied by 0. `torch.equal(one_hot @ E, E[ids])` printed "
                   "True, and the lookup reads $d_\\text{model}$ numbers where the product would do "
                   "$V \\cdot d_\\text{model}$ multiply-adds (section 3).", right=True),
            Option("The sum of all rows of $E$, since a one-hot vector sums to 1.",
                   "The entries of $e_i$ are 0 except one: the product weighs row $i$ by 1 and every other "
                   "row by 0, so it is row $i$ alone (section 3)."),
            Option("Row $i$ up to float rounding; that is why libraries do the multiplication.",
                   "The lookup is exact — section 3 compared with `torch.equal`, not a tolerance — and "
                   "libraries index instead of multiplying, because the product wastes "
                   "$V \\cdot d_\\text{model}$ multiply-adds per token."),
        ],
        verify=_verify_lookup,
    ),
    Number(
        "7.q5",
        "At the diagram's sizes — batch 2, $h = 4$ heads, $n_\\text{src} = 5$, $n_\\text{tgt} = 3$ — how many "
        "attention weights does one decoder layer's **cross**-attention compute (all entries of its "
        "weight tensor)?",
        answer=120, tolerance=0.5,
        right="Right: shape (batch, $h$, $n_\\text{tgt}$, $n_\\text{src}$) = (2, 4, 3, 5), $2 \\cdot 4 \\cdot 3 "
              "\\cdot 5 = 120$ — one weight per head, per target position, per source word (section 4's "
              "table: `cross_weights`).",
        too_low="Too low. $2 \\cdot 4 \\cdot 3 \\cdot 3 = 72$ would be the decoder's masked *self*-attention "
                "$(2, 4, 3, 3)$. Cross-attention has one column per **source** word: $(2, 4, 3, 5)$. (Section 4's shape table and explorer above.)",
        too_high="Too high. $2 \\cdot 4 \\cdot 5 \\cdot 5 = 200$ would be the encoder's self-attention "
                 "$(2, 4, 5, 5)$. Cross-attention has one row per **target** position: $(2, 4, 3, 5)$. (Section 4's shape table and explorer above.)",
        verify=_verify_cross_count,
    ),
]
