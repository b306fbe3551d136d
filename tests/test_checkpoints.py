"""Checkpoints: save, load with weights_only=True, and resume exactly (lesson 08)."""

import pytest
import torch
from torch import nn

from course_lib.nn.checkpoints import load_checkpoint, read_config, save_checkpoint
from course_lib.data.translation import NumberTranslationData
from course_lib.experiments.translator import TrainState, TranslatorConfig, train_translator

TINY = dict(d_model=16, h=2, d_ff=32, n_enc=1, n_dec=1, batch_size=8, warmup=2, total_steps=10)


def _setup():
    torch.manual_seed(0)
    model = nn.Linear(3, 2)
    opt = torch.optim.AdamW(model.parameters(), lr=0.1)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 1 / (s + 1))
    model(torch.randn(4, 3)).sum().backward()
    opt.step()
    sched.step()
    return model, opt, sched


def test_round_trip(tmp_path):
    model, opt, sched = _setup()
    path = save_checkpoint(tmp_path / "sub" / "ck.pt", model, opt, sched, step=7, history={"loss": [3.0, 2.0]},
                           config={"d": 3}, extra={"note": "hi"})
    assert path.exists() and not path.with_name("ck.pt.tmp").exists()
    m2, o2, s2 = nn.Linear(3, 2), torch.optim.AdamW(nn.Linear(3, 2).parameters(), lr=0.1), None
    o2 = torch.optim.AdamW(m2.parameters(), lr=0.1)
    s2 = torch.optim.lr_scheduler.LambdaLR(o2, lambda s: 1 / (s + 1))
    info = load_checkpoint(path, m2, o2, s2)
    assert info == {"step": 7, "history": {"loss": [3.0, 2.0]}, "config": {"d": 3}, "extra": {"note": "hi"}}
    assert torch.equal(m2.weight, model.weight)
    assert torch.equal(o2.state_dict()["state"][0]["exp_avg"], opt.state_dict()["state"][0]["exp_avg"])
    assert s2.last_epoch == sched.last_epoch == 1
    assert read_config(path) == {"d": 3}


class Evil:
    def __reduce__(self):
        return (print, ("this ran while loading",))


def test_loading_refuses_arbitrary_objects(tmp_path, capsys):
    path = tmp_path / "evil.pt"
    torch.save({"format": "course_lib.checkpoint/1", "model": Evil()}, path)
    with pytest.raises(ValueError, match="could not be read as a checkpoint.*UnpicklingError"):
        load_checkpoint(path, nn.Linear(3, 2))
    assert "this ran while loading" not in capsys.readouterr().out


def test_clear_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="no checkpoint"):
        load_checkpoint(tmp_path / "nope.pt", nn.Linear(3, 2))
    torch.save({"weights": torch.zeros(2)}, tmp_path / "other.pt")
    with pytest.raises(ValueError, match="not a checkpoint"):
        load_checkpoint(tmp_path / "other.pt", nn.Linear(3, 2))
    model, _, _ = _setup()
    save_checkpoint(tmp_path / "bare.pt", model)
    with pytest.raises(ValueError, match="no optimizer state"):
        load_checkpoint(tmp_path / "bare.pt", model, torch.optim.SGD(model.parameters(), lr=0.1))
    with pytest.raises(ValueError, match="step must be"):
        save_checkpoint(tmp_path / "x.pt", model, step=-1)


def test_resuming_continues_exactly_where_it_stopped(tmp_path):
    """10 steps in one go == 6 steps, save, load into fresh objects, 4 more steps."""
    cfg = TranslatorConfig(**TINY)
    data = NumberTranslationData()
    straight = train_translator(TrainState.fresh(data, cfg), data, progress=False)

    data_a = NumberTranslationData()
    first = train_translator(TrainState.fresh(data_a, cfg), data_a, steps=6, progress=False)
    first.save(tmp_path / "half.pt", data_a)
    data_b = NumberTranslationData()  # a "new session": fresh data sampler, fresh model
    resumed = TrainState.load(tmp_path / "half.pt", data_b)
    assert resumed.step == 6 and len(resumed.history["loss"]) == 6
    assert resumed.optimizer.param_groups[0]["lr"] == first.optimizer.param_groups[0]["lr"]
    train_translator(resumed, data_b, progress=False)
    assert resumed.step == 10
    assert resumed.history["step"] == list(range(10))
    assert resumed.history["loss"] == straight.history["loss"]
    for a, b in zip(resumed.model.parameters(), straight.model.parameters()):
        assert torch.equal(a, b)


def test_corrupt_or_truncated_file_gives_one_line(tmp_path):
    good = save_checkpoint(tmp_path / "good.pt", nn.Linear(3, 2))
    truncated = tmp_path / "truncated.pt"
    truncated.write_bytes(good.read_bytes()[:200])
    garbage = tmp_path / "garbage.pt"
    garbage.write_bytes(b"this is not a checkpoint at all\n" * 10)
    for path in (truncated, garbage):
        with pytest.raises(ValueError, match="could not be read as a checkpoint") as info:
            load_checkpoint(path, nn.Linear(3, 2))
        assert "\n" not in str(info.value) and str(path) in str(info.value)
    with pytest.raises(IsADirectoryError, match="is a folder"):
        load_checkpoint(tmp_path, nn.Linear(3, 2))


def test_checkpoint_of_another_model_says_what_differs(tmp_path):
    path = save_checkpoint(tmp_path / "small.pt", nn.Linear(3, 2), config={"d": 3})
    with pytest.raises(ValueError, match=r"another size: weight is \(2, 3\) there but \(4, 3\) here.*read_config"):
        load_checkpoint(path, nn.Linear(3, 4))
    with pytest.raises(ValueError, match="holds a different model: 2 of this model's tensors are missing"):
        load_checkpoint(path, nn.Sequential(nn.Linear(3, 2)))
