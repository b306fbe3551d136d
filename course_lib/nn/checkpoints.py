"""Save a training run and pick it up again later (lesson 08).

A checkpoint is more than the model's weights. To *continue* training as if nothing
happened you also need the optimizer's state (Adam's running moments), the learning-
rate schedule's position, the step count and the loss history so far — otherwise the
resumed run restarts its warm-up, forgets its moments and draws a new loss curve.

Everything is stored as tensors, numbers, strings, lists and dicts, so loading uses
`torch.load(..., weights_only=True)`: it refuses to unpickle arbitrary objects, which
means a checkpoint file from someone else cannot run code on your machine.
"""

from pathlib import Path

import torch

__all__ = ["save_checkpoint", "load_checkpoint", "read_config"]

FORMAT = "course_lib.checkpoint/1"


def save_checkpoint(path, model, optimizer=None, scheduler=None, step=0, history=None, config=None,
                    extra=None):
    """Write model (+ optimizer, scheduler) state, the step, the history and a config dict.

    history: dict of lists (e.g. {"loss": [...]}); config: dict of plain values;
    extra: any other plain data (e.g. a data sampler's random state).
    Creates parent folders. Returns the Path written.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(step, bool) or not isinstance(step, int) or step < 0:
        raise ValueError(f"step must be an int >= 0, got {step!r}")
    payload = {
        "format": FORMAT,
        "model": model.state_dict(),
        "optimizer": None if optimizer is None else optimizer.state_dict(),
        "scheduler": None if scheduler is None else scheduler.state_dict(),
        "step": step,
        "history": {} if history is None else {k: list(v) for k, v in history.items()},
        "config": {} if config is None else dict(config),
        "extra": {} if extra is None else extra,
    }
    tmp = path.with_name(path.name + ".tmp")
    torch.save(payload, tmp)
    tmp.replace(path)  # never leave a half-written checkpoint behind
    return path


def _read(path):
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"no checkpoint at {path}")
    if path.is_dir():
        raise IsADirectoryError(f"{path} is a folder; give the checkpoint file inside it")
    try:
        payload = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as e:  # truncated zip, random bytes, a pickle with code in it ...
        reason = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise ValueError(f"{path} could not be read as a checkpoint (corrupt, truncated, or not "
                         f"written by save_checkpoint): {type(e).__name__}: {reason[:120]}. "
                         "Save it again with save_checkpoint.") from None
    if not isinstance(payload, dict) or payload.get("format") != FORMAT:
        raise ValueError(f"{path} is not a checkpoint written by course_lib.nn.checkpoints.save_checkpoint")
    return payload


def read_config(path):
    """The config dict stored in a checkpoint (to rebuild the model before loading it)."""
    return _read(path)["config"]


def _check_fits(path, model, saved):
    """One clear line instead of load_state_dict's dump when the model is built differently."""
    ours = model.state_dict()
    missing = [k for k in ours if k not in saved]
    unexpected = [k for k in saved if k not in ours]
    if missing or unexpected:
        raise ValueError(
            f"{path} holds a different model: {len(missing)} of this model's tensors are missing "
            f"(e.g. {missing[:1]}) and {len(unexpected)} are extra (e.g. {unexpected[:1]}); build the "
            "model from the checkpoint's config: read_config(path)")
    for name, tensor in ours.items():
        if tuple(saved[name].shape) != tuple(tensor.shape):
            raise ValueError(
                f"{path} was saved from a model of another size: {name} is "
                f"{tuple(saved[name].shape)} there but {tuple(tensor.shape)} here; build the model "
                "from the checkpoint's config: read_config(path)")


def load_checkpoint(path, model, optimizer=None, scheduler=None):
    """Load a checkpoint written by save_checkpoint into model (+ optimizer, scheduler).

    Uses torch.load(weights_only=True). Returns {"step", "history", "config", "extra"}.
    Raises FileNotFoundError for a missing file and ValueError if the file is not a
    course checkpoint or lacks the optimizer/scheduler state you asked to restore.
    """
    payload = _read(path)
    _check_fits(path, model, payload["model"])
    model.load_state_dict(payload["model"])
    for name, obj in (("optimizer", optimizer), ("scheduler", scheduler)):
        if obj is None:
            continue
        if payload[name] is None:
            raise ValueError(f"{path} has no {name} state; it was saved without one")
        obj.load_state_dict(payload[name])
    return {k: payload[k] for k in ("step", "history", "config", "extra")}
