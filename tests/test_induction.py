"""Lesson 10's machinery: the attention-only model, scores, ablation, the residual
stream decomposition — and the trained model really has induction heads."""
import math

import pytest
import torch

from course_lib.experiments.head_patterns import offset_score
from course_lib.experiments.induction import (
    AttentionOnlyTransformer,
    ablate_heads,
    ablation_table,
    attention_stack,
    half_losses,
    induction_scores,
    logit_contributions,
    next_token_losses,
    previous_token_scores,
    repeated_sequences,
    residual_components,
    token_influence,
    train_induction_model,
)
from course_lib.nn.models import DecoderOnlyLM


def test_repeated_sequences_layout():
    x = repeated_sequences(4, 5, 10, generator=torch.Generator().manual_seed(0))
    assert x.shape == (4, 11) and x.dtype == torch.long
    assert (x[:, 0] == 10).all()                       # BOS is the extra id
    assert torch.equal(x[:, 1:6], x[:, 6:])            # s, s
    assert x[:, 1:].max() < 10


def test_next_token_losses_and_halves():
    logits = torch.zeros(2, 7, 4)                      # uniform predictions
    tokens = torch.randint(0, 4, (2, 7))
    losses = next_token_losses(logits, tokens)
    assert losses.shape == (2, 6)
    torch.testing.assert_close(losses, torch.full((2, 6), math.log(4)))
    first, repeated = half_losses(torch.arange(6.0).expand(2, 6), period=3)
    torch.testing.assert_close(first, torch.tensor([1.0, 1.0]))        # positions 0, 1, 2
    torch.testing.assert_close(repeated, torch.tensor([4.5, 4.5]))     # positions 4, 5
    with pytest.raises(ValueError, match="period=4 give 8"):
        half_losses(torch.zeros(1, 6), period=4)


def test_scores_on_hand_made_attention():
    period, n = 3, 7
    prev = torch.zeros(n, n)
    prev[0, 0] = 1
    prev[torch.arange(1, n), torch.arange(n - 1)] = 1             # i -> i-1
    ind = torch.zeros(n, n)
    ind[torch.arange(n), 0] = 1
    i = torch.arange(period + 1, n)
    ind[i] = 0
    ind[i, i - period + 1] = 1                                    # i -> i - period + 1 in the repeat
    attn = torch.stack([prev, ind])[:, None, None].expand(2, 2, 1, n, n)   # (layers, batch, h, n, n)
    torch.testing.assert_close(previous_token_scores(attn), torch.tensor([[1.0], [1 / 6]]))
    torch.testing.assert_close(induction_scores(attn, period), torch.tensor([[0.0], [1.0]]))
    with pytest.raises(ValueError, match="period=4 has 9"):
        induction_scores(attn, 4)
    assert offset_score(prev, -1).item() == 1.0


def test_ablating_a_head_removes_exactly_its_term():
    torch.manual_seed(0)
    model = AttentionOnlyTransformer(9, d_model=8, h=2, n_layers=2, max_len=12)
    x = torch.randint(0, 9, (3, 10))
    parts = residual_components(model, x)
    with torch.no_grad(), ablate_heads(model, [(1, 0)]):
        ablated = model.residual(x)
    # layer 1 is the last: removing its head 0 removes exactly that term
    torch.testing.assert_close(ablated, sum(v for k, v in parts.items() if k != "L1H0"), atol=1e-5, rtol=0)
    with torch.no_grad():
        torch.testing.assert_close(model.residual(x), sum(parts.values()), atol=1e-5, rtol=0)   # hooks removed
    with pytest.raises(ValueError, match=r"no head \(2, 0\)"):
        with ablate_heads(model, [(2, 0)]):
            pass


def test_logit_contributions_add_up_to_the_logit():
    torch.manual_seed(1)
    model = AttentionOnlyTransformer(9, d_model=8, h=2, n_layers=2, max_len=12)
    x = torch.randint(0, 9, (2, 8))
    contrib = logit_contributions(model, x)
    with torch.no_grad():
        logit = model(x)[:, :-1].gather(-1, x[:, 1:, None])[..., 0]
    torch.testing.assert_close(sum(contrib.values()), logit, atol=1e-5, rtol=0)


def test_only_attention_moves_information_between_positions():
    torch.manual_seed(0)
    lm = DecoderOnlyLM(12, d_model=16, h=2, d_ff=32, n_layers=2, max_len=10)    # has FFN + LN
    x = torch.randint(0, 12, (1, 8))
    with_attn = token_influence(lm, x, generator=torch.Generator().manual_seed(0))
    with ablate_heads(lm, "all"):
        without = token_influence(lm, x, generator=torch.Generator().manual_seed(0))
    off = ~torch.eye(8, dtype=torch.bool)
    # Zero up to float32 rounding: with several threads a batch and a single sequence round
    # differently, so "exactly 0" holds only on one thread.
    assert with_attn.triu(1).max() < 1e-5               # causal: no effect of later tokens
    assert with_attn.tril(-1).max() > 1e-3
    assert without[off].max() < 1e-5                    # nothing crosses positions
    assert without.diag().min() > 1e-3


@pytest.mark.slow
def test_training_produces_induction_heads_that_ablation_confirms():
    torch.set_num_threads(1)
    model, history = train_induction_model(steps=400, seed=0, progress=False)
    assert len(history["repeated"]) == 400
    period = 10
    test = repeated_sequences(100, period, 32, generator=torch.Generator().manual_seed(1))
    attn = attention_stack(model, test)
    prev, ind = previous_token_scores(attn), induction_scores(attn, period)
    assert prev[0].max() > 0.3 and ind[1].max() > 0.6         # layer 0 previous-token, layer 1 induction
    assert ind[0].max() < 0.1 and prev[1].max() < 0.15        # and not the other way round
    prev_head, ind_head = (0, int(prev[0].argmax())), (1, int(ind[1].argmax()))
    table = ablation_table(model, test, period, {"none": [], "prev": [prev_head], "ind": [ind_head],
                                                 "layer 0": [(0, 0), (0, 1)]})
    first, repeated = table["none"]
    assert repeated < 0.6 and first > 3.3                     # copies the repeat, cannot guess s
    assert table["prev"][1] > repeated + 0.2
    assert table["ind"][1] > repeated + 0.5
    assert table["layer 0"][1] > 3.0                          # back to guessing


def test_bad_arguments():
    with pytest.raises(ValueError, match="periods must be"):
        train_induction_model(periods=(5, 3), steps=1, progress=False)
    model = AttentionOnlyTransformer(5, max_len=4)
    with pytest.raises(ValueError, match="longer than the positional table"):
        model(torch.zeros(1, 5, dtype=torch.long))
    with pytest.raises(TypeError, match="AttentionOnlyTransformer"):
        residual_components(DecoderOnlyLM(5, d_model=8, h=2, d_ff=8, n_layers=1, max_len=4),
                            torch.zeros(1, 3, dtype=torch.long))
