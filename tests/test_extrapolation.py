"""The extrapolation experiment of lesson 03: task, models, training, measurements."""
import math

import pytest
import torch

from course_lib.experiments.extrapolation import (IGNORE, POSITION_KINDS, PositionProbe, accuracy_by_length,
                                      accuracy_by_position, first_layer_attention,
                                      previous_token_batch, train_probe)
from course_lib.nn.rotary import RotarySelfAttention


def test_targets_are_the_previous_tokens():
    tokens, targets = previous_token_batch(4, 7, 10, torch.Generator().manual_seed(0))
    assert tokens.shape == targets.shape == (4, 7)
    assert (targets[:, 0] == IGNORE).all()
    assert torch.equal(targets[:, 1:], tokens[:, :-1])
    assert 0 <= int(tokens.min()) and int(tokens.max()) < 10


@pytest.mark.parametrize("kind", POSITION_KINDS)
def test_every_kind_runs(kind):
    torch.manual_seed(0)
    model = PositionProbe(12, kind, max_len=10)
    assert model(torch.zeros(3, 10, dtype=torch.long)).shape == (3, 10, 12)
    rotary = [m for m in model.modules() if isinstance(m, RotarySelfAttention)]
    assert bool(rotary) == (kind == "rotary")
    assert (model.pos is None) == (kind in ("none", "rotary"))


def test_without_positions_the_model_is_permutation_equivariant():
    torch.manual_seed(0)
    model = PositionProbe(12, "none").eval()
    tokens = torch.randint(12, (2, 8))
    perm = torch.randperm(8)
    with torch.no_grad():
        torch.testing.assert_close(model(tokens[:, perm]), model(tokens)[:, perm], atol=1e-5, rtol=0)


@pytest.mark.parametrize("kind", ["sinusoidal", "learned"])
def test_tables_refuse_sequences_longer_than_max_len(kind):
    model = PositionProbe(12, kind, max_len=6)
    with pytest.raises(ValueError, match="longer than the positional table"):
        model(torch.zeros(1, 7, dtype=torch.long))


def test_bad_kind_is_named():
    with pytest.raises(ValueError, match="positions must be one of"):
        PositionProbe(12, "relative")


def test_training_is_deterministic_learns_and_leaves_unseen_rows_alone():
    def run():
        torch.manual_seed(0)
        model = PositionProbe(8, "learned", max_len=16)
        initial = model.pos.weight.detach().clone()
        losses = train_probe(model, train_len=8, steps=40, batch_size=16, seed=3)
        return model, initial, losses

    model, initial, losses = run()
    _, _, again = run()
    assert losses == again
    assert sum(losses[-5:]) / 5 < sum(losses[:5]) / 5
    assert torch.equal(model.pos.weight[8:], initial[8:])          # never reached by training
    assert not torch.equal(model.pos.weight[:8], initial[:8])
    assert not model.training


def test_train_probe_checks_arguments():
    model = PositionProbe(8, "none")
    with pytest.raises(ValueError, match="train_len must be >= 2"):
        train_probe(model, train_len=1, steps=1)
    with pytest.raises(ValueError, match="steps must be positive"):
        train_probe(model, train_len=4, steps=0)


def test_accuracies_are_fractions_and_position_zero_is_nan():
    torch.manual_seed(0)
    model = PositionProbe(8, "sinusoidal", max_len=16)
    acc = accuracy_by_length(model, [2, 5, 9], n_seq=16)
    assert acc.shape == (3,) and ((acc >= 0) & (acc <= 1)).all()
    per_pos = accuracy_by_position(model, 9, n_seq=16)
    assert per_pos.shape == (9,) and math.isnan(per_pos[0]) and not per_pos[1:].isnan().any()
    assert model.training                       # the measurement restored the mode it found


def test_a_perfect_model_scores_one():
    """A hand-made predictor that copies the previous token gets 100 %."""
    class Copier(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = torch.nn.Module()
            self.embed.vocab_size = 5

        def forward(self, tokens):
            prev = torch.roll(tokens, 1, dims=1)
            return torch.nn.functional.one_hot(prev, 5).float()

    assert torch.equal(accuracy_by_length(Copier(), [3, 6], n_seq=8), torch.ones(2))


@pytest.mark.parametrize("kind", ["none", "sinusoidal", "learned", "rotary"])
def test_first_layer_attention_is_a_distribution(kind):
    torch.manual_seed(0)
    model = PositionProbe(8, kind, h=2, max_len=12)
    w = first_layer_attention(model, torch.randint(8, (3, 12)))
    assert w.shape == (3, 2, 12, 12)
    torch.testing.assert_close(w.sum(-1), torch.ones(3, 2, 12))
