"""Concept checks of lesson 05 (the transformer block), in the order the notebook asks them."""
from __future__ import annotations

from .questions import Choice, Number, Option, Predict, get


def _verify_nonlinearity():
    """Section 3: stacked attention = P X0 W for its pattern; on one token it is affine."""
    import torch
    from course_lib.nn import FeedForward, MultiHeadAttention
    torch.manual_seed(0)
    layers = [MultiHeadAttention(8, h=1, bias=False) for _ in range(3)]

    def stack(x):
        with torch.no_grad():
            for layer in layers:
                x = layer(x)
        return x

    one = torch.randn(1, 1, 8)                                 # a single token: weights are all 1
    assert torch.allclose(stack(2 * one), 2 * stack(one), atol=1e-5), "one token: the stack is linear"
    many = torch.randn(1, 6, 8)
    assert not torch.allclose(stack(2 * many), 2 * stack(many), atol=1e-3), "the pattern depends on x"
    ffn = FeedForward(4, 16)
    with torch.no_grad():                                      # position-wise: a shuffle commutes
        x = torch.randn(1, 5, 4)
        perm = torch.randperm(5)
        assert torch.allclose(ffn(x[:, perm]), ffn(x)[:, perm], atol=1e-6)


def _verify_gradients():
    """Section 4: without residuals the first block's gradient collapses with depth, with them not."""
    from course_lib.experiments.stacks import ARRANGEMENTS, first_layer_grad_norm
    plain = [first_layer_grad_norm(depth, *ARRANGEMENTS["plain"]) for depth in (1, 8)]
    resid = [first_layer_grad_norm(depth, *ARRANGEMENTS["residual only"]) for depth in (1, 8)]
    assert plain[1] < 1e-6 * plain[0], f"plain should collapse: {plain}"
    assert 0.1 * resid[0] < resid[1] < 100 * resid[0], f"residual should stay of the same order: {resid}"


def _verify_sqrt_sigma():
    """The slip (x − μ)/(√σ + ε) leaves a row of standard deviation σ with variance σ (here 4)."""
    import torch
    row = torch.randn(16, generator=torch.Generator().manual_seed(0))
    row = (row - row.mean()) / row.std(unbiased=False) * 4 + 5          # std exactly 4, mean 5
    sigma = row.std(unbiased=False)
    slip = (row - row.mean()) / (sigma.sqrt() + 1e-5)
    assert abs(slip.var(unbiased=False).item() - get("5.q3").answer) < get("5.q3").tolerance
    right = (row - row.mean()) / torch.sqrt(row.var(unbiased=False) + 1e-5)
    assert abs(right.var(unbiased=False).item() - 1) < 1e-3


def _verify_gamma_beta():
    """γ, β are learned parameters (weight, bias) applied after the z-score."""
    import torch
    from course_lib.nn import LayerNorm
    ln = LayerNorm(6)
    assert [n for n, _ in ln.named_parameters()] == ["weight", "bias"]
    x = torch.randn(3, 6) * 4 + 2
    with torch.no_grad():
        ln.weight.fill_(2.0)
        ln.bias.fill_(3.0)
        y = ln(x)
    assert torch.allclose(y.mean(-1), torch.full((3,), 3.0), atol=1e-4)
    assert torch.allclose(y.var(-1, unbiased=False), torch.full((3,), 4.0), atol=1e-3)


def _verify_post_norm():
    """The 2017 arrangement is post-norm; so are EncoderLayer's and PyTorch's defaults."""
    import inspect
    from torch import nn
    from course_lib.nn import EncoderLayer
    assert inspect.signature(EncoderLayer).parameters["norm_first"].default is False
    assert inspect.signature(nn.TransformerEncoderLayer).parameters["norm_first"].default is False


QUESTIONS = [
    Choice(
        "5.q1",
        "Attention has a softmax inside. Why does every block still need the feed-forward network?",
        [
            Option("Because the FFN mixes information between positions, which attention cannot do.",
                   "It is the other way round: the FFN is position-wise — the same MLP on every position "
                   "separately, never mixing them (section 2's shuffle check). Moving information between "
                   "positions is attention's job."),
            Option("For its attention pattern, a stack computes one average of the input rows and one "
                   "linear map: nothing bends a token's own features.",
                   "Right. $X_L = P X_0 W$ for the pattern $P$ it picks (section 3); on a single token it is "
                   "exactly affine. The FFN's ReLU is the non-linear function of each token's own "
                   "features: one small FFN fit $|x|$ almost exactly, the attention stack only "
                   "approximately.", right=True),
            Option("It does not strictly need it: the softmax already makes the stack as non-linear as an MLP.",
                   "The softmax makes only the *pattern* depend on the input; what gets averaged is mapped "
                   "linearly. On one token the best any attention stack can do is an affine map (test MSE "
                   "about 1/3 on $|x|$), while one FFN got below $10^{-3}$ (section 3's table)."),
            Option("Because without it a stack of attention layers is an exactly linear function of its input.",
                   "Not exactly linear: the pattern depends on the input, so stack$(2x) \\ne 2\\,$stack$(x)$ "
                   "(section 3's second check). It is one average plus one linear map *for the pattern it "
                   "picks* — some non-linear power, bought from the other tokens."),
        ],
        verify=_verify_nonlinearity,
    ),
    Predict(
        "5.q2",
        "Predict: stacks of 1 to 24 blocks (attention + FFN, no LayerNorm), freshly initialised. How does "
        "the gradient norm at the **first** block's parameters change with depth, without and with "
        "residual connections?",
        [
            Option("Both fall exponentially; residuals only slow the fall a little.",
                   "With residuals the product $(I + J_{L-1}) \\cdots (I + J_0)$ contains the identity "
                   "term, so the gradient does not shrink with depth: section 4 measured it staying of the "
                   "same order from 1 to 24 blocks (it even grew)."),
            Option("Both stay about the same: at initialisation depth does not matter yet.",
                   "Without residuals it does: $J_{L-1} \\cdots J_0$ with every $J_l$ shrinking the signal "
                   "falls by orders of magnitude every few blocks, and underflows to 0 in float32 at 24 "
                   "blocks (section 4)."),
            Option("Without: it falls by orders of magnitude (to exactly 0 at 24 blocks). With: it does not "
                   "shrink — it even grows, by about an order of magnitude.",
                   "Right. Without residuals the gradient is a product of $L$ Jacobians and shrinks "
                   "exponentially; with them $(I + J_{L-1}) \\cdots (I + J_0)$ contains the identity, so "
                   "the top's gradient reaches the bottom (section 4's plot).", right=True),
            Option("Without residuals it explodes; with them it stays level.",
                   "A product of Jacobians can explode, but not with `nn.Linear`'s default weights, ReLU "
                   "zeroing half the signal and attention averaging it: those shrink it, and section 4 "
                   "measured a collapse to 0, not an explosion."),
        ],
        reveal="ba4d8087",
        verify=_verify_gradients,
    ),
    Number(
        "5.q3",
        "Some notes write LayerNorm as $(x - \\mu)/(\\sqrt{\\sigma} + \\varepsilon)$, with $\\sigma$ the "
        "standard deviation. A token's 16 features have standard deviation $\\sigma = 4$. What is the "
        "**variance** of the output under that formula (take $\\varepsilon \\approx 0$)?",
        answer=4.0, tolerance=0.05,
        right="Right: dividing by $\\sqrt{\\sigma}$ leaves a variance of $\\sigma^2/\\sigma = \\sigma = 4$, not "
              "1 — nothing is normalised. The box after section 5's first cell shows it on three rows "
              "(scale 30 keeps a variance of about 26).",
        too_low="Too low. 1 is what the *right* formula $(x - \\mu)/\\sqrt{\\sigma^2 + \\varepsilon}$ gives. "
                "This one divides by $\\sqrt{\\sigma} = 2$ only, so the variance is $\\sigma^2/\\sigma$ "
                "(section 5's table of slips).",
        too_high="Too high. The output is $(x - \\mu)/\\sqrt{\\sigma}$: its variance is "
                 "$\\sigma^2 / (\\sqrt{\\sigma})^2 = \\sigma$ (section 5's table of slips).",
        verify=_verify_sqrt_sigma,
    ),
    Choice(
        "5.q4",
        "What are LayerNorm's $\\gamma$ and $\\beta$?",
        [
            Option("The mean and standard deviation of the token's features, computed from the input.",
                   "Those are $\\mu$ and $\\sigma$, computed fresh for every token. $\\gamma$ and $\\beta$ are "
                   "*parameters*, learned in training — PyTorch and the course call them `weight` and "
                   "`bias` (section 5)."),
            Option("Statistics over the batch, so that every feature has mean 0 across examples.",
                   "That is BatchNorm. LayerNorm's statistics are over the **last** axis, one token's "
                   "features; $\\gamma$ and $\\beta$ are learned, one number per feature "
                   "(section 5)."),
            Option("Learned per-feature scale and shift, applied after the z-score.",
                   "Right. With $\\gamma = 1, \\beta = 0$ each position comes out with mean 0 and variance "
                   "1; learning them lets the model choose another scale and offset per feature.",
                   right=True),
            Option("Constants that make the output have unit mean and unit variance.",
                   "The z-score gives **zero** mean and unit variance, before $\\gamma$ and $\\beta$ "
                   "(section 5's first cell printed mean 0). $\\gamma$ and $\\beta$ are learned, and move "
                   "the output away from that."),
        ],
        verify=_verify_gamma_beta,
    ),
    Choice(
        "5.q5",
        "Post-norm $\\operatorname{LN}(x + F(x))$ or pre-norm $x + F(\\operatorname{LN}(x))$: which did the 2017 paper "
        "use, and what did section 7 measure at learning rate 0.01 without warm-up?",
        [
            Option("Pre-norm, the 2017 arrangement; post-norm is the modern fix that trains at any rate.",
                   "The other way round: the 2017 paper's \"Add & Norm\" is post-norm, and pre-norm "
                   "(GPT-2 and most later models) is the one that tolerated the high rate in section 7."),
            Option("Post-norm; at 0.01 it blew up to NaN.",
                   "Post-norm is right, but it did not blow up: it got stuck near the chance line (the "
                   "claim cell checks it is not NaN), while pre-norm learned."),
            Option("Post-norm; at 0.01 it stayed stuck near chance while pre-norm learned, and at 0.001 "
                   "it learned.",
                   "Right. One seed, one task, consistent with Xiong et al. (2020): post-norm tolerates a "
                   "much smaller range of learning rates without warm-up.", right=True),
            Option("Post-norm; it cannot be trained deep at all, which is why warm-up was invented.",
                   "At learning rate 0.001 the same 12-block post-norm stack did learn (section 7): the "
                   "wiring works, it just needs a smaller rate or a warm-up."),
        ],
        verify=_verify_post_norm,
    ),
]
