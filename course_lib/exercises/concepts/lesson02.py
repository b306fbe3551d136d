"""Concept checks of lesson 02 (attention): soft vs hard lookup, order, the scaled dot product
vs cosine similarity, why √d_k, saturation and the softmax's gradient, masking, permutation
equivariance. Each `verify` recomputes what the lesson computes (small, seeded) and asserts
the claim its right answer makes.
"""
import math

import torch

from .questions import Choice, Number, Option, Predict

__all__ = ["QUESTIONS"]


def _verify_soft_lookup():
    keys = torch.tensor([[2.0, 1.0], [1.5, -0.5], [-1.0, 1.0], [-1.5, -1.0]])
    values = torch.tensor([4.0, 30.0, 2.0, 5.0])
    q = torch.tensor([1.8, 0.6], requires_grad=True)
    soft = torch.softmax(keys @ q, dim=0) @ values
    soft.backward()
    assert q.grad.abs().max() > 0.1, "the soft lookup should pass a gradient to the query"
    assert not values[(keys @ q).argmax()].requires_grad, "the hard lookup should pass none"
    assert soft.item() > values[(keys @ q).argmax()].item(), "the soft answer is a blend, pulled towards 'dog'"
    from .questions import printed
    hard_kg, soft_kg = printed("02", "lookup_figure", r"hard lookup returns ([\d.]+) kg;\s+soft lookup returns ([\d.]+) kg")
    assert (float(hard_kg), float(soft_kg)) == (4.0, 7.66), f"the lesson prints {hard_kg}, {soft_kg} kg; 2.q1 says 4, 7.66"


def _attend(q, K, V):
    return torch.softmax(K @ q / math.sqrt(len(q)), dim=0) @ V


def _verify_order():
    gen = torch.Generator().manual_seed(0)
    q, K, V = torch.randn(4, generator=gen), torch.randn(6, 4, generator=gen), torch.randn(6, 3, generator=gen)
    perm = torch.tensor([2, 4, 3, 5, 0, 1])
    assert torch.allclose(_attend(q, K, V), _attend(q, K[perm], V[perm]), atol=1e-6), "pairs: same output"
    assert not torch.allclose(_attend(q, K, V), _attend(q, K, V[perm])), "values alone: another output"


def _verify_not_cosine():
    q = torch.tensor([1.0, 2.0, 0.0, 1.0])
    k = torch.tensor([2.0, 1.0, 1.0, 0.0])
    scaled = [(q @ key / 2).item() for key in (k, 2 * k)]
    cosine = [torch.nn.functional.cosine_similarity(q, key, dim=0).item() for key in (k, 2 * k)]
    assert scaled == [2.0, 4.0], f"doubling k should double the scaled score: {scaled}"
    assert abs(cosine[0] - cosine[1]) < 1e-6, "cosine similarity ignores the length"


def _verify_std():
    gen = torch.Generator().manual_seed(0)
    q, k = torch.randn(20_000, 256, generator=gen), torch.randn(20_000, 256, generator=gen)
    std = (q * k).sum(-1).std().item()
    assert abs(std - 16) <= 1.5, f"std(q·k) at d_k = 256 measured {std:.2f}, the answer says 16 ± 1.5"


def _verify_saturation():
    from course_lib.viz import softmax_saturation
    raw, scaled = softmax_saturation(512, scaled=False), softmax_saturation(512, scaled=True)
    assert raw["max_prob"] > 0.9 and raw["entropy"] < 0.3, f"unscaled d_k = 512 should saturate: {raw}"
    assert scaled["max_prob"] < 0.5, f"scaled scores should stay spread: {scaled}"
    ratio = scaled["grad_norm"] / raw["grad_norm"]
    assert 3 <= ratio <= 5, f"the answer says ‖J‖ about 4x smaller without scaling at 512, measured {ratio:.1f}x"


def _jacobian_norm(alpha):
    return torch.linalg.matrix_norm(torch.diag(alpha) - torch.outer(alpha, alpha)).item()


def _verify_middle():
    uniform = _jacobian_norm(torch.full((16,), 1 / 16))
    two = _jacobian_norm(torch.tensor([0.5, 0.5] + [0.0] * 14))
    one = _jacobian_norm(torch.tensor([0.99] + [0.01 / 15] * 15))
    assert two > uniform > one, f"half on two keys should give the largest ‖J‖: {two:.3f}, {uniform:.3f}, {one:.3f}"


def _verify_mask_after():
    gen = torch.Generator().manual_seed(0)
    scores = torch.randn(4, 6, generator=gen)
    mask = torch.rand(4, 6, generator=gen) < 0.6
    mask[:, 0] = True
    before = torch.softmax(scores.masked_fill(~mask, float("-inf")), dim=-1)
    after = torch.softmax(scores, dim=-1) * mask
    assert (before[~mask] == 0).all() and (after[~mask] == 0).all(), "both give blocked keys weight 0"
    assert torch.allclose(before.sum(-1), torch.ones(4)), "masking before: rows sum to 1"
    assert (after.sum(-1) < 1 - 1e-3).any(), "zeroing after: some rows sum to less than 1"
    assert torch.allclose(after / after.sum(-1, keepdim=True), before, atol=1e-6), \
        "the allowed keys keep the wrong shares only through the row sum"


def _verify_equivariance():
    from course_lib.nn import MultiHeadAttention
    torch.manual_seed(0)
    layer = MultiHeadAttention(d_model=8, h=1)
    x, perm = torch.randn(1, 11, 8), torch.randperm(11)
    with torch.no_grad():
        assert torch.allclose(layer(x[:, perm]), layer(x)[:, perm], atol=1e-6), "SA(ΠX) should equal Π SA(X)"
        assert not torch.allclose(layer(x[:, perm]), layer(x), atol=1e-3), "…and not SA(X) itself"


QUESTIONS = [
    Choice(
        "2.q1",
        "The hard lookup returned the cat's 4 kg; the soft one a blend, 7.66 kg. Why does attention "
        "use the soft lookup anyway?",
        [
            Option("It gives the more accurate answer.",
                   "No: for 'kitten' it is *less* accurate — pulled towards the dog's 30 kg. Its "
                   "advantage is the gradient, not the answer (§1)."),
            Option("A hard lookup cannot compare vectors.",
                   "No: the hard lookup in §1 compares the same vectors, with the same scores "
                   "$q \\cdot k_i$, and takes the best one."),
            Option("It is differentiable: nudging the query moves the output, so the query can be learned.",
                   "Right: the soft output has a gradient with respect to $q$; the argmax has none "
                   "(§1, the cell after the figure).", right=True),
            Option("It is cheaper to compute.",
                   "No: it needs every weight and mixes every value; the argmax only picks one. Its "
                   "advantage is the gradient. (The cell above prints the soft lookup's ∂output/∂q; the hard one has none.)"),
        ],
        verify=_verify_soft_lookup,
    ),
    Predict(
        "2.q2",
        "Below, we shuffle the $n$ key-value pairs (each key keeps its value), and separately the "
        "values alone. Which changes the output $\\sum_i \\alpha_i v_i$?",
        [
            Option("Both: attention depends on the order of its inputs.",
                   "No: shuffling whole pairs only reorders the terms of the sum, which leaves it "
                   "unchanged — the cell below prints *same output? True*."),
            Option("Only shuffling the values alone.",
                   "Right: a sum ignores the order of its terms, so moving whole pairs changes "
                   "nothing; moving the values alone gives keys the wrong values.", right=True),
            Option("Neither: attention ignores order altogether.",
                   "No: the *pairing* matters. Shuffling the values alone hands each weight "
                   "$\\alpha_i$ another $v$ — the cell below prints *same output? False*."),
        ],
        reveal="01913d07",
        verify=_verify_order,
    ),
    Choice(
        "2.q3",
        "Is the score $q \\cdot k / \\sqrt{d_k}$ a cosine similarity?",
        [
            Option("Yes, up to a constant factor.",
                   "No: cosine divides by the lengths of *these* two vectors; here a key twice as "
                   "long gets twice the score (2.00 → 4.00 in §2) while the cosine stays 0.67."),
            Option("No: it divides by a constant, so a longer key gets a larger score.",
                   "Right: $\\sqrt{d_k}$ is the same for every pair, so length counts; cosine "
                   "similarity ignores length (§2's comparison).", right=True),
            Option("Yes: both lie between −1 and 1.",
                   "No: only cosine does. The scaled dot product is unbounded — 4.00 for the "
                   "doubled key in §2."),
        ],
        verify=_verify_not_cosine,
    ),
    Number(
        "2.q4",
        "The entries of $q$ and $k$ are independent, with mean 0 and variance 1, and $d_k = 256$. "
        "What is the standard deviation of $q \\cdot k$ (before any scaling)?",
        answer=16, tolerance=1.5,
        right="Right: $q \\cdot k$ sums 256 terms of variance 1, so its variance is 256 and its std "
              "$\\sqrt{256} = 16$ — the next cell's table measures 16.0.",
        too_low="Too low. The variance of a sum of $d_k$ independent terms of variance 1 is $d_k = 256$, "
                "and the std is its square root. (1 is the std of the *scaled* score "
                "$q \\cdot k / \\sqrt{d_k}$.) Section 3's text above works it out.",
        too_high="Too high. 256 is the *variance* of $q \\cdot k$; the standard deviation is its "
                 "square root. (Section 3's text above.)",
        verify=_verify_std,
    ),
    Choice(
        "2.q5",
        "Without dividing by $\\sqrt{d_k}$, what happens to the softmax of random scores as $d_k$ grows "
        "(§3's four panels)?",
        [
            Option("It becomes uniform: huge scores all look alike.",
                   "No: the *gaps* between scores grow too, so the largest wins — entropy towards 0, "
                   "largest weight towards 1 in §3's panels."),
            Option("Its gradient explodes, because the scores are large.",
                   "No: the Jacobian $\\alpha_i(\\delta_{ij} - \\alpha_j)$ *shrinks* as $\\alpha$ "
                   "becomes one-hot — §3's gradient panel falls."),
            Option("It saturates onto one key, and its gradient shrinks — about 4× smaller than with "
                   "scaling at $d_k = 512$.",
                   "Right: the scores' std grows like $\\sqrt{d_k}$, the top score takes almost all the "
                   "weight, and ‖J‖ falls (the printed line under the figure).", right=True),
            Option("Nothing, as long as the softmax subtracts the max first.",
                   "No: subtracting the max prevents *overflow* (exercise 2.1), not saturation — the "
                   "weights are the same either way, nearly one-hot."),
        ],
        verify=_verify_saturation,
    ),
    Predict(
        "2.q6",
        "Below, we compute the size ‖J‖ of the softmax's Jacobian for three weight vectors over "
        "16 keys. Which gives the largest?",
        [
            Option("Uniform, 1/16 on every key.",
                   "No: uniform weights are small everywhere, so every $\\alpha_i(\\delta_{ij} - "
                   "\\alpha_j)$ is small — 0.242 below, half of two keys' 0.500."),
            Option("Half on each of 2 keys.",
                   "Right: a little concentration *raises* the gradient; only near one-hot does it "
                   "fall to 0 (0.500 vs 0.242 uniform vs 0.011).", right=True),
            Option("0.99 on one key.",
                   "No: that is almost saturated, where the Jacobian is almost 0 — 0.011 in the "
                   "cell below."),
        ],
        reveal="jacobian-middle",
        verify=_verify_middle,
    ),
    Choice(
        "2.q7",
        "A mask blocks some keys. Instead of setting their scores to $-\\infty$ before the softmax, you set "
        "their weights to 0 after it. What goes wrong?",
        [
            Option("Nothing: both give the blocked keys weight 0.",
                   "Both do give them 0 — but zeroing after the softmax leaves rows that sum to less "
                   "than 1, so the output is shrunk as well as masked. (Section 4's cell above checks that the rows sum to 1.)"),
            Option("The rows no longer sum to 1: the allowed keys keep the shares they had beside the "
                   "blocked ones.",
                   "Right: the blocked keys still took part in the normalisation. With $-\\infty$ before "
                   "the softmax, the allowed keys share all the weight (§4).", right=True),
            Option("The blocked keys still receive some weight.",
                   "No: zeroing sets them exactly to 0. The problem is the other keys' weights, which "
                   "no longer sum to 1. (Section 4: the weights of `attention` above sum to 1 per row, masked or not.)"),
            Option("The softmax returns NaN.",
                   "No: nothing here is infinite or divided by zero; the rows just sum to less than 1. "
                   "(NaN appears when a row has *no* allowed key and every score is $-\\infty$.) Section 4's cell above checks that the rows sum to 1."),
        ],
        verify=_verify_mask_after,
    ),
    Choice(
        "2.q8",
        "Self-attention without positions. You shuffle the input tokens, $X \\to \\Pi X$. The output is…",
        [
            Option("exactly the same as before, in the original order.",
                   "No: that would be *invariance*. Each output row belongs to its token and moves "
                   "with it — equivariance, checked in §6."),
            Option("different numbers, because each token now has other neighbours.",
                   "No: without positions a token has no neighbours, only a set of other tokens — "
                   "the same set after shuffling (§6)."),
            Option("the same output rows, shuffled the same way as the tokens.",
                   "Right: each token's output is a sum over all key-value pairs, which ignores "
                   "order, so every row moves with its token (§6).", right=True),
        ],
        verify=_verify_equivariance,
    ),
]
