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
