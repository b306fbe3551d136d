"""Lessons 07-08 exercises whose outputs are ids or modules (they use `run=`, so the
shared float-output tests skip them): a stub, a crash and None still get clear messages."""
import pytest
import torch

from course_lib.exercises import framework
from course_lib.exercises.framework import CRASHED, OK, TODO, WRONG

RUN_BASED = ["shift_targets", "greedy_decode", "beam_step", "decoder_layer"]


def _stub(*args):
    raise NotImplementedError


def _crash(*args):
    return args[0].no_such_method()


@pytest.mark.parametrize("name", RUN_BASED)
@pytest.mark.parametrize("fn, status, words", [
    (_stub, TODO, "not solved yet"),
    (_crash, CRASHED, "raised AttributeError"),
    (lambda *a: None, WRONG, "returned None"),
])
def test_learner_failures_get_specific_messages(name, fn, status, words):
    ex = framework.REGISTRY[name]
    learner = fn
    if name == "decoder_layer":  # a class: the stub / crash / None sits in its forward
        learner = type("Learner", (ex.reference,), {"forward": lambda self, *a: fn(*a)})
    v = ex.verdict(learner)
    assert v.status == status and words in v.message, v.message


def test_float_ids_are_named():
    v = framework.REGISTRY["shift_targets"].verdict(
        lambda s, b, e, p: tuple(t.float() for t in framework.REGISTRY["shift_targets"].reference(s, b, e, p)))
    assert v.status == WRONG and "has dtype torch.float32, expected torch.int64" in v.message


def test_greedy_without_bos_gets_a_shape_message():
    ref = framework.REGISTRY["greedy_decode"].reference
    v = framework.REGISTRY["greedy_decode"].verdict(lambda *a: ref(*a)[:, 1:])
    assert v.status == WRONG and "has shape" in v.message


def test_the_library_greedy_decoder_stops_early_but_agrees_until_eos():
    from course_lib.nn.decoding import greedy_decode
    ex = framework.REGISTRY["greedy_decode"]
    model, src, bos, eos, n = ex.make_inputs(torch.Generator().manual_seed(0))
    assert ex.verdict(ex.reference).status == OK
    assert greedy_decode(model, bos, n, eos, src=src).shape[0] == src.shape[0]


def test_cross_attention_trials_tell_target_from_source():
    # n_tgt ≠ n_src: queries and keys/values swapped give another number of rows.
    for x, memory, *_ in framework.REGISTRY["cross_attention"]._inputs():
        assert x.shape[1] != memory.shape[1]
