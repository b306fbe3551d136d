"""seed_everything, pick_device, set_threads."""

import random

import torch

from course_lib.utils import pick_device, seed_everything, set_threads


def test_seed_everything_repeats_the_numbers():
    seed_everything(7)
    first = (random.random(), torch.rand(3))
    seed_everything(7)
    second = (random.random(), torch.rand(3))
    assert first[0] == second[0] and torch.equal(first[1], second[1])


def test_pick_device_is_usable():
    device = pick_device()
    assert isinstance(device, torch.device)
    assert torch.ones(2, device=device).sum().item() == 2


def test_set_threads(monkeypatch):
    before = torch.get_num_threads()
    try:
        assert set_threads(1) == 1 and torch.get_num_threads() == 1
        monkeypatch.setenv("COURSE_THREADS", "2")
        assert set_threads() == 2
        monkeypatch.delenv("COURSE_THREADS")
        assert set_threads() >= 1
    finally:
        torch.set_num_threads(before)
