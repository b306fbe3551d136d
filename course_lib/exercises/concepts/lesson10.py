"""Concept checks of lesson 10 (the residual stream and induction heads): only attention
moves information between positions, where an induction head looks, why it takes two
layers, and what an ablation shows that an attention map does not."""
from __future__ import annotations

import math
import re

from .questions import Choice, Number, Option, Predict

PERIOD, QUERY = 10, 15       # the number question: period 10, query position 15
_KEY = QUERY - PERIOD + 1     # the position an induction head attends to


def _verify_no_attention():
    """All heads off: changing token j changes output j only (up to float32 rounding)."""
    import torch

    from course_lib.experiments.induction import ablate_heads, token_influence
    from course_lib.nn import DecoderOnlyLM

    torch.manual_seed(0)
    lm = DecoderOnlyLM(20, d_model=16, h=2, d_ff=32, n_layers=2, max_len=8)
    x = torch.randint(0, 20, (1, 6), generator=torch.Generator().manual_seed(1))
    with ablate_heads(lm, "all"):
        influence = token_influence(lm, x, generator=torch.Generator().manual_seed(0))   # [t, j]
    off = ~torch.eye(6, dtype=torch.bool)
    assert influence[off].max() < 1e-5, f"off-diagonal change {influence[off].max():.2e}"
    assert influence.diag().min() > 1e-3, "a token's own output should change"


def _verify_induction_key():
    """In [BOS, s, s] the key at i - period + 1 holds the token that follows position i."""
    import torch

    from course_lib.experiments.induction import repeated_sequences

    seq = repeated_sequences(1, PERIOD, 32, generator=torch.Generator().manual_seed(0))[0]
    assert seq[QUERY - PERIOD] == seq[QUERY], "position i - period holds the same token as i"
    assert seq[_KEY] == seq[QUERY + 1], "position i - period + 1 holds the token to predict"
    assert _KEY == 6


def _ablation(row: str) -> float:
    from .questions import printed
    (loss,) = printed("10", "ablation_table", rf"ablate\s+{re.escape(row)}: first copy [\d.]+\s+repeated copy ([\d.]+)")
    return float(loss)


def _verify_layer0_ablation():
    """10.q4: with all heads the repeated copy is well below 1 nat; both layer-0 heads off send it
    back to the uniform guess ln 32 (the claim cell's bound, ln V - 0.3); one head off rises far
    less. Trained numbers, read from the lesson's saved table with the claim's own margins."""
    assert _ablation("none") < 1.0
    assert _ablation("layer 0 (both)") >= math.log(32) - 0.3
    assert _ablation("L0H0") < _ablation("layer 0 (both)") - 1.0


def _verify_induction_ablation():
    """10.q5: removing the layer-1 induction head raises the repeated-copy loss (the saved table)."""
    assert _ablation("L1H0") > _ablation("none") + 0.5
    assert _ablation("layer 1 (both)") >= math.log(32) - 0.3


def _verify_parameter_count():
    """10.q3's feedback quotes the trained model's 11 713 parameters, as section 2 prints them."""
    from .questions import printed
    (n,) = printed("10", "model.parameters()", r"trained (\d+) parameters")
    assert int(n) == 11713, f"the lesson prints {n} parameters, 10.q3 says 11 713"


QUESTIONS = [
    Predict(
        "10.q1",
        "Every attention head is switched off; the FFNs and LayerNorms still run. Change token 2 of the "
        "input. Which outputs change? Choose, then run the next cell.",
        [
            Option("Output 2 only.",
                   "Right: the FFN, the LayerNorms and the embeddings each act on one position's vector. "
                   "Without attention nothing carries token 2 anywhere else — the right-hand map of the "
                   "next cell is zero off the diagonal.", right=True),
            Option("Outputs 2, 3, 4, …: every later position, as the causal mask allows.",
                   "That is the left-hand map, *with* attention. The causal mask only limits where attention "
                   "may carry information; with the heads off nothing carries it at all."),
            Option("All outputs, through the LayerNorm statistics.",
                   "LayerNorm's mean and variance are taken over one position's features, not over "
                   "positions (lesson 05), so it cannot pass anything between positions."),
            Option("None: without attention, the model ignores its input.",
                   "The embeddings, FFNs and LayerNorms still map token 2 to output 2 — the diagonal of the "
                   "right-hand map changes by several units."),
        ],
        reveal="235067cc",
        verify=_verify_no_attention,
    ),
    Number(
        "10.q2",
        "A sequence $[\\text{BOS}, s, s]$ with period 10. At position $i = 15$ (in the repeated copy), which "
        "key position should an induction head attend to, to predict the token at position 16?",
        answer=_KEY, tolerance=0.4,
        right="Right: $i - \\text{period} + 1 = 6$. Position 5 holds the same token as 15 (its first "
              "occurrence); the head copies the token that *followed* it, at position 6 — the token "
              "at 16.",
        too_low="Too low. $15 - 10 = 5$ is the earlier occurrence of the *current* token. The induction head "
                "attends to the position after it, $i - \\text{period} + 1$, whose token comes next. (Exercise 10.2's induction score.)",
        too_high="Too high. Count back one period from 16, the position to predict: $16 - 10 = 6$. The key "
                 "must hold the token that followed the earlier occurrence of token 15. (Exercise 10.2's induction score.)",
        verify=_verify_induction_key,
    ),
    Choice(
        "10.q3",
        "Why does in-context copying need heads in *two* layers — a previous-token head, then an induction "
        "head — rather than one head in one layer?",
        [
            Option("A layer-0 key at $j$ knows only token $j$ and its position, not $x_{j-1}$; a previous-token "
                   "head must first write $x_{j-1}$ into $j$'s stream.",
                   "Right: the induction head's query asks \"whose *previous* token is $A$?\", a fact about "
                   "$j$'s neighbour that only an earlier layer can put into $j$ (section 3).", right=True),
            Option("One head can attend to only one position at a time.",
                   "A head attends to any mix of positions, and the induction head does pick one. The problem "
                   "is what a layer-0 key *contains*: nothing about its neighbour. (Section 3's maps above: a previous-token head in layer 0, then the induction head.)"),
            Option("One layer has too few parameters to store the rule.",
                   "It is wiring, not size: the rule needs information that one attention step cannot reach "
                   "(a key knows its own token only). The trained model has 11 713 parameters in all. (Printed in section 2; section 3's maps show the two-layer wiring.)"),
            Option("The causal mask stops a head from looking back more than one position.",
                   "The causal mask hides only the future; the induction head looks back a whole period "
                   "(the squares on its map)."),
        ],
        verify=_verify_parameter_count,
    ),
    Predict(
        "10.q4",
        "Switch off both layer-0 heads. Section 5 will show they write almost nothing into the correct "
        "token's logit directly. What happens to the repeated copy's loss (well below 1 nat with all heads on)? "
        "Choose, then run the next cell.",
        [
            Option("It stays about where it is: layer 0 does not write the answer.",
                   "Layer 0 writes nothing *directly*, but the induction heads' keys need what it writes: "
                   "without it layer 1 is blind, and the loss goes back to the uniform guess (the table of "
                   "the next cell)."),
            Option("It goes back to about the uniform guess, $\\ln 32 \\approx 3.5$ nats, or above.",
                   "Right: the induction heads find the earlier occurrence through keys that hold \"my previous "
                   "token was …\", written by layer 0. Remove it and the copying stops (the claim cell checks "
                   "\"at least $\\ln V - 0.3$\").", right=True),
            Option("It rises about as much as with one previous-token head off.",
                   "With one head off the other still does part of the job. Both off leave the induction "
                   "heads' keys nothing to match, and the loss returns to the uniform guess. (Section 4's ablation table: one layer-0 head off, then both.)"),
            Option("Only the first copy's loss changes.",
                   "The first copy is random, so nothing there depended on copying: it barely moves. It is the "
                   "repeated copy that needs the circuit. (Section 4's ablation table, its first-copy column.)"),
        ],
        reveal="9e679294",
        verify=_verify_layer0_ablation,
    ),
    Choice(
        "10.q5",
        "The induction scores found a layer-1 head attending to $i - \\text{period} + 1$. What does the ablation add "
        "that the attention map could not show?",
        [
            Option("That the model *uses* the head: without it, the repeated-copy loss rises.",
                   "Right: a map shows where a head looks — correlation. Removing the head and measuring the "
                   "loss shows that the output depends on it.", right=True),
            Option("Nothing: a high induction score already proves the head is needed.",
                   "A head can look at the right place and still pass on something the output ignores; only "
                   "removing it tests that. Section 4 opens with exactly this point."),
            Option("Which token the head copies.",
                   "That is what the map shows (where it looks). The ablation measures what the output loses "
                   "without the head."),
            Option("That the induction head works on its own.",
                   "The opposite: without layer 0 the induction heads are blind too — the loss goes back to "
                   "uniform when either layer is off. The heads work as a pair. (Section 4's ablation table: layer 0 (both) and layer 1 (both).)"),
        ],
        verify=_verify_induction_ablation,
    ),
]
