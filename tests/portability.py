"""Another machine, simulated on this one.

The committed outputs of the lessons come from one CPU. Another CPU, BLAS path or
thread count rounds floats differently, so the suite also runs the lessons under
environment variables that change those bits here:

- ATEN_CPU_CAPABILITY=default: PyTorch's scalar CPU kernels instead of AVX2/AVX-512
  (changes the bits of softmax, layer_norm, reductions, matmul epilogues);
- MKL_CBWR=COMPATIBLE: MKL's conditional-numerical-reproducibility mode, another
  matmul code path (changes matmul bits);
- COURSE_THREADS=2: the lessons' set_threads() uses two threads instead of one
  (reductions split differently);
- LC_ALL=C LANG=C PYTHONUTF8=0: a text encoding that is not UTF-8, as on Windows before
  Python 3.15 (a file read or written without naming its encoding breaks there).

`make test` runs nbval over every lesson once plainly and once under this
environment; the student versions always run under it.
"""
import os

# A system whose text encoding is not UTF-8 (Windows' cp1252 before Python 3.15), simulated
# with the C locale; PYTHONUTF8=0 stops Python from switching to UTF-8 by itself there.
NON_UTF8_ENV = {"LC_ALL": "C", "LANG": "C", "PYTHONUTF8": "0"}
OTHER_MACHINE_ENV = {"ATEN_CPU_CAPABILITY": "default", "MKL_CBWR": "COMPATIBLE", "COURSE_THREADS": "2",
                     **NON_UTF8_ENV}


def other_machine_env(base=None):
    """A copy of `base` (default: os.environ) with the simulated other machine's settings."""
    env = dict(os.environ if base is None else base)
    env.update(OTHER_MACHINE_ENV)
    return env
