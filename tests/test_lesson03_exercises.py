"""Lesson 03's checkers try the cases their hints talk about."""
from course_lib.exercises.lesson03 import ADD_LEARNED_POSITIONS, SINUSOIDAL_TABLE


def test_table_trials_include_odd_and_even_d_model():
    parities = {d_model % 2 for _, d_model, _ in SINUSOIDAL_TABLE._inputs()}
    assert parities == {0, 1}


def test_lookup_trials_include_sequences_that_do_not_start_at_zero():
    for x, P, positions in ADD_LEARNED_POSITIONS._inputs():
        assert (positions[:, 0] == 0).any() and (positions[:, 0] > 0).any()
        assert positions[0, 0] > 0            # "the first sequence's positions for all" shows
        assert int(positions.max()) + 1 < P.shape[0]          # room for the off-by-one mistake
        assert len({x.shape[0], x.shape[1], x.shape[2]}) == 3  # no axis can be mistaken for another


def test_table_without_the_2_in_a_loop_over_half_the_pairs_is_named():
    """Issue 29 §2: `i/d_model` in a loop over d_model // 2 pairs (odd d_model: last column 0)
    got the generic hint; the checker names both slips."""
    import math

    import torch

    def sinusoidal_table(length, d_model, base=10000.0):
        pe = torch.zeros(length, d_model)
        for pos in range(length):
            for i in range(d_model // 2):
                pe[pos, 2 * i] = math.sin(pos / base ** (i / d_model))
                pe[pos, 2 * i + 1] = math.cos(pos / base ** (i / d_model))
        return pe

    v = SINUSOIDAL_TABLE.verdict(sinusoidal_table)
    assert v.status == "wrong" and "i/d_model" in v.message and "the 2 of 2i/d_model" in v.message, v.message
    assert "last column stays all zeros" in v.message, v.message


def test_rows_one_to_n_for_every_sequence_are_named():
    """Issue 29 §2: `x + P[1:n+1]` is shifted by one and ignores `positions`; both are said."""
    v = ADD_LEARNED_POSITIONS.verdict(lambda x, P, positions: x + P[1: x.shape[1] + 1])
    assert v.status == "wrong" and "P[1] … P[n]" in v.message, v.message
    assert "shifted by one" in v.message and "`positions` was not used" in v.message, v.message
