"""Lessons 07-08 exercises whose outputs are ids or modules (they use `run=`, so the
shared float-output tests skip them): a stub, a crash and None still get clear messages."""
import re

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
    # n_tgt ≠ n_src on the random trials: queries and keys/values swapped give another number of
    # rows. The probe after them has n_tgt = n_src, where the swaps that crash on the trials run.
    ex = framework.REGISTRY["cross_attention"]
    inputs = ex._inputs()
    for x, memory, *_ in inputs[:ex.trials]:
        assert x.shape[1] != memory.shape[1]
    assert any(x.shape[1] == memory.shape[1] for x, memory, *_ in inputs[ex.trials:])


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


# ---- issue 38 §3: slips that still restated the recipe, each named

def _cross(q_from, kv_from, scores="q k", mask=lambda m: m[:, None, :], values=None):
    """A learner's cross_attention: which tensor feeds the queries, the keys and the values
    (by default the keys' source, or memory when the scores are taken as k qᵀ)."""
    def cross_attention(x, memory, w_q, w_k, w_v, src_mask):
        src = {"x": x, "memory": memory}
        values_from = values or (kv_from if scores == "q k" else "memory")
        q, k, v = src[q_from] @ w_q, src[kv_from] @ w_k, src[values_from] @ w_v
        s = (q @ k.transpose(-2, -1) if scores == "q k" else k @ q.transpose(-2, -1)) / w_q.shape[1] ** 0.5
        if mask is not None:
            s = s.masked_fill(~mask(src_mask), float("-inf"))
        return torch.softmax(s, dim=-1) @ v
    return cross_attention


def test_queries_from_the_memory_with_the_targets_shape_are_named():
    """q = memory @ w_q, k = x @ w_k, and scores k qᵀ so that the output keeps n_tgt rows."""
    v = framework.REGISTRY["cross_attention"].verdict(_cross("memory", "x", scores="k q"))
    assert v.status == WRONG, v.message
    assert "queries come from memory" in v.message and "q = x @ w_q" in v.message, v.message


@pytest.mark.parametrize("mask", [None, lambda m: m[:, None, :]], ids=["unmasked", "masked-crash"])
def test_keys_and_values_from_x_are_named_self_attention(mask):
    v = framework.REGISTRY["cross_attention"].verdict(_cross("x", "x", mask=mask))
    assert v.status == WRONG, v.message
    assert "self-attention" in v.message and "memory @ w_k" in v.message, v.message


def test_the_source_mask_on_the_wrong_axis_is_named():
    v = framework.REGISTRY["cross_attention"].verdict(_cross("x", "memory", mask=lambda m: m[:, :, None]))
    assert v.status == WRONG, v.message
    assert "src_mask[:, :, None]" in v.message and "(batch, 1, n_src)" in v.message, v.message


def test_the_decoder_hints_call_the_memory_h_enc_as_the_lesson_does():
    hints = [m.hint for m in framework.REGISTRY["decoder_layer"].mistakes]
    assert not [h for h in hints if re.search(r"(?<![\w_])M(?![\w_])", h)], hints
    assert sum("H_enc" in h for h in hints) >= 4


def _shift(tgt_in_rows, labels_rows):
    """A learner's shift_targets built from two row recipes, right-padded to the longest row."""
    def shift_targets(seqs, bos_id, eos_id, pad_id):
        def pad(rows):
            n = max(map(len, rows))
            return torch.tensor([r + [pad_id] * (n - len(r)) for r in rows])
        ids = dict(b=bos_id, e=eos_id)
        return (pad([tgt_in_rows(s, ids) for s in seqs]), pad([labels_rows(s, ids) for s in seqs]))
    return shift_targets


def test_eos_left_in_the_decoder_input_is_named():
    """Issue 38 §3: built <bos> y <eos>, cut the last column: the short rows keep <eos>."""
    def shift_targets(seqs, bos_id, eos_id, pad_id):
        n = max(map(len, seqs)) + 2
        full = torch.tensor([[bos_id] + s + [eos_id] + [pad_id] * (n - len(s) - 2) for s in seqs])
        return full[:, :-1], full[:, 1:]

    v = framework.REGISTRY["shift_targets"].verdict(shift_targets)
    assert v.status == WRONG, v.message
    assert "tgt_in" in v.message and "still hold <eos>" in v.message and "shorter row" in v.message, v.message


@pytest.mark.parametrize("learner, words", [
    (_shift(lambda s, i: [i["b"]] + s + [i["e"]], lambda s, i: s + [i["e"]]), ["one column too many"]),
    (_shift(lambda s, i: [i["b"]] + s, lambda s, i: s), ["no <eos>"]),
    (_shift(lambda s, i: s, lambda s, i: s + [i["e"]]), ["lack <bos>"]),
], ids=["tgt_in-with-eos", "labels-without-eos", "tgt_in-without-bos"])
def test_a_learners_shift_slip_is_named(learner, words):
    v = framework.REGISTRY["shift_targets"].verdict(learner)
    assert v.status == WRONG, v.message
    for w in words:
        assert w in v.message, v.message


def _beam(body):
    def beam_step(scores, log_probs, beam_size):
        return body(scores, log_probs, beam_size, scores[..., None] + log_probs, log_probs.shape[-1])
    return beam_step


@pytest.mark.parametrize("learner, words", [
    (_beam(lambda s, lp, k, c, V: (lambda t: (t.values, t.indices // V, t.indices % V))(c.topk(k, dim=-1))),
     ["per beam", "flatten"]),
    (_beam(lambda s, lp, k, c, V: (lambda sc, f: (lp.flatten(1).gather(1, f), f // V, f % V))(*c.flatten(1).topk(k))),
     ["only the new token's", "scores[b, i] + log_probs[b, i, v]"]),
    (_beam(lambda s, lp, k, c, V: (lambda sc, f: (sc, f // V, f % V))(*c.flatten().topk(k))),
     ["batch axis", "flatten(1)"]),
    (_beam(lambda s, lp, k, c, V: (lambda sc, f: (sc, f / V, f % V))(*c.flatten(1).topk(k))),
     ["true division", "//"]),
], ids=["topk-per-beam", "scores-not-cumulative", "batch-flattened", "true-division"])
def test_a_learners_beam_slip_is_named(learner, words):
    v = framework.REGISTRY["beam_step"].verdict(learner)
    assert v.status == WRONG, v.message
    for w in words:
        assert w in v.message, v.message


def test_a_greedy_next_token_without_its_axis_is_named():
    def greedy_decode(model, src, bos_id, eos_id, max_len):
        src_mask = model.source_mask(src)
        memory = model.encode(src, src_mask)
        ys = torch.full((src.shape[0], 1), bos_id, dtype=torch.long)
        for _ in range(max_len):
            next_token = model.decode(ys, memory, src_mask)[:, -1].argmax(dim=-1)   # (batch,)
            ys = torch.cat([ys, next_token], dim=1)
        return ys

    v = framework.REGISTRY["greedy_decode"].verdict(greedy_decode)
    assert v.status == WRONG and "(batch,)" in v.message and "next_token[:, None]" in v.message, v.message


def test_queries_from_the_memory_with_values_from_x_are_named_too():
    """The same swap with v = x @ w_v: the last product crashes; the crash is matched."""
    v = framework.REGISTRY["cross_attention"].verdict(_cross("memory", "x", scores="k q", values="x"))
    assert v.status == WRONG, v.message
    assert "queries come from memory" in v.message, v.message
