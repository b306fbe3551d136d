"""Concept checks of lesson 04 (multi-head attention), in the order the notebook asks them."""
from __future__ import annotations

from .questions import Choice, Number, Option, Predict, get


def _verify_split():
    """view + transpose gives head i the features i·d_k … (i+1)·d_k − 1 of every position."""
    import torch
    from course_lib.nn import MultiHeadAttention
    mha = MultiHeadAttention(d_model=6, h=3)
    t = torch.arange(12.).view(1, 2, 6)                       # (batch, n, d_model)
    split = mha.split_heads(t)                                # (batch, h, n, d_k)
    for i in range(3):
        assert torch.equal(split[0, i], t[0, :, 2 * i:2 * i + 2]), f"head {i} holds the wrong features"
    wrong = t.reshape(1, 3, 2, 2)                             # the tempting shortcut
    assert not torch.equal(wrong, split), "the straight reshape should differ"


def _flops(fn):
    """Matrix-multiplication FLOPs of fn() (2 per multiply-add), counted on the operations that
    run — what section 4's FlopCounterMode counts, without its slow import."""
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode
    aten = torch.ops.aten
    total = 0

    class Count(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            nonlocal total
            packet = getattr(func, "overloadpacket", None)
            if packet in (aten.mm, aten.bmm, aten.addmm, aten.baddbmm):
                a, b = (args[0], args[1]) if packet in (aten.mm, aten.bmm) else (args[1], args[2])
                total += 2 * a.numel() * b.shape[-1]            # (…, m, k) @ (…, k, n): 2·m·k·n each
            return func(*args, **(kwargs or {}))

    with Count(), torch.no_grad():
        fn()
    return total


def _verify_flops():
    """Section 4: the matmul FLOPs and the parameters do not depend on h."""
    import torch
    from course_lib.nn import MultiHeadAttention, scaled_dot_product_attention
    b, n, d_model = 2, 8, 16
    x = torch.randn(b, n, d_model)

    def batched(mha):                                         # the lesson's mha_batched
        q, k, v = (mha.split_heads(w(x)) for w in (mha.w_q, mha.w_k, mha.w_v))
        out, _ = scaled_dot_product_attention(q, k, v)
        return mha.w_o(mha.merge_heads(out))

    formula = 8 * b * n * d_model ** 2 + 4 * b * n ** 2 * d_model
    for h in (1, 2, 16):
        mha = MultiHeadAttention(d_model, h)
        assert _flops(lambda: batched(mha)) == formula, f"h={h}: FLOPs differ from the formula"
        assert sum(p.numel() for p in mha.parameters()) == 4 * d_model ** 2 + 4 * d_model


def _verify_params():
    from course_lib.nn import MultiHeadAttention
    for h in (1, 8):
        count = sum(p.numel() for p in MultiHeadAttention(512, h).parameters())
        stated = get("4.q3").answer
        assert abs(count - stated) <= get("4.q3").tolerance, \
            f"MultiHeadAttention(512, {h}): {count}, the question says {stated}"


def _verify_scaling():
    """Dividing by √d_model instead of √d_k leaves the scores a std of 1/√h: a flatter softmax."""
    import math
    import torch
    g = torch.Generator().manual_seed(0)
    d_model, h = 64, 16
    d_k = d_model // h
    s = (torch.randn(4000, 1, d_k, generator=g) * torch.randn(4000, 16, d_k, generator=g)).sum(-1)

    def entropy(scores):
        p = torch.softmax(scores, dim=-1)
        return -(p * p.log()).sum(-1).mean().item()

    assert abs((s / math.sqrt(d_model)).std().item() - 1 / math.sqrt(h)) < 0.02
    assert entropy(s / math.sqrt(d_model)) > entropy(s / math.sqrt(d_k)) + 0.2, "the wrong scale should flatten"
    assert math.log(16) - entropy(s / math.sqrt(d_model)) < 0.1, "… to nearly uniform at h = 16"


def _verify_w_o():
    """Concat(head_1 … head_h) W^O = Σ_i head_i W^O_i."""
    import torch
    from course_lib.nn import MultiHeadAttention, scaled_dot_product_attention
    mha = MultiHeadAttention(d_model=8, h=2)
    x = torch.randn(2, 5, 8)
    with torch.no_grad():
        q, k, v = (mha.split_heads(w(x)) for w in (mha.w_q, mha.w_k, mha.w_v))
        heads, _ = scaled_dot_product_attention(q, k, v)
        w_o = mha.w_o.weight.T
        concat = mha.merge_heads(heads) @ w_o
        per_head = sum(heads[:, i] @ w_o[i * mha.d_k:(i + 1) * mha.d_k] for i in range(mha.h))
    assert torch.allclose(concat, per_head, atol=1e-6)


def _verify_two_layer_heads():
    """4.q6: in section 7's printed scores of the two-layer model, one head is a crisp
    previous-token head (not head 0 of each layer) and the others share the matching job
    unevenly (a trained model: the lesson's saved output, with wide margins)."""
    import re as _re

    from .questions import saved_output
    rows = _re.findall(r"2 layers × 2 heads\s+layer (\d) head (\d): on the previous token ([\d.]+), "
                       r"on the matching binding ([\d.]+)", saved_output("04", "head_relation_scores"))
    assert len(rows) == 4, rows
    prev = [float(r[2]) for r in rows]
    match = sorted(float(r[3]) for r in rows if float(r[2]) < 0.5)
    assert max(prev) >= 0.8 and sum(p >= 0.8 for p in prev) == 1, f"one crisp previous-token head: {prev}"
    assert not all(float(r[2]) >= 0.8 for r in rows if r[1] == "0"), "head 0 is not the previous-token head everywhere"
    assert len(match) == 3 and match[-1] - match[0] >= 0.1, f"the matching job shared unevenly: {match}"


QUESTIONS = [
    Choice(
        "4.q1",
        "`q.view(batch, n, h, d_k).transpose(1, 2)` turns `(batch, n, d_model)` into "
        "`(batch, h, n, d_k)`. What does head $i$ receive?",
        [
            Option("A block of consecutive **positions**: head 0 gets the first $n/h$ tokens, head 1 the next.",
                   "That is what reshaping straight to `(batch, h, n, d_k)` does — the slip the checker "
                   "names after exercise 4.1. It mixes positions; `view` to `(batch, n, h, d_k)` first keeps "
                   "every position in every head."),
            Option("Features $i \\cdot d_k$ to $(i+1) d_k - 1$ of **every** position — the same numbers, "
                   "only read differently.",
                   "Right. `view` cuts each row of $d_\\text{model}$ features into $h$ consecutive blocks; the "
                   "transpose puts the heads in front of the positions (section 3's numbered example).",
                   right=True),
            Option("The whole $d_\\text{model}$-wide vector of every position, projected again by the head's own "
                   "new weights.",
                   "No new weights appear here: the projection already happened in `w_q`. The reshape "
                   "only regroups its $d_\\text{model}$ outputs; each head sees $d_k = d_\\text{model}/h$ of them "
                   "(section 2: head $i$ owns the rows $i d_k \\dots (i+1) d_k - 1$)."),
            Option("A random subset of $d_k$ features, chosen once when the layer is built.",
                   "Nothing random happens in a reshape: head $i$ gets the fixed block "
                   "$i d_k \\dots (i+1) d_k - 1$, as the printed example in section 3 shows (head 0: "
                   "features 0–1, head 1: 2–3, head 2: 4–5)."),
        ],
        verify=_verify_split,
    ),
    Predict(
        "4.q2",
        "Predict before section 4 counts it: $d_\\text{model} = 64$, the same batch and length. Going from "
        "$h = 1$ head to $h = 32$ heads, how do the layer's **matrix-multiplication FLOPs** change?",
        [
            Option("About 32 times more: each head is a full attention.",
                   "Each head is an attention of width $d_k = d_\\text{model}/h$, not $d_\\text{model}$: its "
                   "projections and scores cost $1/h$ of a full-width head's. Section 4's table shows "
                   "5,242,880 FLOPs for every $h$."),
            Option("About 32 times fewer: each head is 32 times narrower.",
                   "Each head is narrower, but there are 32 of them: $h \\cdot (d_\\text{model}/h) = d_\\text{model}$. "
                   "The total is unchanged (section 4's table)."),
            Option("More, but less than 32 times: the 32 score matrices add FLOPs.",
                   "Each score matrix costs $2bn^2 d_k$ FLOPs, and $h \\cdot d_k = d_\\text{model}$, so all "
                   "heads' scores together cost the same as one full-width head's. What the extra "
                   "score matrices *do* add is time (softmax, memory traffic) — the timing plot, not "
                   "the FLOP count."),
            Option("They stay the same.",
                   "Right. Each head works in a space $h$ times narrower, so $h$ heads of width "
                   "$d_\\text{model}/h$ cost what one head of width $d_\\text{model}$ costs: the table printed the "
                   "same FLOPs and parameters for every $h$. Measured *time* is another matter (the "
                   "timing plot).", right=True),
        ],
        reveal="42f478de",
        verify=_verify_flops,
    ),
    Number(
        "4.q3",
        "How many parameters (weights and biases) has `MultiHeadAttention(d_model=512, h=8)`, the "
        "2017 paper's size? Use section 4's count.",
        answer=1_050_624, tolerance=0.5,
        right="Right: $4 d_\\text{model}^2 + 4 d_\\text{model} = 4 \\cdot 512^2 + 4 \\cdot 512 = 1{,}050{,}624$ — "
              "$W^Q, W^K, W^V, W^O$ with their biases, whatever $h$ is (lesson 05 prints the same number).",
        too_low="Too low. Count all four $d_\\text{model} \\times d_\\text{model}$ matrices $W^Q, W^K, W^V, W^O$ — "
                "not one head's $d_\\text{model} \\times d_k$ blocks — plus their four bias vectors of "
                "$d_\\text{model}$ (section 4).",
        too_high="Too high. The heads share the $d_\\text{model} \\times d_\\text{model}$ matrices: $h$ heads of width "
                 "$d_\\text{model}/h$ add up to $3 d_\\text{model}^2$, not $3 h d_\\text{model}^2$. "
                 "With $W^O$ and the biases: "
                 "$4 d_\\text{model}^2 + 4 d_\\text{model}$ (section 4).",
        verify=_verify_params,
    ),
    Choice(
        "4.q4",
        "With $d_\\text{model} = 64$ and $h = 16$ heads ($d_k = 4$), a slip divides every head's scores by "
        "$\\sqrt{d_\\text{model}} = 8$ instead of $\\sqrt{d_k} = 2$. What happens to the heads' softmax?",
        [
            Option("Nothing: the softmax does not change when all scores are scaled alike.",
                   "The softmax ignores a constant *added* to every score, not a factor: dividing scores by "
                   "4 more flattens the weights. Section 5's table shows the entropy rising with $h$ "
                   "under $\\sqrt{d_\\text{model}}$."),
            Option("The scores get too large and every softmax saturates to one-hot.",
                   "That is what dividing by too *little* does (lesson 02). Dividing by $\\sqrt{d_\\text{model}}$ "
                   "divides by too much: the scores shrink, std 0.25 in section 5's table."),
            Option("The scores' std drops to $1/\\sqrt{h} = 0.25$; each softmax is nearly uniform.",
                   "Right. A head's scores have variance $d_k$; dividing by $\\sqrt{d_\\text{model}}$ leaves a "
                   "std of $\\sqrt{d_k/d_\\text{model}} = 1/\\sqrt{h}$. Section 5's table: entropy 2.74 against "
                   "$\\log 16 \\approx 2.77$ for a uniform softmax.", right=True),
            Option("Only the speed changes: the scale is a constant the training absorbs.",
                   "It changes every weight the layer computes: each head starts out nearly uniform, "
                   "unable to single out a key (section 5's entropy column), and the more heads, the "
                   "worse."),
        ],
        verify=_verify_scaling,
    ),
    Choice(
        "4.q5",
        "What does the output projection $W^O$ do in multi-head attention?",
        [
            Option("It averages the $h$ heads' outputs into one.",
                   "A mean would give every head the same fixed weight. $W^O$ is learned: each head has its "
                   "own block $W^O_i$, a full $d_k \\times d_\\text{model}$ map, and the results are summed "
                   "(section 5)."),
            Option("Maps each head's $d_k$-wide answer into the full $d_\\text{model}$ space and **adds** the heads'.",
                   "Right: $\\operatorname{Concat}(\\operatorname{head}_1, \\dots, \\operatorname{head}_h) W^O "
                   "= \\sum_i \\operatorname{head}_i W^O_i$ (checked in section 5), so every head can write "
                   "into every coordinate.", right=True),
            Option("It is needed to get the shape back: without it the output would not be $d_\\text{model}$ wide.",
                   "The concatenation is already $h \\cdot d_k = d_\\text{model}$ wide. Without $W^O$, head $i$ "
                   "could only ever write into its own $d_k$ coordinates; $W^O$ lets it write anywhere "
                   "(section 5)."),
            Option("It picks, per position, the head with the largest output.",
                   "Nothing is picked: $W^O$ is a linear map, and every head's contribution "
                   "$\\operatorname{head}_i W^O_i$ is added to the others (section 5's check)."),
        ],
        verify=_verify_w_o,
    ),
    Choice(
        "4.q6",
        "Section 7's two-layer model with two heads per layer was trained from random weights. What do "
        "its relation scores and attention maps tell you?",
        [
            Option("Head 0 of each layer is the previous-token head, because it comes first.",
                   "Nothing in the architecture ranks the heads: all are built alike and start from random "
                   "weights, so which index ends up with which relation is up to training (section 7)."),
            Option("Everything the model computes: a head's map is its full explanation.",
                   "A map shows where a head puts its weight, not what it does with the values, $W^O$ and "
                   "the readouts. The lesson backs its story with accuracy and averaged relation scores, "
                   "not with one picture."),
            Option("That more heads always give crisper heads: every one gets its own job.",
                   "The two-layer model has more heads than the task needs, and three of its four share "
                   "the matching job unevenly (section 7's printed scores). Extra heads need not "
                   "specialise."),
            Option("Where each head reads from; which head takes which job falls where training puts it.",
                   "Right. The heads are built alike, so the roles are not fixed in advance: the scores "
                   "show a crisp previous-token head, and in the run shown the others share the matching "
                   "job unevenly — a split that moves from machine to machine.", right=True),
        ],
        verify=_verify_two_layer_heads,
    ),
]
