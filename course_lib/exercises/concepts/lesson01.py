"""Concept checks of lesson 01 (why not RNNs): sequential steps, vanishing and exploding
gradients, path length, the recall task. Each `verify` recomputes the lesson's measurement
(small, seeded) and asserts the claim its right option makes.
"""
import torch

from .questions import Choice, Option, Predict

__all__ = ["QUESTIONS"]


def _verify_tanh_vanishes():
    from course_lib.viz import jacobian_norms
    linear, tanh = (jacobian_norms(1.1, nl, n=100)[-1].item() for nl in ("linear", "tanh"))
    assert linear > 1e2, f"linear, ρ = 1.1 should explode: {linear:.1e}"
    assert tanh < 1e-5, f"tanh, ρ = 1.1 should vanish: {tanh:.1e}"


def _verify_knife_edge():
    from course_lib.viz import jacobian_norms
    end = {rho: jacobian_norms(rho, "linear", n=100)[-1].item() for rho in (0.5, 0.9, 1.0, 1.1)}
    assert end[0.5] < 1e-20 and end[0.9] < 1e-2, f"ρ < 1 should vanish: {end}"
    assert 1e-2 < end[1.0] < 1e2, f"ρ = 1 should keep the gradient near its size: {end}"
    assert end[1.1] > 1e2, f"ρ = 1.1 should explode: {end}"
    tanh = jacobian_norms(1.0, "tanh", n=100)[-1].item()
    assert tanh < 1e-5, f"tanh at ρ = 1 should vanish: {tanh:.1e}"


def _verify_distance():
    # The lesson's interaction-distance measurement (seed 1, n = 64, width 32).
    from course_lib.nn import ElmanRNN, MultiHeadAttention
    from course_lib.utils import seed_everything
    seed_everything(1)
    n, width = 64, 32
    x = torch.randn(1, n, width)
    rnn, attn = ElmanRNN(width, width), MultiHeadAttention(width, h=1)

    def input_gradients(model):
        xg = x.clone().requires_grad_()
        model(xg)[:, -1].sum().backward()
        return xg.grad[0].norm(dim=-1)

    g_rnn, g_attn = input_gradients(rnn), input_gradients(attn)
    assert (g_rnn[0] / g_rnn[-2]).item() < 1e-10, "the RNN's influence 63 steps back should be all but gone"
    assert 0.1 < (g_attn[0] / g_attn[-2]).item() < 10, "attention's should stay the same order"


def _verify_recall():
    from course_lib.experiments.recall import RecallAttention, RecallRNN, recall_batch
    rnn, attn = RecallRNN(d_model=48), RecallAttention(d_model=32)
    count = lambda m: sum(p.numel() for p in m.parameters())   # noqa: E731
    assert (count(rnn), count(attn)) == (6008, 5096), "the parameter counts the feedback quotes"
    # No positions: moving the letter among the distractors leaves the answer at "?" unchanged.
    tokens, _ = recall_batch(8, batch_size=4, generator=torch.Generator().manual_seed(0))
    moved = tokens.clone()
    moved[:, [0, 5]] = tokens[:, [5, 0]]
    with torch.no_grad():
        assert torch.allclose(attn(tokens), attn(moved), atol=1e-5), "RecallAttention should use no positions"


QUESTIONS = [
    # 1.q1 has no verify: its answer (n sequential steps for n tokens, 1 for attention) is the
    # recurrence's definition, which §2's figure draws; the lesson computes no number to compare.
    Choice(
        "1.q1",
        "An RNN reads a sequence of $n = 1000$ tokens on a GPU with thousands of cores. How many "
        "steps must run one after another?",
        [
            Option("About 1: the cores run the 1000 steps in parallel.",
                   "No: step 500 cannot start before step 499 has produced $h_{499}$. More cores "
                   "speed up each small step, not the chain of them (§2)."),
            Option("1000 for attention as well: it has to compare all $n$ positions.",
                   "No: attention's comparisons are one matrix product whose *size* grows with $n$; "
                   "their *number* does not — 1 sequential step in §2's middle panel."),
            Option("1000: step $t$ needs $h_{t-1}$, so no core can start it earlier.",
                   "Right: the recurrence is sequential whatever the hardware — §2's middle panel, "
                   "$n$ steps for the RNN, 1 for attention.", right=True),
            Option("Fewer than attention, because the RNN does less arithmetic.",
                   "No: the RNN does less arithmetic (§2's right panel: $2nd^2$ against "
                   "$4nd^2 + 2n^2d$), but as $n$ small steps that wait for each other."),
        ],
    ),
    Predict(
        "1.q2",
        "The next cell measures the gradient norm after 100 steps for recurrent matrices $W$ of "
        "spectral radius $\\rho$ = 0.5 … 1.1, without and with tanh. With tanh and $\\rho = 1.1$, "
        "the norm will…",
        [
            Option("explode (far above 1), since $\\rho > 1$.",
                   "Not with tanh: every step also multiplies in tanh's slope $\\sigma' \\le 1$, "
                   "and here that outweighs $\\rho = 1.1$ — the table shows about $10^{-9}$. Without "
                   "tanh (the linear row) it does explode."),
            Option("vanish (far below 1).",
                   "Right: the tanh factors $\\sigma' \\le 1$ shrink the product faster than "
                   "$\\rho = 1.1$ stretches it; only the linear network explodes at 1.1.", right=True),
            Option("stay near 1, since $\\rho$ is close to 1.",
                   "No: 100 factors turn a small difference into a huge one; and with tanh the "
                   "factors $\\sigma' < 1$ push it down — the table shows about $10^{-9}$."),
        ],
        reveal="c61a15ec",
        verify=_verify_tanh_vanishes,
    ),
    Choice(
        "1.q3",
        "Without a nonlinearity, which recurrent matrix keeps the gradient near its starting size "
        "over 100 steps?",
        [
            Option("Any spectral radius below 1, so that nothing explodes.",
                   "No: below 1 it vanishes geometrically, about $\\rho^{100}$ — at $\\rho = 0.9$ the "
                   "table shows about $10^{-4}$, at 0.5 about $10^{-30}$."),
            Option("Spectral radius exactly 1: a knife edge.",
                   "Right: the product behaves like $\\rho^{100}$; only $\\rho = 1$ neither vanishes nor "
                   "explodes (the linear row of §3's table).", right=True),
            Option("A spectral radius a little above 1, to make up for the losses.",
                   "No: without a nonlinearity nothing is lost; $\\rho = 1.1$ grows like $1.1^{100}$ — "
                   "about $10^4$ in the linear row of §3's table."),
            Option("Any spectral radius, once tanh is added: it keeps the state bounded.",
                   "No: tanh bounds the *state*, but multiplies the gradient by $\\sigma' \\le 1$ at "
                   "every step, so it vanishes sooner — even at $\\rho = 1.1$ (§3's table)."),
        ],
        verify=_verify_knife_edge,
    ),
    Choice(
        "1.q4",
        "In one self-attention layer, how does the gradient of the last output with respect to input "
        "$x_j$ change as $x_j$ gets farther away?",
        [
            Option("It decays exponentially with distance, only more slowly than an RNN's.",
                   "No: that is the RNN's straight line on the log axis. Attention's curve is flat: "
                   "distance plays no role (§3's interaction distance plot)."),
            Option("It grows with distance, since far inputs are new information.",
                   "No: attention does not know distances at all without positions (lesson 03); "
                   "the measured gradient stays the same order at every distance."),
            Option("It stays the same order of magnitude: every input is one step away.",
                   "Right: the path from any input to any output has length 1 — §3's interaction "
                   "distance plot: the printed ratio between distance 63 and 1 is of order 1.", right=True),
        ],
        verify=_verify_distance,
    ),
    Choice(
        "1.q5",
        "With 32 distractors the RNN ends near chance, while one attention layer solves the task. What "
        "is the main reason?",
        [
            Option("The RNN has fewer parameters.",
                   "No: the lesson gave the RNN *more* — 6,008 against 5,096 (counted in §4)."),
            Option("The learning signal from the answer back to the letter vanishes over $n + 1$ steps; "
                   "attention reaches the letter in one step.",
                   "Right: to learn to keep the letter, the gradient must pass the product of §3; "
                   "attention's `?` looks at the letter directly.", right=True),
            Option("The attention layer uses positions to find the first token.",
                   "No: it has no positions at all; it recognises the letter by its content, "
                   "wherever it is (§4's 'Why')."),
            Option("48 numbers of hidden state cannot hold one letter.",
                   "No: one letter fits easily — where the RNN learned the task, its $h_n$ is "
                   "decided by the letter (§4's bottleneck table). What fails is *learning* to keep it."),
        ],
        verify=_verify_recall,
    ),
    # 1.q6 has no verify: a fact about gated RNNs' design (the chain of n steps stays); lesson 01
    # trains no LSTM, so there is nothing of its own to recompute.
    Choice(
        "1.q6",
        "Gated RNNs (LSTM, GRU) were designed against vanishing gradients. What can they *not* remove?",
        [
            Option("The vanishing gradient: they fail on the recall task just like our RNN.",
                   "No: the lesson says gated cells get much further on this task — that is what "
                   "the gates are for."),
            Option("The $n$ steps that must run one after another.",
                   "Right: a gated cell still needs $h_{t-1}$ before $h_t$; only attention reads "
                   "all positions in one step (§2).", right=True),
            Option("Nothing: with gates an RNN is as parallel as attention.",
                   "No: gates change what flows through each step, not the chain of steps — the "
                   "sequential count of §2 stays $n$."),
        ],
    ),
]
