"""Concept checks of lesson 03 (positional encodings): order without positions, what PE·PE
depends on, the shift matrix M_k, learned tables, add vs concatenate, extrapolation
(measured), rotary's relative scores. Each `verify` recomputes what the lesson computes
(small, seeded) and asserts the claim its right answer makes.
"""
import torch

from .questions import Choice, Option, Predict

__all__ = ["QUESTIONS"]


def _verify_bag():
    from course_lib.nn import TokenEmbedding, scaled_dot_product_attention
    a, b = "the student is eating an apple".split(), "an apple is eating the student".split()
    vocab = {w: i for i, w in enumerate(sorted(set(a)))}
    torch.manual_seed(0)
    embed = TokenEmbedding(len(vocab), 16)
    W = [torch.randn(16, 16) / 4 for _ in range(3)]
    with torch.no_grad():
        out = [scaled_dot_product_attention(*(x @ w for w in W))[0]
               for x in (embed(torch.tensor([[vocab[w] for w in s]]))[0] for s in (a, b))]
    assert torch.allclose(out[0], out[1][[b.index(w) for w in a]], atol=1e-5), "each word: same output"
    assert torch.allclose(out[0].mean(0), out[1].mean(0), atol=1e-5), "the mean over the sentence: the same"


def _verify_offset_only():
    from course_lib.nn import positional
    table = positional.sinusoidal_table(100, 64)
    sim = table @ table.T
    spread = max((sim.diagonal(k).max() - sim.diagonal(k).min()).item() for k in range(-99, 100))
    assert spread < 1e-4, "PE_p·PE_q should be constant along every diagonal p − q"
    assert torch.allclose(sim.diagonal(7), sim.diagonal(-7)), "the same for +k and −k"
    assert sim[50, 90] > 0.3 * sim[0, 0], "far positions do not fall to zero similarity (15.4 of 32 at 40)"


def _verify_shift():
    from course_lib.nn import positional
    table = positional.sinusoidal_table(300, 16)
    for k in (1, 4, -3):
        M = positional.shift_matrix(k, 16)
        src, dst = table[max(0, -k): 300 - max(0, k)], table[max(0, k): 300 + min(0, k)]
        assert torch.allclose(src @ M.T, dst, atol=1e-4), f"M_{k} should map PE_pos to PE_pos+k at every pos"


def _verify_table_end():
    from course_lib.nn import LearnedPositionalEmbedding
    learned = LearnedPositionalEmbedding(max_len=8, d_model=16)
    learned(torch.zeros(1, 8, 16))
    try:
        learned(torch.zeros(1, 9, 16))
    except ValueError:
        return
    raise AssertionError("a learned table of 8 rows should refuse 9 positions")


def _verify_add():
    from course_lib.nn import positional
    gen = torch.Generator().manual_seed(0)
    for dim in (64, 512):
        E = torch.randn(1000, dim, generator=gen)
        P = positional.sinusoidal_table(100, dim)
        tok, pos = torch.randint(1000, (2000,), generator=gen), torch.randint(100, (2000,), generator=gen)
        h = E[tok] + P[pos]
        assert ((h @ E.T).argmax(-1) == tok).float().mean() > 0.99, f"d = {dim}: the token should be read back"
    assert ((h @ P.T).argmax(-1) == pos).float().mean() > 0.85, "most positions should be read back at 512"
    assert 3 * (512 + 512) * 512 == 2 * 3 * 512 * 512, "concatenating doubles W^Q, W^K, W^V here"


def _verify_extrapolation():
    # The lesson's own run, for the sinusoidal model alone (same seed, length, steps), and the
    # band its claim cell checks: unseen positions above chance and well below usable.
    from course_lib.experiments.extrapolation import PositionProbe, accuracy_by_position, train_probe
    from course_lib.utils import seed_everything
    L, vocab = 16, 16
    seed_everything(0)
    model = PositionProbe(vocab, "sinusoidal", max_len=2 * L)
    train_probe(model, train_len=L, steps=200, seed=0)
    by_position = accuracy_by_position(model, 2 * L)
    seen, new = float(by_position[1:L].mean()), float(by_position[L:].mean())
    assert seen > 0.9, f"positions seen in training should still work: {seen:.0%}"
    assert 1 / vocab < new < 0.8, f"unseen positions: above chance, far from usable, got {new:.0%}"


def _verify_relative():
    from course_lib.nn import positional, rotary_scores
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(12, 16, generator=gen)
    W_q, W_k = torch.randn(16, 16, generator=gen) / 4, torch.randn(16, 16, generator=gen) / 4
    qs, ks = x @ W_q, x @ W_k
    assert torch.allclose(rotary_scores(qs, ks), rotary_scores(qs, ks, q_offset=1000, k_offset=1000), atol=1e-3)
    pe = positional.sinusoidal_table(1012, 16)
    added = [((x + p) @ W_q) @ ((x + p) @ W_k).T for p in (pe[:12], pe[1000:])]
    assert (added[0] - added[1]).abs().max() > 1.0, "added sinusoids: shifting the sequence changes scores"


QUESTIONS = [
    Choice(
        "3.q1",
        "Without positions, *the student is eating an apple* and *an apple is eating the student* give "
        "every word the same output vector. What built on top of these outputs could still tell the "
        "two sentences apart?",
        [
            Option("The mean of the outputs, a sentence vector.",
                   "No: a mean ignores order — §1 prints it equal for both sentences, up to float "
                   "rounding."),
            Option("Nothing that does not itself know positions: both give the same multiset of outputs.",
                   "Right: the outputs are the same vectors, only listed in another order (§1). A mean, "
                   "a classifier or another attention layer sees the same thing.", right=True),
            Option("A second self-attention layer.",
                   "No: it is permutation equivariant as well, so it maps the same multiset to the "
                   "same multiset. Only position information breaks the tie (§1, last cell)."),
            Option("More dimensions: a larger $d_{model}$.",
                   "No: the equality holds at any width; it comes from the sum over keys ignoring "
                   "order (lesson 02, §6), not from a lack of room."),
        ],
        verify=_verify_bag,
    ),
    Choice(
        "3.q2",
        "For sinusoidal encodings, what does the similarity $PE_p \\cdot PE_q$ depend on?",
        [
            Option("On $p$ and $q$ separately: early positions are more alike.",
                   "No: the printed check says it is constant along every diagonal $p - q$ = const, "
                   "wherever the pair sits."),
            Option("On the distance, falling smoothly to 0 for far positions.",
                   "No: it depends on the offset, but does not fall to 0 — §2 prints 32 at offset 0 "
                   "and still about 15 at ±40."),
            Option("Only on the offset $p - q$ — and not even on its sign.",
                   "Right: pair by pair $\\sin a \\sin b + \\cos a \\cos b = \\cos(a - b)$, so it is "
                   "$\\sum_i \\cos((p - q)\\omega_i)$; §2 checks it on every diagonal.", right=True),
        ],
        verify=_verify_offset_only,
    ),
    Choice(
        "3.q3",
        "$PE_{pos+k} = M_k\\, PE_{pos}$. What does the matrix $M_k$ depend on?",
        [
            Option("On $pos$ and $k$: each position needs its own shift.",
                   "No: §3 applies one $M_k$ to every position of a 1 000-position table and gets "
                   "$PE_{pos+k}$ each time."),
            Option("Only on the offset $k$ (and on $d_{model}$ and the base), not on $pos$.",
                   "Right: each $2 \\times 2$ block rotates by $k\\omega_i$; $pos$ does not appear, so "
                   "one map shifts every position (§3 checks all 1 000).", right=True),
            Option("On nothing: it is learned from data.",
                   "No: it is fixed by the formula (`shift_matrix`). Least squares *finds* the same "
                   "matrix from the table (§3), but nothing in it is trained."),
        ],
        verify=_verify_shift,
    ),
    Choice(
        "3.q4",
        "A model with a learned position table of 512 rows is given a sequence of 600 tokens. What happens?",
        [
            Option("Positions wrap around: 512 reuses row 0.",
                   "No: `course_lib` refuses rather than silently wrapping (§4) — and a wrapped "
                   "position would tell the model a wrong place."),
            Option("There is no row for positions 512–599: the model cannot represent them.",
                   "Right: a table has exactly `max_len` rows; `course_lib` raises an error rather than "
                   "guess (§4).", right=True),
            Option("The missing rows are computed by the sinusoid formula.",
                   "No: a learned table has no formula behind it, only its rows. Sinusoids give any "
                   "position (§4 prints position 100 000); a table does not."),
            Option("The extra rows start at zero and are learned on the fly.",
                   "No: nothing is learned while the model runs, and the table's size is fixed when "
                   "the model is built."),
        ],
        verify=_verify_table_end,
    ),
    Choice(
        "3.q5",
        "Why do transformers usually *add* the position vector to the token embedding rather than "
        "concatenate the two?",
        [
            Option("Adding mixes the two irreversibly, and that mixing is what the model needs.",
                   "No: the sum is not irreversible — §5 reads both back, and addition can even "
                   "reproduce concatenation ($[x; 0] + [0; p] = [x; p]$)."),
            Option("Concatenating costs the same, but adding is simpler to code.",
                   "No: concatenating widens every matrix that reads the vectors — twice the "
                   "parameters of $W^Q, W^K, W^V$ in §5."),
            Option("No wider matrices, and in high dimension both the token and the position can still "
                   "be read back from the sum.",
                   "Right: concatenating doubles $W^Q, W^K, W^V$ at the paper's size, while §5's "
                   "table reads the token back from every sum at 64 dimensions and up.", right=True),
        ],
        verify=_verify_add,
    ),
    Predict(
        "3.q6",
        "The next cell tests the trained models on sequences up to twice the training length. The "
        "sinusoidal model, at positions it never saw in training (16–31), will be…",
        [
            Option("as accurate as on seen positions: the formula gives every position a vector.",
                   "No: a vector exists for every position, but the model never saw these. Measured: "
                   "accuracy there falls well below the seen positions (the next cells print it)."),
            Option("far less accurate than on seen positions, though above chance.",
                   "Right: sinusoids do not extrapolate for free — the claim cell checks it, between "
                   "chance and 80 % at the new positions while the seen ones stay above 90 %.",
                   right=True),
            Option("at chance, exactly like the learned table.",
                   "No: the learned table's untrained rows are random noise (chance); the sinusoids "
                   "stay above chance at the new positions — but far from usable."),
        ],
        reveal="72b53d83",
        verify=_verify_extrapolation,
    ),
    Choice(
        "3.q7",
        "With rotary embeddings, what does the attention score between a query at position $m$ and a "
        "key at position $j$ depend on?",
        [
            Option("The contents and both positions $m$ and $j$, as with added sinusoids.",
                   "No: that is the added table — §7's shift by 1 000 changes its scores by up to "
                   "16.8, while rotary's stay the same."),
            Option("The contents $q, k$ and the offset $j - m$ only.",
                   "Right: $(R_m q) \\cdot (R_j k) = q^\\top R_{j-m}\\, k$; shifting the whole sequence "
                   "by 1 000 changes no score (§7).", right=True),
            Option("The offset alone, whatever the contents.",
                   "No: the score is still $q^\\top R_{j-m} k$ — the contents enter through $q$ and "
                   "$k$. §7's figure uses the same content everywhere only to show the offset part."),
        ],
        verify=_verify_relative,
    ),
]
