"""Issue 15, the checker side: demonstrations are not recorded, a crash names the inputs the
checker used, and a slip that crashes (or returns the wrong shape) is recognised by its hint.
The planted mistakes themselves are walked in tests/test_exercises.py."""
import json

import pytest
import torch
from torch import nn

from course_lib.exercises import demo, framework
from course_lib.exercises.framework import CRASHED, OK, WRONG
from course_lib.nn.layers import FeedForward, LayerNorm, MultiHeadAttention
import course_lib.exercises  # noqa: F401  (fills the registry)


@pytest.fixture
def progress_file(tmp_path, monkeypatch):
    path = tmp_path / "progress.json"
    monkeypatch.setenv("COURSE_PROGRESS_FILE", str(path))
    return path


def _wrong(x):
    return x


# ---------------------------------------------------------------- demonstrations

def test_a_demo_prints_the_verdict_and_records_nothing(progress_file, capsys):
    ex = framework.REGISTRY["center_rows"]
    with demo():
        v = ex.check(_wrong)
    assert v.status == WRONG and capsys.readouterr().out.strip() == str(v)
    assert not progress_file.exists()
    v = ex.check(_wrong, record=False)
    assert v.status == WRONG and not progress_file.exists()


def test_the_lesson_checkers_honour_demo(progress_file, capsys):
    from course_lib.exercises import check_cross_attention
    with demo():
        check_cross_attention(lambda *a: a[0])
    assert "cross_attention" in capsys.readouterr().out and not progress_file.exists()
    check_cross_attention(lambda *a: a[0])           # outside the block: recorded again
    assert json.loads(progress_file.read_text(encoding="utf-8"))["cross_attention"]["attempts"] == 1


def test_demo_is_restored_after_an_error(progress_file):
    with pytest.raises(ZeroDivisionError):
        with demo():
            1 / 0
    framework.REGISTRY["center_rows"].check(_wrong)
    assert progress_file.exists()


# ---------------------------------------------------------------- crashes name their inputs

def test_a_crash_names_the_inputs_the_checker_used():
    """Issue 44 §3: the smallest input that crashes, written out, with the learner's line."""
    def layer_norm(x, gamma, beta, eps):
        return x.mean(dim=5)
    v = framework.REGISTRY["layer_norm"].verdict(layer_norm)
    assert v.status == CRASHED
    assert "fails on a small input (x = [[1, 3]], gamma = [1, 1], beta = [0, 0], eps = 0.01)" in v.message
    assert "raised IndexError" in v.message and "in layer_norm — `return x.mean(dim=5)`" in v.message


def test_a_crash_on_the_check_s_inputs_only_names_those_inputs():
    """Code that runs on every small input and crashes on the check's: the check's input it is."""
    def layer_norm(x, gamma, beta, eps):
        if x.dim() > 2:
            raise ValueError("my code takes a matrix")
        return torch.nn.functional.layer_norm(x, x.shape[-1:], gamma, beta, eps)
    v = framework.REGISTRY["layer_norm"].verdict(layer_norm)
    assert v.status == CRASHED
    assert "the checker called it with x (2, 4, 6), gamma (6,), beta (6,), eps = 0.01" in v.message


def test_a_class_s_small_crash_names_its_constructor_sizes():
    ex = framework.REGISTRY["self_attention"]
    learner = type("Learner", (ex.reference,), {"forward": lambda self, x: x.no_such()})
    v = ex.verdict(learner)
    assert v.status == CRASHED and "fails on a small input (x (1, 2, 2)" in v.message, v.message
    assert "your class(d_model=2, d_k=2, d_v=2)" in v.message, v.message


def test_an_odd_model_size_is_pointed_out():
    """On the check's input (d_model = 9) and on the smallest that crashes (d_model = 3)."""
    def sinusoidal_table(length, d_model, base):
        return torch.zeros(length, d_model // 2, 2).view(length, d_model)   # fails when d_model is odd
    v = framework.REGISTRY["sinusoidal_table"].verdict(sinusoidal_table)
    assert v.status == CRASHED and "d_model = 3, an odd size" in v.message, v.message
    assert framework.describe_inputs(["length", "d_model"], (4, 9)) == "length = 4, d_model = 9, an odd size"


def test_a_crash_in_a_module_names_the_sizes():
    ex = framework.REGISTRY["decoder_layer"]
    learner = type("Learner", (ex.reference,), {"forward": lambda self, x, *a: x.no_such()})
    v = ex.verdict(learner)
    assert v.status == CRASHED
    assert "x (2, 4, 8) (batch, n_tgt, d_model), memory (2, 5, 8)" in v.message
    assert "d_model = 8, h = 2" in v.message


def test_list_and_model_inputs_are_described():
    assert framework.describe_inputs(["seqs", "pad_id", "model"], ([[1, 2], [3]], 0, nn.Linear(2, 2))) \
        == "seqs: 2 lists of lengths 2, 1, pad_id = 0, model: Linear"
    assert framework.describe_inputs([], (torch.zeros(3),)) == "argument 1 (3,)"


# ---------------------------------------------------------------- slips recognised by their crash

class _SwappedCross(nn.Module):
    """A learner's decoder block with cross_attn(memory, x): written here, not planted."""

    def __init__(self, d_model, h, d_ff):
        super().__init__()
        self.self_attn = MultiHeadAttention(d_model, h)
        self.cross_attn = MultiHeadAttention(d_model, h)
        self.ffn = FeedForward(d_model, d_ff)
        self.norm1, self.norm2, self.norm3 = LayerNorm(d_model), LayerNorm(d_model), LayerNorm(d_model)

    def forward(self, x, memory, self_mask, cross_mask):
        x = self.norm1(x + self.self_attn(x, mask=self_mask))
        x = self.norm2(x + self.cross_attn(memory, x, mask=cross_mask))
        return self.norm3(x + self.ffn(x))


def test_swapped_cross_attention_gets_its_hint_not_a_broadcast_error():
    from course_lib.exercises.lesson07 import SWAPPED_HINT
    v = framework.REGISTRY["decoder_layer"].verdict(_SwappedCross)
    assert v.status == WRONG and v.message == SWAPPED_HINT


def test_an_unrelated_crash_is_still_reported_as_a_crash():
    class SelfMaskInCross(_SwappedCross):
        def forward(self, x, memory, self_mask, cross_mask):
            x = self.norm1(x + self.self_attn(x, mask=self_mask))
            return self.norm2(x + self.cross_attn(x, memory, mask=self_mask))
    v = framework.REGISTRY["decoder_layer"].verdict(SelfMaskInCross)
    assert v.status == CRASHED and "the checker called it with" in v.message


def test_greedy_that_breaks_at_eos_is_told_to_run_max_len_steps():
    from course_lib.exercises.lesson08 import EARLY_STOP_HINT

    def greedy_decode(model, src, bos_id, eos_id, max_len):
        src_mask = model.source_mask(src)
        memory = model.encode(src, src_mask)
        ys = torch.full((src.shape[0], 1), bos_id, dtype=torch.long)
        for _ in range(max_len):
            nxt = model.decode(ys, memory, src_mask)[:, -1].argmax(-1)
            ys = torch.cat([ys, nxt[:, None]], dim=1)
            if (nxt == eos_id).all():          # "stop when every sentence is finished"
                break
        return ys
    v = framework.REGISTRY["greedy_decode"].verdict(greedy_decode)
    assert v.status == WRONG and v.message == EARLY_STOP_HINT


def test_a_wrong_shape_no_mistake_explains_keeps_the_shape_message():
    ref = framework.REGISTRY["greedy_decode"].reference
    v = framework.REGISTRY["greedy_decode"].verdict(lambda *a: ref(*a)[:, :-1])
    assert v.status == WRONG and "has shape" in v.message


def test_the_notebook_solutions_still_get_the_same_verdict():
    for name in ("layer_norm", "decoder_layer", "greedy_decode", "next_token_losses", "induction_score"):
        ex = framework.REGISTRY[name]
        assert ex.verdict(ex.reference).message == "correct — matches the reference on 3 random inputs."
        assert ex.verdict(ex.reference).status == OK
