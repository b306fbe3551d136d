"""Concept checks of lesson 08 (training a translator): padding in the loss, the loss at the
start, label smoothing's floor, warm-up, teacher forcing against decoding, beam search."""
from __future__ import annotations

import math

from .questions import Choice, Number, Option, Predict

_LN_V_ANSWER = 3.56     # ln 35, as section 8 prints it


def _verify_padding_ignored():
    """ignore_index=pad: the loss is the mean over the real tokens only; counting the pads changes it."""
    import torch
    import torch.nn.functional as F

    g = torch.Generator().manual_seed(0)
    logits = torch.randn(2, 5, 7, generator=g)                   # (batch, n, V)
    labels = torch.tensor([[3, 4, 2, 0, 0], [5, 6, 1, 4, 2]])      # 0 = <pad>, row 0 padded
    ignored = F.cross_entropy(logits.transpose(1, 2), labels, ignore_index=0)
    real = labels != 0
    by_hand = F.cross_entropy(logits[real], labels[real])         # the real tokens only
    counted = F.cross_entropy(logits.transpose(1, 2), labels)     # pads counted as targets
    assert torch.allclose(ignored, by_hand), (float(ignored), float(by_hand))
    assert not torch.allclose(ignored, counted), "counting the pads should change the loss"


def _verify_ln_v():
    """The lesson's target vocabulary has 35 entries, and ln 35 ≈ 3.56 (section 8 prints it)."""
    from course_lib.data.translation import Vocab, german_pieces

    v = len(Vocab(sorted(german_pieces())))             # built as NumberTranslationData builds it
    assert v == 35, f"the lesson's target vocabulary has {v} entries, the question says 35"
    assert abs(math.log(v) - _LN_V_ANSWER) <= 0.005, (math.log(v), _LN_V_ANSWER)


def _verify_floor():
    """The floor H(q) for V = 35, ε = 0.1 is about 0.66 nats (section 6 computes 0.661)."""
    import torch

    from course_lib.experiments.translator import smoothed_targets

    q = smoothed_targets(torch.tensor(5), 35, 0.1)
    floor = float(-(q * q.log()).sum())
    assert abs(floor - 0.66) < 0.01, f"H(q) = {floor:.3f}, the right option says about 0.66"
    assert abs(float(q.max()) - (0.9 + 0.1 / 35)) < 1e-6          # the right piece keeps 1 - ε + ε/V


def _verify_warmup():
    """The lesson's schedule starts near 0, peaks at the end of the warm-up, then decays."""
    from course_lib.experiments.translator import TranslatorConfig
    from course_lib.nn.training import warmup_cosine

    c = TranslatorConfig()
    f = [warmup_cosine(step, c.warmup, c.total_steps, min_ratio=0.0) for step in range(c.total_steps)]
    assert f[0] < 0.1, f"the first step's learning rate is {f[0]:.2f} of the peak: should be small"
    assert abs(f.index(max(f)) + 1 - c.warmup) <= 1 and max(f) == 1.0, "the peak should end the warm-up"
    assert f[-1] < 0.1, "after the warm-up the rate should decay"


def _verify_beam_repairs_few():
    """8.q6: beam search (k = 4) repaired few or none of the half-trained model's greedy mistakes,
    and beam and greedy mostly agree (the lesson's saved list: a trained model's output)."""
    from .questions import printed, saved_output
    wrong, fixed = printed("08", "beam_search", r"greedy got (\d+) held-out numbers wrong; beam search \(k = 4\) gets (\d+)")
    assert int(fixed) <= int(wrong) // 2, f"beam repaired {fixed} of {wrong}: not 'few or none'"
    differs = saved_output("08", "beam_search").count("<- differs")
    assert differs <= int(wrong) // 2, f"beam and greedy differ on {differs} of {wrong}"


QUESTIONS = [
    Choice(
        "8.q1",
        "In the batch above, row 0's `labels` end in `<pad>` (id 0) after its `<eos>`. What should "
        "the loss do at those padded positions?",
        [
            Option("Count nothing there: the loss averages over the real tokens only "
                   "(`ignore_index=pad_id`).",
                   "Right: a pad is not part of any translation, so it must neither add to the loss nor to "
                   "the count it is averaged over. The next cell says so: padding costs compute, never "
                   "teaches anything.", right=True),
            Option("Train the model to predict `<pad>` there: it is a token like any other.",
                   "Then every short sentence would teach \"after `<eos>` comes `<pad>`\", and the mean loss "
                   "would depend on how much padding the batch happened to need. The loss skips them "
                   "(`ignore_index=pad_id`, the cell after this one)."),
            Option("Nothing special: the padding mask in attention already hides the pads.",
                   "That mask stops other positions from *reading* a pad as a key. The padded positions "
                   "still produce predictions, and the loss would score them — only `ignore_index` leaves "
                   "them out. (Section 4: the labels printed above end in pads, id 0.)"),
            Option("Padding is removed before the model runs, so there is nothing to skip.",
                   "The tensor keeps its padded shape `(batch, longest + 1)` (exercise 8.1): padding costs "
                   "compute. It is the loss that skips those positions."),
        ],
        verify=_verify_padding_ignored,
    ),
    Predict(
        "8.q2",
        "With label smoothing $\\varepsilon = 0.1$ over $V = 35$ target pieces, what is the lowest "
        "loss a *perfect* model can reach? Choose, then read on and run the cell that computes it.",
        [
            Option("0: a perfect model puts probability 1 on the right piece.",
                   "With a one-hot target, yes. But the target is now $q$: $1 - \\varepsilon + "
                   "\\varepsilon/V$ on the right piece and $\\varepsilon/V$ on every other. The loss is lowest "
                   "at $p = q$, and there it is the entropy $H(q) > 0$ (the cell below)."),
            Option("About 0.66 nats: the entropy $H(q)$ of the smoothed target.",
                   "Right: $-\\sum_v q(v) \\log p(v)$ is smallest at $p = q$, where it equals $H(q)$ — "
                   "0.661 nats here. That is the dotted floor line of the loss curves in section 8.", right=True),
            Option("0.1: the smoothing $\\varepsilon$ itself.",
                   "$\\varepsilon$ is a share of probability, not a loss. The floor is the entropy of the "
                   "smoothed target, $H(q) = -\\sum_v q(v) \\log q(v)$, which the cell below computes."),
            Option("$\\ln 35$: smoothing makes the target uniform.",
                   "$\\ln V$ is the loss of a uniform guess, where training *starts*. The target keeps "
                   "0.90 on the right piece; only 0.1 is spread out, so its entropy is far below $\\ln V$."),
        ],
        reveal="99824b5c",
        verify=_verify_floor,
    ),
    Choice(
        "8.q3",
        "The learning rate rises linearly over the first 50 steps (the warm-up) before it decays. Why not "
        "start at the peak?",
        [
            Option("Adam's early estimates of the gradients' size rest on few samples and the activations "
                   "are unsettled: a full-size step can throw the weights somewhere bad.",
                   "Right. Section 10 shows the other side of it: gradient clipping acted mostly during the "
                   "warm-up, while the model was changing fastest.", right=True),
            Option("A small learning rate makes the first steps learn faster.",
                   "A small step moves the weights *less*, not faster. The warm-up trades a little early "
                   "progress for stability (section 7)."),
            Option("To stop the model from overfitting its first batches.",
                   "Every batch here is freshly drawn, so there is little to overfit (section 5 drops "
                   "dropout for that reason). The warm-up is about the size of early steps, not "
                   "overfitting."),
            Option("Label smoothing needs a small learning rate until the loss reaches its floor.",
                   "The floor $H(q)$ is reached only at the end of training (section 10); the warm-up "
                   "ends at step 50. The two are unrelated."),
        ],
        verify=_verify_warmup,
    ),
    Number(
        "8.q4",
        "Before training, an untrained translator guesses the next German piece roughly uniformly among "
        "the $V = 35$ pieces. What cross-entropy loss (in nats) does a uniform guess give? Two decimals.",
        answer=_LN_V_ANSWER, tolerance=0.02,
        right="Right: $-\\log(1/V) = \\ln 35 \\approx 3.56$. The next cell prints the first training loss, "
              "a little *above* $\\ln V$: an untrained model's logits are not all equal, and unequal logits "
              "that know nothing cost more than equal ones.",
        too_low="Too low. $\\log_{10} 35 \\approx 1.54$? Cross-entropy in nats uses the natural log: "
                "$-\\ln(1/35) = \\ln 35$. (And 0.66 is the floor a *perfect* model reaches with label "
                "smoothing, not the start.) Section 8's first printed loss: ln V, uniform guessing.",
        too_high="Too high. $\\log_2 35 \\approx 5.13$ would be bits; the loss is in nats, $\\ln 35$. "
                 "Or did you take $V$ = 35 itself? The loss is $-\\log p$ of the right piece, $p = 1/35$. (Section 8's first printed loss.)",
        verify=_verify_ln_v,
    ),
    # 8.q5 has no verify: greedy decoding's definition (one piece per step, fed back), as
    # course_lib.nn's decoder implements it; no number to compare.
    Choice(
        "8.q5",
        "In training the decoder reads the right German pieces so far (teacher forcing) and predicts all "
        "positions in one pass. At translation time?",
        [
            Option("It reads its *own* earlier predictions, one step at a time, so an early mistake is fed "
                   "back into every later step.",
                   "Right: there is no reference to read. `greedy_decode` appends its argmax and runs the "
                   "decoder again (exercise 8.2); the source is encoded once.", right=True),
            Option("It still reads the reference pieces, as in training.",
                   "At translation time there is no reference — that is what we want the model to produce "
                   "(section 9: \"there is no teacher\")."),
            Option("All positions are still predicted in one pass, as in training.",
                   "Position $t+1$ needs the piece chosen at $t$, which exists only after step $t$: decoding "
                   "is a loop, one step per piece (exercise 8.2)."),
            Option("Each step re-encodes the source together with the pieces written so far.",
                   "The encoder reads only the English source, which does not change: `model.encode` runs "
                   "once, and each step runs only `model.decode` (section 9)."),
        ],
    ),
    Choice(
        "8.q6",
        "Beam search (k = 4) repaired few or none of the half-trained model's greedy mistakes above. "
        "When *can* beam search beat greedy decoding?",
        [
            Option("When the model hesitated: a piece that is second-best now leads to a more probable "
                   "whole sentence.",
                   "Right: beam search keeps the $k$ best prefixes and compares whole sentences, so it can "
                   "undo a greedy choice that made the rest unlikely.", right=True),
            Option("Always, for $k \\ge 2$: it searches more, so it finds the right translation more often.",
                   "It finds a sentence the *model* scores higher, not the reference. On this task greedy is "
                   "already close to the best the model can do (the list above: beam and greedy mostly "
                   "agree)."),
            Option("When the model is sure of a wrong piece, such as *ein* where *eins* belongs.",
                   "That is exactly where it cannot help: every beam keeps the piece the model is sure of, "
                   "so a wider search finds the same answer (the text after the list)."),
            Option("Only with a beam larger than the vocabulary, so that every sentence is tried.",
                   "Beam search never tries every sentence ($V^n$ of them); $k$ = 4 to 5 is typical. What "
                   "it needs is a model that hesitated, not a huge beam. (Section 11: the list above used $k$ = 4.)"),
        ],
        verify=_verify_beam_repairs_few,
    ),
]

