"""Concept checks of lesson 06 (masking and decoders), in the order the notebook asks them."""
from __future__ import annotations

from .questions import Choice, Number, Option, Predict, get


def _verify_causal_row():
    """Row 3 of the causal mask (0-indexed) allows keys 0, 1, 2 and 3."""
    from course_lib.nn import causal_mask
    mask = causal_mask(8)
    assert [j for j in range(8) if mask[3, j]] == [0, 1, 2, 3]


def _verify_after_softmax():
    """Masking after the softmax: future weights 0, rows summing to less than 1."""
    import torch
    from course_lib.nn import causal_mask
    scores = torch.randn(8, 8, generator=torch.Generator().manual_seed(0))
    mask = causal_mask(8)
    after = torch.softmax(scores, dim=-1) * mask
    right = torch.softmax(scores.masked_fill(~mask, float("-inf")), dim=-1)
    assert after.triu(1).sum() == 0 and (after.sum(-1)[:-1] < 1 - 1e-3).all()
    assert torch.allclose(right.sum(-1), torch.ones(8))


def _verify_padding():
    """Right padding is hidden by the causal mask; without a mask, bidirectional attention sees pads."""
    import torch
    from course_lib.nn import MultiHeadAttention, causal_mask, padding_mask
    torch.manual_seed(0)
    tokens = torch.tensor([[3, 4, 5, 0, 0]])                  # 3 real tokens, 2 pads (id 0)
    junk = torch.tensor([[3, 4, 5, 7, 9]])
    embed, attn = torch.nn.Embedding(10, 8), MultiHeadAttention(8, h=2)
    real = tokens != 0
    with torch.no_grad():
        for mask, same in ((None, False), (padding_mask(tokens, 0), True), (causal_mask(5), True)):
            a, b = attn(embed(tokens), mask=mask)[real], attn(embed(junk), mask=mask)[real]
            assert torch.allclose(a, b, atol=1e-6) == same, f"mask {mask}: expected unchanged={same}"


def _verify_leak():
    """Replacing tokens from t on leaves the causal decoder's logits before t exactly unchanged."""
    import torch
    from course_lib.nn import DecoderOnlyLM
    torch.manual_seed(0)
    lm = DecoderOnlyLM(vocab_size=20, d_model=16, h=2, d_ff=32, n_layers=2, max_len=12).eval()
    tokens = torch.randint(0, 20, (1, 12))
    changed = tokens.clone()
    changed[:, 6:] = (changed[:, 6:] + 1) % 20
    with torch.no_grad():
        assert torch.equal(lm(tokens)[:, :6], lm(changed)[:, :6])


def _verify_teacher_forcing():
    """One pass over the sequence = each prefix run alone (up to rounding)."""
    import torch
    from course_lib.nn import DecoderOnlyLM
    torch.manual_seed(0)
    lm = DecoderOnlyLM(vocab_size=20, d_model=16, h=2, d_ff=32, n_layers=2, max_len=10).eval()
    tokens = torch.randint(0, 20, (1, 10))
    with torch.no_grad():
        full = lm(tokens)[0]
        prefixes = torch.stack([lm(tokens[:, :i + 1])[0, -1] for i in range(10)])
    assert full.shape[0] == 10 and torch.allclose(full, prefixes, atol=1e-5)


def _verify_ln_v():
    import math
    from course_lib.data.shakespeare import CharVocab, load_text
    v = len(CharVocab.from_text(load_text()))
    assert v == 75, f"the lesson's vocabulary has {v} characters, the question says 75"
    assert abs(math.log(v) - get("6.q6").answer) < get("6.q6").tolerance


def _verify_temperature():
    """T < 1 sharpens without changing the ranking."""
    import torch
    from course_lib.nn import next_token_probs
    logits = torch.randn(3, 30, generator=torch.Generator().manual_seed(0))
    p1, p_half = next_token_probs(logits, temperature=1.0), next_token_probs(logits, temperature=0.5)
    assert torch.equal(p1.argmax(-1), p_half.argmax(-1))
    assert (p_half.max(-1).values > p1.max(-1).values).all()
    assert torch.equal(p1.argsort(-1), p_half.argsort(-1))
    assert (p_half > 0).all(), "temperature alone keeps every character possible"


QUESTIONS = [
    Choice(
        "6.q1",
        "Positions count from 0, as in the lesson: in \"to be or\", position 3 is \"b\". Under the "
        "causal mask $M_{ij} = [j \\le i]$, which keys may position 3 attend to?",
        [
            Option("Positions 0, 1 and 2 — everything before it.",
                   "The diagonal is allowed too ($j \\le i$ includes $j = i$): a position always sees "
                   "itself, and the first character sees *only* itself (row 0 of the printed mask)."),
            Option("Positions 3 to 7 — itself and everything after it.",
                   "That is the upper triangle: the positions a causal mask *blocks* (except the "
                   "diagonal). PyTorch's `nn.Transformer` masks use that polarity (True = blocked); the "
                   "course's True means *may attend* (section 2)."),
            Option("Positions 0, 1, 2 and 3.",
                   "Right: row 3 of the lower triangle — itself and every earlier position, never a later "
                   "one (the printed mask, row 3: `1, 1, 1, 1, 0, 0, 0, 0`).", right=True),
            Option("Only position 3 itself.",
                   "That would be the identity mask. The causal mask allows every $j \\le i$: position 3 "
                   "reads positions 0 to 3 (section 2's drawing)."),
        ],
        verify=_verify_causal_row,
    ),
    Predict(
        "6.q2",
        "Predict: instead of $-\\infty$ before the softmax, you take the softmax of all scores and then "
        "multiply the weights by the mask (0 for $j > i$). What do the rows of weights look like?",
        [
            Option("Exactly the right weights: the future gets 0, the rest is unchanged.",
                   "The future gets 0, but the allowed weights are not rescaled: the share that went to "
                   "the future is lost, so row sums drop below 1 (the row sums printed below). Only "
                   "the $-\\infty$ hands that share to the allowed keys."),
            Option("Rows sum to 1, but some weight still lands on the future.",
                   "That is the *fill with 0* slip: $e^0 = 1$ keeps the future in the softmax. Multiplying "
                   "by the mask does zero the future — at a different cost (the output below)."),
            Option("The future gets weight 0, and each row sums to less than 1.",
                   "Right: the weight that went to later positions is simply thrown away; the first row "
                   "keeps the least. $-\\infty$ on the scores zeroes the future *and* renormalises.",
                   right=True),
            Option("NaN: the softmax of a masked row is $0/0$.",
                   "$0/0$ happens only when a row has *no* allowed key and the scores are all $-\\infty$ "
                   "(section 4's `safe_softmax`). Here the softmax runs on unmasked scores, so it is "
                   "finite."),
        ],
        reveal="63dd8ef8",
        verify=_verify_after_softmax,
    ),
    Choice(
        "6.q3",
        "A batch of right-padded lines. When does attention need the **padding** mask, on top of what "
        "the causal mask already does?",
        [
            Option("In bidirectional attention, such as an encoder: there real tokens would also read the "
                   "pads after them.",
                   "Right. With right padding the pads come *later*, so a causal mask already hides them; "
                   "an encoder looks both ways and needs the padding mask (section 4's test: without it the "
                   "real outputs changed). The loss ignores pad targets either way.", right=True),
            Option("Always, because pad queries must output zeros.",
                   "The padding mask hides pad **keys**, not queries: pad positions still compute outputs, "
                   "which the loss ignores (`ignore_index`). A pad query with no allowed key at all is what "
                   "`safe_softmax` turns into zeros. (Section 4, padding masks.)"),
            Option("Never: pads change nothing, since they are just a special token.",
                   "A pad is embedded like any token and, unmasked, gets attention weight: section 4 "
                   "replaced the pads by other tokens and the outputs at the real positions moved."),
            Option("Only after the softmax, to remove the pads' weights.",
                   "Like every mask it goes on the **scores**, as $-\\infty$ before the softmax "
                   "(section 3); zeroing weights afterwards leaves rows summing to less than 1."),
        ],
        verify=_verify_padding,
    ),
    Choice(
        "6.q4",
        "Leakage test: replace every token from position $t = 10$ on and run the model again. For a "
        "correct causal decoder, what must happen to the logits at positions 0 to 9?",
        [
            Option("They may change a little, within float32 rounding.",
                   "Those positions never saw the replaced tokens, so nothing in their computation "
                   "changed: the logits must be bit-for-bit identical. The lesson's test demands exact "
                   "equality, and `DecoderOnlyLM` passes it (section 5)."),
            Option("They change: in a transformer every position attends to the whole sequence.",
                   "That is the unmasked network, and it fails the test (section 5's bars). With the "
                   "causal mask no position reads a later one."),
            Option("They stay exactly the same, bit for bit.",
                   "Right: with the mask, positions before $t$ never read the replaced tokens, so their "
                   "computation is identical. A single changed bit means a leak (section 5).",
                   right=True),
            Option("Only position 9 may change, because it is next to the change.",
                   "Position 9 reads positions 0 to 9 — none of the replaced ones. Only positions "
                   "$\\ge 10$ may change (the grey bars in section 5)."),
        ],
        verify=_verify_leak,
    ),
    Choice(
        "6.q5",
        "Teacher forcing with the causal mask: one forward pass over $n$ characters of training text "
        "gives what?",
        [
            Option("One prediction, for the character after the last one.",
                   "It gives one prediction **per position**: the output at $t$ predicts $x_{t+1}$, and "
                   "the loss is the mean over all $n$ (section 6)."),
            Option("$n$ predictions, each computed from the model's own earlier predictions.",
                   "That is generation. Teacher forcing feeds the **true** text as input, so every position "
                   "reads the real characters before it — which is why all can be computed at once "
                   "(section 6)."),
            Option("$n$ predictions, each able to use the whole sequence.",
                   "Only without the mask — the leak of section 9, whose training loss looks wonderful "
                   "and whose text is garbage. With the mask each position reads only its prefix."),
            Option("$n$ predictions, each equal to running the model on that prefix alone.",
                   "Right: section 6 checked it, one pass against $n$ prefix passes, equal up to rounding "
                   "— $n$ training signals for the price of one pass.", right=True),
        ],
        verify=_verify_teacher_forcing,
    ),
    Number(
        "6.q6",
        "The character model has a vocabulary of $V = 75$ characters. A model that knows nothing and "
        "guesses uniformly gets which cross-entropy loss, in **nats** (natural log)? Two decimals.",
        answer=4.317, tolerance=0.02,
        right="Right: $\\ln 75 \\approx 4.32$ nats — the line \"uniform (ln V)\" on the loss curves of "
              "section 9. The untrained model starts slightly above it (section 8 explains why).",
        too_low="Too low. Each character gets $p = 1/75$, so the loss is $-\\ln(1/75) = \\ln 75$. "
                "($\\log_{10} 75 \\approx 1.88$ is the wrong logarithm.) The vocabulary of 75 is printed in section 7.",
        too_high="Too high. $\\log_2 75 \\approx 6.23$ would be in **bits**; the loss uses the natural "
                 "logarithm: $\\ln 75$ nats (section 8).",
        verify=_verify_ln_v,
    ),
    Choice(
        "6.q7",
        "Sampling with temperature $T = 0.5$ instead of $T = 1$ (no top-k): what happens to the "
        "next-character distribution?",
        [
            Option("It flattens: rare characters come up more often.",
                   "That is $T > 1$. Dividing the logits by $0.5$ doubles their differences, so the "
                   "softmax gets *sharper* (section 10's table: the top character gains probability from $T = 1$ "
                   "to $T = 0.5$)."),
            Option("It sharpens: the most likely character gets more probability; the order is unchanged.",
                   "Right. $\\operatorname{softmax}(z/T)$ with $T < 1$ widens the gaps between logits but "
                   "keeps their order (the claim cell checks the same top character for every setting).",
                   right=True),
            Option("It keeps only the few most likely characters and drops the rest.",
                   "That is **top-k**. Temperature alone keeps every character possible, just less likely; "
                   "only top-k (or $T = 0$) sets probabilities to exactly 0 (section 10)."),
            Option("It can change which character is the most likely.",
                   "Dividing all logits by the same positive $T$ keeps their order, so the most likely "
                   "character stays the same at every temperature (section 10's claim cell)."),
        ],
        verify=_verify_temperature,
    ),
]
