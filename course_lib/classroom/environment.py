"""What lesson 00 checks: versions, device and threads."""
from __future__ import annotations

import platform
import sys
from importlib import metadata

PACKAGES = ("torch", "numpy", "matplotlib", "ipywidgets", "jupyterlab", "bertviz", "course_lib")
MIN_PYTHON = (3, 10)


def _version(pkg: str) -> str:
    try:
        return metadata.version(pkg)
    except metadata.PackageNotFoundError:
        return "not installed"


def environment_report() -> dict:
    """A dict with the Python and package versions, the device and torch's thread count."""
    import torch

    if torch.cuda.is_available():
        device = f"cuda ({torch.cuda.get_device_name(0)})"
    elif getattr(torch.backends, "mps", None) and torch.backends.mps.is_available():
        device = "mps (Apple GPU)"
    else:
        device = "cpu"
    info = {"python": platform.python_version()}
    info.update({pkg: _version(pkg) for pkg in PACKAGES})
    info["device"] = device
    info["torch threads"] = torch.get_num_threads()
    return info


def check_environment() -> bool:
    """Print the report and say whether the course can run here."""
    info = environment_report()
    width = max(map(len, info))
    for key, value in info.items():
        print(f"{key:>{width}} : {value}")
    problems = [f"Python {MIN_PYTHON[0]}.{MIN_PYTHON[1]}+ needed"] if sys.version_info < MIN_PYTHON else []
    problems += [f"{pkg} is missing" for pkg in PACKAGES if info[pkg] == "not installed"]
    if problems:
        print("Problems: " + "; ".join(problems) + ". Run `make lab` from the course folder.")
        return False
    print("All set: everything the course needs is installed.")
    return True
