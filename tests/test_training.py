"""The general training loop: it learns, records what happened, and checks its inputs."""
import math

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from course_lib.nn.models import DecoderOnlyLM
from course_lib.nn.training import History, estimate_loss, lm_loss, train, warmup_cosine_schedule


def repeating_batches(period=5, vocab=7, n=12, batch=8):
    """A sequence that repeats with a fixed period: perfectly predictable after one period."""
    seq = torch.arange(200) % period % vocab
    gen = torch.Generator().manual_seed(0)

    def get(_step):
        starts = torch.randint(0, 200 - n - 1, (batch,), generator=gen)
        idx = starts[:, None] + torch.arange(n)
        return seq[idx], seq[idx + 1]
    return get


def tiny_lm(vocab=7, seed=0):
    torch.manual_seed(seed)
    return DecoderOnlyLM(vocab, d_model=32, h=2, d_ff=64, n_layers=1, max_len=16)


def test_lm_loss_is_mean_cross_entropy_over_positions():
    lm = tiny_lm()
    x, y = repeating_batches()(0)
    logits = lm(x)
    manual = -torch.log_softmax(logits, -1).gather(-1, y[..., None]).mean()
    assert torch.allclose(lm_loss(lm, (x, y)), manual, atol=1e-6)


def test_training_learns_a_predictable_sequence_and_records_history():
    lm, get = tiny_lm(), repeating_batches()
    opt = torch.optim.AdamW(lm.parameters(), lr=3e-3)
    before = estimate_loss(lm, get, 3)
    h = train(lm, get, opt, 60, eval_batch=get, eval_every=25, eval_batches=2, progress=False)
    assert h.steps == list(range(1, 61)) and len(h.train_loss) == 60
    assert h.eval_steps == [25, 50, 60]            # every 25 steps and after the last one
    assert h.tokens == 60 * 8 * 12 and h.seconds > 0
    assert h.eval_loss[-1] < 0.5 * before
    assert lm.training                              # evaluation restored the mode


def test_a_custom_loss_trains_any_model():
    torch.manual_seed(0)
    net, w = nn.Linear(3, 1), torch.tensor([[1.0, -2.0, 0.5]])

    def get(_step):
        x = torch.randn(32, 3)
        return x, x @ w.T

    mse = lambda model, batch: F.mse_loss(model(batch[0]), batch[1])
    h = train(net, get, torch.optim.SGD(net.parameters(), lr=0.1), 200, loss_fn=mse, progress=False)
    assert h.train_loss[-1] < 1e-3
    assert torch.allclose(net.weight, w, atol=1e-2)


def test_progress_bar_is_shown_and_closed(capsys):
    lm = tiny_lm()
    train(lm, repeating_batches(), torch.optim.SGD(lm.parameters(), lr=0.01), 3, progress=True)
    assert "3/3" in capsys.readouterr().err


class RecordingSGD(torch.optim.SGD):
    """SGD that records the learning rate and the gradient norm at every step."""

    def __init__(self, params, lr):
        self.params_list = list(params)
        super().__init__(self.params_list, lr=lr)
        self.lrs, self.norms = [], []

    def step(self, closure=None):
        self.lrs.append(self.param_groups[0]["lr"])
        grads = [p.grad for p in self.params_list if p.grad is not None]
        self.norms.append(float(torch.sqrt(sum(g.pow(2).sum() for g in grads))))
        return super().step(closure)


def test_scheduler_and_clipping_are_applied():
    lm = tiny_lm()
    opt = RecordingSGD(lm.parameters(), lr=1.0)
    sched = warmup_cosine_schedule(opt, warmup_steps=2, total_steps=4, min_ratio=0.1)
    big_loss = lambda model, batch: 100 * lm_loss(model, batch)
    train(lm, repeating_batches(), opt, 4, loss_fn=big_loss, scheduler=sched, clip_grad_norm=0.5, progress=False)
    assert opt.lrs == pytest.approx([0.5, 1.0, 1.0, 0.55])
    assert max(opt.norms) <= 0.5 + 1e-4 and min(opt.norms) > 0.4


def test_warmup_cosine_shape():
    opt = torch.optim.SGD([nn.Parameter(torch.zeros(1))], lr=1.0)
    sched = warmup_cosine_schedule(opt, warmup_steps=10, total_steps=110, min_ratio=0.1)
    lrs = []
    for _ in range(130):
        lrs.append(opt.param_groups[0]["lr"])
        opt.step()
        sched.step()
    assert lrs[0] == pytest.approx(0.1) and lrs[9] == pytest.approx(1.0)
    assert lrs[60] == pytest.approx(0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * 0.5)))
    assert lrs[110] == pytest.approx(0.1) and lrs[129] == pytest.approx(0.1)
    assert all(a >= b for a, b in zip(lrs[9:], lrs[10:]))


def test_a_diverging_loss_stops_with_a_clear_error():
    lm = tiny_lm()
    nan_loss = lambda model, batch: lm_loss(model, batch) * float("nan")
    with pytest.raises(FloatingPointError, match="loss became nan at step 1"):
        train(lm, repeating_batches(), torch.optim.SGD(lm.parameters(), lr=0.1), 5, loss_fn=nan_loss,
              progress=False)


@pytest.mark.parametrize("kwargs, err, message", [
    (dict(model="net"), TypeError, "model must be an nn.Module"),
    (dict(optimizer="adam"), TypeError, "optimizer must be"),
    (dict(steps=-1), ValueError, "steps"),
    (dict(eval_every=10), ValueError, "eval_every needs eval_batch"),
    (dict(eval_every=0, eval_batch=lambda i: None), ValueError, "eval_every"),
])
def test_arguments_are_checked(kwargs, err, message):
    lm = tiny_lm()
    args = dict(model=lm, get_batch=repeating_batches(), optimizer=torch.optim.SGD(lm.parameters(), lr=0.1),
                steps=2, progress=False)
    args.update(kwargs)
    with pytest.raises(err, match=message):
        train(**args)


def test_history_smoothing_and_extending():
    h = History(steps=[1, 2, 3, 4], train_loss=[4.0, 2.0, 0.0, 2.0], eval_steps=[4], eval_loss=[1.0],
                seconds=1.0, tokens=10)
    assert h.smoothed(2) == [4.0, 3.0, 1.0, 1.0]
    h.extend(History(steps=[1, 2], train_loss=[1.0, 1.0], eval_steps=[2], eval_loss=[0.5], seconds=0.5, tokens=5))
    assert h.steps == [1, 2, 3, 4, 5, 6] and h.eval_steps == [4, 6]
    assert h.tokens == 15 and h.seconds == 1.5
    with pytest.raises(ValueError, match="window"):
        h.smoothed(0)
