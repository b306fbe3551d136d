"""seed_everything, pick_device, set_threads, peak_memory_mb."""

import random

import pytest

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


def test_equal_up_to_prints_a_fact_not_the_noise():
    import torch
    from course_lib.utils import equal_up_to
    a = torch.ones(4)
    assert equal_up_to(a, a + 3e-7) == "equal up to float32 rounding (max |Δ| < 1e-05): True"
    assert equal_up_to(a, a + 1e-3).endswith(": False")
    assert equal_up_to(a, a + 1e-3, tol=1e-2, what="the fit's rounding") == \
        "equal up to the fit's rounding (max |Δ| < 1e-02): True"
    with pytest.raises(ValueError, match=r"one shape, got \(4,\) and \(3,\)"):
        equal_up_to(a, torch.ones(3))
    with pytest.raises(ValueError, match="tol must be > 0"):
        equal_up_to(a, a, tol=0)


def test_peak_memory_is_at_least_what_the_process_holds_now():
    import psutil

    from course_lib.utils import peak_memory_mb

    held = torch.ones(50_000_000, dtype=torch.uint8)        # 50 MB, touched
    now = psutil.Process().memory_info().rss / 1e6
    peak = peak_memory_mb()
    assert now * 0.98 <= peak < 100_000, (now, peak)
    del held


def test_peak_memory_without_resource_uses_psutil_peak_working_set(monkeypatch):
    """Windows has no `resource`: the psutil branch is taken (simulated here)."""
    import builtins
    from types import SimpleNamespace

    import psutil

    from course_lib.utils import peak_memory_mb

    real_import = builtins.__import__

    def no_resource(name, *args, **kwargs):
        if name == "resource":
            raise ImportError("No module named 'resource'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_resource)
    monkeypatch.setattr(psutil.Process, "memory_info",
                        lambda self: SimpleNamespace(rss=1, peak_wset=1_234_000_000))
    assert peak_memory_mb() == 1234.0
