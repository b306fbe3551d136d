"""Concept checks of lesson 09 (transformer families): the three families' masks and
objectives, what a causal mask does to an encoder, the ceiling of a masked head, what an
attention weight does and does not show, and what a head's pattern score means."""
from __future__ import annotations

from .questions import Choice, Number, Option, Predict

N_DIGITS = 6       # section 1 reverses sequences of 6 digits


def _needed_visible():
    """For output i of the reversal, is input 5 - i visible under the causal mask? (n,) bools."""
    import torch

    from course_lib.nn import causal_mask

    i = torch.arange(N_DIGITS)
    return causal_mask(N_DIGITS)[i, N_DIGITS - 1 - i]


def _verify_causal_encoder():
    """The causal mask hides the needed digit exactly from outputs 0, 1, 2."""
    visible = _needed_visible()
    assert visible.tolist() == [False, False, False, True, True, True], visible.tolist()


def _verify_ceiling():
    """A head that puts all its weight on the needed digit wherever the mask lets it averages 3/6."""
    import torch

    from course_lib.experiments.families import needed_positions
    from course_lib.nn import causal_mask

    q, k = needed_positions("causal encoder")
    best = torch.zeros(N_DIGITS, N_DIGITS)
    visible = causal_mask(N_DIGITS)
    for i, j in zip(q.tolist(), k.tolist()):                 # perfect wherever allowed ...
        if visible[i, j]:
            best[i, j] = 1.0
        else:                                                 # ... else all on the query itself
            best[i, i] = 1.0
    ceiling = float(best[q, k].mean())
    assert abs(ceiling - _CEILING) < 1e-6, f"ceiling {ceiling}, the question says {_CEILING}"


def _verify_cls_score():
    """A head that sends 85 % of every inner token's weight to [CLS] has a [CLS] score of 0.85."""
    import torch

    from course_lib.experiments.head_patterns import pattern_scores

    n = 8
    w = torch.full((n, n), 0.15 / (n - 1))
    w[:, 0] = 0.85                                            # [CLS] is position 0
    scores = pattern_scores([w[None, None]])                  # one layer, batch 1, one head
    assert abs(float(scores["[CLS]"][0, 0]) - 0.85) < 1e-6, scores["[CLS]"]


_CEILING = 0.5

def _verify_it_head():
    """9.q4 quotes 0.64 (L3 H1, "it" -> "animal", tired) and "the other 71 heads": the lesson's
    printed table and head count (pretrained weights: read from its saved output)."""
    from .questions import printed
    (w,) = printed("09", "it_attention_grid", r"L3 H1\s+tired\s+animal\s+([\d.]+)")
    assert abs(float(w) - 0.64) <= 0.005, f"the lesson prints {w} for L3 H1, the question says 0.64"
    (total,) = printed("09", "it_attention_grid", r"tired \d+, wide \d+ of (\d+)")
    assert int(total) - 1 == 71, f"the lesson counts {total} heads, the question says 'the other 71'"
    tired, wide = printed("09", "it_attention_grid", r"it->street > it->animal: tired (\d+), wide (\d+)")
    assert abs(int(tired) - int(wide)) <= 3, "the feedback says the count of 'street' heads barely changes"


def _verify_cls_head():
    """9.q5: the strongest [CLS] head's score (0.85) and the grid's count (30 [CLS] heads of 72)."""
    from .questions import printed
    _verify_cls_score()
    (score,) = printed("09", "classify_heads", r"strongest\s+\[CLS\] head: L\d+ H\d+, score ([\d.]+)")
    assert abs(float(score) - 0.85) <= 0.005, f"the lesson prints {score}, the question says 0.85"
    (n,) = printed("09", "classify_heads", r"'\[CLS\]': (\d+)")
    assert int(n) == 30, f"the lesson counts {n} [CLS] heads, the feedback says 30"


QUESTIONS = [
    # 9.q1 has no verify: the families' masks and objectives are the published models' design (the
    # table in section 1), not a computation of the lesson.
    Choice(
        "9.q1",
        "Which line pairs a model with its self-attention mask and its pre-training objective correctly?",
        [
            Option("BERT: encoder-only, bidirectional (every $i$ sees every $j$), masked-language modelling.",
                   "Right: to name a hidden word it must read both sides of the gap, hence no causal mask "
                   "(the table above).", right=True),
            Option("GPT: decoder-only, bidirectional, predicts the next token.",
                   "Predicting the next token with a bidirectional mask would let position $i$ read token "
                   "$i+1$ — the answer. GPT's mask is causal: $i$ sees $j \\le i$ (the table above)."),
            Option("T5: encoder-only, bidirectional, labels each input position.",
                   "T5 is an encoder-decoder: a bidirectional encoder reads the input text (the task is a "
                   "prefix such as `summarize:`), and a causal decoder writes an answer of any length through "
                   "cross-attention. (The table at the top of section 1.)"),
            Option("BERT: encoder-only, causal, predicts the next token.",
                   "That is a causal encoder — section 1's fourth model, the instructive failure. BERT's "
                   "encoder is bidirectional and trained by masked-language modelling."),
        ],
    ),
    Predict(
        "9.q2",
        "The *causal encoder* — an encoder-only tagger with a causal mask — is trained to reverse 6 digits: "
        "output $i$ must be input $5-i$. Which outputs will it get right? Choose, then run the next cell.",
        [
            Option("All six, given enough training.",
                   "Training cannot help where the mask hides the input: output $i$ sees inputs $0..i$ "
                   "only, and for $i = 0, 1, 2$ the digit $5-i$ lies in the future. Those three stay at "
                   "chance, about 0.1 (the accuracies printed by the next cell)."),
            Option("Outputs 3, 4, 5 only; outputs 0, 1, 2 stay at chance.",
                   "Right: for $i \\ge 3$ the needed digit $5-i \\le i$ is in the past, for $i \\le 2$ it is "
                   "in the future, hidden by the triangle. Same weights and data as the encoder-only model: "
                   "only the mask differs.", right=True),
            Option("Outputs 0, 1, 2 only.",
                   "Reversed: output 0 needs input 5, the *last* digit, which a causal mask hides from it. "
                   "It is the late outputs whose needed digit is already in the past. (The accuracies printed by the next cell.)"),
            Option("None: a causal model cannot reverse a sequence.",
                   "The decoder-only model is causal too and reverses perfectly: it writes the answer "
                   "*after* reading all six digits. The causal encoder fails only where the needed digit "
                   "is in its future. (The accuracies printed by the next cell: the decoder-only line.)"),
        ],
        reveal="65d9e86d",
        verify=_verify_causal_encoder,
    ),
    Number(
        "9.q3",
        "The causal encoder's heads are scored by their weight on the needed digit, averaged over the 6 "
        "outputs. What is the largest value this average could reach, for any head of that model?",
        answer=_CEILING, tolerance=0.01,
        right="Right: outputs 0, 1, 2 must give the needed digit weight exactly 0 (masked), outputs 3–5 can "
              "give it at most 1: at most $3/6 = 0.5$. Compare the causal encoder's line in the next "
              "cell's output (the text after the maps explains it).",
        too_low="Too low: outputs 3, 4 and 5 *can* see their needed digit and may give it all their weight, "
                "1 each. Only outputs 0–2 are held to 0 by the mask: $(0+0+0+1+1+1)/6$. (Section 1's text after the maps.)",
        too_high="Too high: for outputs 0, 1 and 2 the needed digit is in the future, and the causal mask "
                 "gives it weight exactly 0 (the claim cell checks it). Those three zeros cap the mean of six "
                 "at $3/6$.",
        verify=_verify_ceiling,
    ),
    Choice(
        "9.q4",
        "Head L3 H1 puts 0.64 of the token \"it\"'s attention on \"animal\" in the *tired* sentence. What do "
        "these numbers show?",
        [
            Option("That, in this layer, this head reads mostly from \"animal\" into \"it\"'s position — "
                   "not what the model concludes about the pronoun.",
                   "Right: a weight says where a head reads from, one layer at a time. With *wide* no head "
                   "switches to \"street\" (the table above), so the model's attention does not resolve the "
                   "pronoun the way the famous picture suggests.", right=True),
            Option("That the model has worked out that \"it\" is the animal.",
                   "Then changing *tired* to *wide* should move attention to \"street\". It does not: no head "
                   "switches, and the count of heads favouring \"street\" barely changes (the table above)."),
            Option("That switching this head off would break the model's reading of \"it\".",
                   "A weight shows where a head looks, not that the output depends on it. Only an experiment "
                   "that removes the head — an ablation, lesson 10 — can show that."),
            Option("That the other 71 heads do not matter for \"it\".",
                   "What the model concludes is spread over all heads, layers and the FFNs; one striking head "
                   "is a hypothesis to test, not the whole story (the text below)."),
        ],
        verify=_verify_it_head,
    ),
    Choice(
        "9.q5",
        "The strongest `[CLS]` head has a `[CLS]` score of 0.85. What does that number mean?",
        [
            Option("On average, 85 % of each inner token's attention in that head goes to `[CLS]`.",
                   "Right: the score is the mean of $A_{i,\\text{[CLS]}}$ over the inner tokens of the twelve "
                   "sentences (the table of scores in section 4).", right=True),
            Option("85 % of the model's heads attend to `[CLS]`.",
                   "That would be a count of heads (the grid counts 30 `[CLS]` heads of 72). The score "
                   "belongs to one head: the mean weight its tokens put on `[CLS]`."),
            Option("`[CLS]` carries 85 % of the information this head passes on.",
                   "A weight is not an amount of information: a position whose value changes little can "
                   "take much weight and pass on almost nothing — the \"no-op\" reading of delimiter heads. (Section 4's text above the table of scores.)"),
            Option("The head attends to `[CLS]` in 85 % of the sentences.",
                   "It is an average weight, not a share of sentences: every inner token of every sentence "
                   "adds its $A_{i,\\text{[CLS]}}$ to the mean. (Section 4's table of scores.)"),
        ],
        verify=_verify_cls_head,
    ),
]
