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


# ---- issue 29 §2: wrong answers a learner wrote, each named in the lesson's notation

def _decoder_layer(forward):
    return type("MyDecoderLayer", (framework.REGISTRY["decoder_layer"].reference,), {"forward": forward})


def test_cross_attention_reading_the_block_input_is_named_with_h1():
    def forward(self, x, memory, self_mask, cross_mask):
        h1 = self.norm1(x + self.self_attn(x, mask=self_mask))
        h2 = self.norm2(h1 + self.cross_attn(x, memory, mask=cross_mask))
        return self.norm3(h2 + self.ffn(h2))

    v = framework.REGISTRY["decoder_layer"].verdict(_decoder_layer(forward))
    assert v.status == WRONG and "reads the block input x" in v.message and "h₁" in v.message, v.message
    assert "cross_attn(x, memory" not in v.message   # the wrong call must not read as the right one


def test_a_decoder_block_without_cross_attention_gets_its_own_message():
    def forward(self, x, memory, self_mask, cross_mask):
        h1 = self.norm1(x + self.self_attn(x, mask=self_mask))
        return self.norm3(h1 + self.ffn(h1))

    v = framework.REGISTRY["decoder_layer"].verdict(_decoder_layer(forward))
    assert v.status == WRONG and "no cross-attention" in v.message and "memory" in v.message, v.message
    assert "reads the block input" not in v.message


def test_beam_and_token_swapped_in_decoding_is_named():
    def beam_step(scores, log_probs, beam_size):
        k = scores.shape[1]
        new_scores, flat = (scores[..., None] + log_probs).flatten(1).topk(beam_size, dim=-1)
        return new_scores, flat % k, flat // k          # read as f = token·k + beam

    v = framework.REGISTRY["beam_step"].verdict(beam_step)
    assert v.status == WRONG and "beam and token are swapped" in v.message, v.message
