"""Reproducibility, device and thread settings used at the top of every lesson."""

import os
import random
import sys

import torch

__all__ = ["seed_everything", "pick_device", "set_threads", "equal_up_to", "peak_memory_mb",
           "error_in_one_line"]


def seed_everything(seed=0):
    """Seed Python's `random`, NumPy (if installed) and torch (CPU and every GPU).

    Same seed, same machine, same library versions -> same numbers. Returns the seed.
    """
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise TypeError(f"seed must be an int, got {type(seed).__name__}")
    random.seed(seed)
    try:
        import numpy as np
    except ImportError:  # NumPy is optional for the core
        pass
    else:
        np.random.seed(seed % 2**32)
    torch.manual_seed(seed)  # also seeds CUDA and MPS generators
    return seed


def pick_device():
    """The best available device: CUDA GPU, then Apple MPS, then CPU.

    Every lesson also runs on CPU; a GPU only makes the training cells faster.
    """
    if torch.cuda.is_available():
        return torch.device("cuda")
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available():
        return torch.device("mps")
    return torch.device("cpu")


def set_threads(n=None):
    """Set how many CPU threads torch uses for one operation; returns the number set.

    The course's models are small: a (64 x 128) @ (128 x 128) matmul finishes in
    microseconds, so splitting it over threads buys little and the threads' hand-offs
    cost a lot when another program holds a core: on a busy 2-core machine small
    models can run several times faster on 1 thread than on 2. Hence:
      n given           -> use n;
      n None            -> the COURSE_THREADS environment variable, if set;
      otherwise         -> 1 thread on machines with ≤ 2 cores, else half the cores (at
                           most 4), leaving room for the notebook server and browser.
    """
    if n is None:
        env = os.environ.get("COURSE_THREADS")
        if env is not None:
            if not env.strip().isdigit() or int(env) < 1:
                raise ValueError(f"COURSE_THREADS must be a positive integer, got {env!r}")
            n = int(env)
        else:
            cores = os.cpu_count() or 1
            n = 1 if cores <= 2 else min(4, cores // 2)
    if isinstance(n, bool) or not isinstance(n, int):
        raise TypeError(f"n must be an int or None, got {type(n).__name__}")
    if n < 1:
        raise ValueError(f"n must be >= 1, got n={n}")
    torch.set_num_threads(n)
    return n


def equal_up_to(a, b, tol=1e-5, what="float32 rounding"):
    """A printable fact: are `a` and `b` equal up to `tol`? Same text on every machine.

    The raw max |a - b| of two float computations is rounding noise: its digits change
    with the CPU, the BLAS library and the thread count, so a lesson never prints it.
    This returns e.g. "equal up to float32 rounding (max |Δ| < 1e-05): True".
    a, b: tensors (or anything torch.as_tensor takes) of the same shape.
    """
    a, b = torch.as_tensor(a), torch.as_tensor(b)
    if a.shape != b.shape:
        raise ValueError(f"equal_up_to compares tensors of one shape, got {tuple(a.shape)} "
                         f"and {tuple(b.shape)}")
    if not tol > 0:
        raise ValueError(f"tol must be > 0, got {tol}")
    diff = (a.double() - b.double()).abs().max().item() if a.numel() else 0.0
    return f"equal up to {what} (max |Δ| < {tol:.0e}): {diff < tol}"


def peak_memory_mb():
    """The most memory this process has held so far (peak resident set), in MB.

    Linux and macOS report it through `resource` (KiB on Linux, bytes on macOS);
    Windows has no `resource` module, and reports the peak working set through psutil.
    """
    try:
        import resource
    except ImportError:                     # Windows
        import psutil
        return psutil.Process().memory_info().peak_wset / 1e6
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / 1e6 if sys.platform == "darwin" else peak * 1024 / 1e6


class error_in_one_line:  # noqa: N801  (used as `with error_in_one_line():`, like a function)
    """An error raised on purpose in this block is shown as its last line only.

    A lesson that demonstrates an error (a key that is not there, a table too short) wants
    the learner to read the error's one-line message, not thirty lines of traceback through
    torch. In IPython (JupyterLab, nbclient) this sets the traceback mode to "Minimal" (what
    `%xmode Minimal` does) for the rest of this one cell; once the cell has run, the mode is
    restored, and `%tb` in a new cell prints the whole traceback. The error itself still
    propagates: the cell fails, as nbval's raises-exception tag expects. Outside IPython, or
    when the block raises nothing, it changes nothing.
    """

    def __enter__(self):
        try:
            from IPython import get_ipython
        except ImportError:
            get_ipython = lambda: None  # noqa: E731
        self._shell = get_ipython()
        if self._shell is not None and hasattr(self._shell, "InteractiveTB"):
            self._before = self._shell.InteractiveTB.mode
            self._shell.InteractiveTB.set_mode(mode="Minimal")
        else:
            self._shell = None
        return self

    def _restore(self, *_):
        self._shell.InteractiveTB.set_mode(mode=self._before)
        if self._restore in self._shell.events.callbacks["post_run_cell"]:
            self._shell.events.unregister("post_run_cell", self._restore)

    def __exit__(self, kind, error, tb):
        if self._shell is not None:
            if kind is None:
                self._restore()
            else:   # IPython shows the cell's error after this block: restore the mode after that
                self._shell.events.register("post_run_cell", self._restore)
        return False    # never swallow the error
