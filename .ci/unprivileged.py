"""CI run as root: the README's test command again, as an ordinary account.

A learner or a maintainer without root gets the course from a fresh clone and runs
`python3 course.py test`; the tests that need root skip with their reason, everything
else must pass. Here: a throwaway account (removed after, whatever happens), a fresh
clone of this repository in a folder of its own, the system's `python3` first on PATH
(root's own Python may sit in a folder other accounts cannot open), the package index
settings passed on (PIP_*). Prints the time taken; exits with the tests' status.

The root pass before it has run every test. Here run the tests whose outcome can depend on
the account: the set-up (a venv from the system's Python, its lock, its temporary folder),
every file, folder and permission path, temporary folders, JupyterLab's and the kernels'
runtime files, the hub's root-only skips and its one-shared-user mode, one lesson through
nbval and in the browser. The rest is left to the root pass: LEFT_TO_ROOT names each test
with the reason its outcome cannot depend on the account. A test file named nowhere runs
here too (the safe side); tests/test_ci_selection.py checks that every name still exists.

    sudo python3 .ci/unprivileged.py [extra arguments for course.py test]
"""
from __future__ import annotations

import glob
import os
import pwd
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SBIN = "/usr/sbin:/sbin:/usr/bin:/bin"

# The one lesson run as the account, through nbval and in the browser: the only lesson that
# writes a file (its translator's checkpoint, in a temporary folder it removes).
LESSON = "08_training_a_translator"

# {reason: [pytest node-id prefixes, relative to the clone; a file's may be a glob]}
LEFT_TO_ROOT = {
    "computes in memory — attention, layers, models, training and decoding loops, the checkers' "
    "verdicts on planted mistakes — and opens no file, folder, process or permission of its own, "
    "so any account gets the same result": [
        "tests/test_attention.py", "tests/test_bad_input.py", "tests/test_core_utils.py",
        "tests/test_dates.py", "tests/test_decoding.py", "tests/test_decoding_encoder_decoder.py",
        "tests/test_exercises.py", "tests/test_extrapolation.py", "tests/test_families.py",
        "tests/test_induction.py", "tests/test_layers.py", "tests/test_lesson[0-9][0-9]_exercises.py",
        "tests/test_models.py", "tests/test_modern.py", "tests/test_positional.py",
        "tests/test_recall.py", "tests/test_rnn.py", "tests/test_rotary.py", "tests/test_stacks.py",
        "tests/test_toy_tasks.py", "tests/test_training.py", "tests/test_translation.py",
        "tests/test_translation_exercises.py", "tests/test_bench_char_gpt.py",
        "tests/test_checker_demo_and_crashes.py", "tests/test_hint_truth.py"],
    "draws figures and drives widgets in memory (matplotlib's Agg, ipywidgets without a front "
    "end) or reads the pixels of the saved ones: nothing an account changes": [
        "tests/test_viz_*.py", "tests/test_widgets_*.py", "tests/test_figure_descriptions.py",
        "tests/test_colour_words.py", "tests/test_figure_text.py", "tests/test_captions.py",
        "tests/test_speak.py"],
    "reads the repository's own files (lessons, sources, guide, requirements, the chart's "
    "schema) and checks their text: a fresh clone is its account's own, readable the same": [
        "tests/test_environment.py", "tests/test_instructor_guide.py", "tests/test_notebook_a11y.py",
        "tests/test_glossary.py", "tests/test_ci_selection.py",
        "tests/test_package_layout.py", "tests/test_portable_code.py", "tests/test_hub_kubernetes.py",
        "tests/test_math_words.py"],
    "reads the pretrained weights and the corpus from the environment the account's own set-up "
    "installed (tests/test_setup.py and the set-up itself run here): the same bytes, and then "
    "computes in memory": [
        "tests/test_pretrained.py", "tests/test_llama.py", "tests/test_shakespeare.py"],
    "executes lessons in kernels and compares what they compute, which no account changes; what "
    "a kernel needs of its account (runtime and temporary folders) is run here by lesson 08": [
        "tests/test_portable.py"],
    "the other lessons through nbval compute what they compute under root; lesson 08, the one "
    "that writes a file, runs here, and with it a kernel started by the account": [
        "notebooks/{lesson}.ipynb"],
    "the other lessons in the browser: the same server, Chromium and student-version folder as "
    "lesson 08's run here (and the learner's path: course.py lab, the workspace), only other "
    "cells": ["tests/test_browser.py::test_lesson_in_browser[{lesson}]"],
    "where a bertviz view or an explorer lies on a 1366x768 page, and where Tab goes from page "
    "load: layout and markup, no file or permission (JupyterLab and Chromium as the account: "
    "lesson 08's browser test, run here)": [
        "tests/test_browser.py::test_bertviz_views_fit_beside_the_file_browser",
        "tests/test_browser.py::test_explorers_fit_a_laptop_screen_beside_the_file_browser",
        "tests/test_keyboard_reach.py"],
    "what axe-core finds in a page does not depend on who built it; building the pages and "
    "opening them in Chromium as the account: tests/test_export_html.py, run here": [
        "tests/test_accessibility.py"],
    "offline bertviz HTML drawn in Chromium from a file: the views' markup, no account's path "
    "(saving and reloading them in JupyterLab runs here)": ["tests/test_bertviz_views.py"],
    "a benchmark's smoke test: lesson 00's explorer timed in the same server and browser that "
    "lesson 08's test runs here": ["tests/test_widget_latency_bench.py"],
    "a concept check in JupyterLab and in an exported page: its markup, keys and feedback, and its "
    "answer written to the progress file by the code the exercise checks use (tests/test_progress.py "
    "and lesson 08's browser test, with the same server, Chromium and workspace, run here)": [
        "tests/test_concept_browser.py"],
    "what Orca says of lesson 02 is the page's markup and the screen reader's rules, which no "
    "account changes (two tests of about 2 minutes each: its JupyterLab and Chromium as the "
    "account are lesson 08's browser test, run here)": [
        "tests/test_screen_reader.py", "tests/test_screen_reader_exercises.py"],
}


def lessons(root: Path = ROOT) -> list[str]:
    return sorted(p.stem for p in (root / "notebooks").glob("[0-9][0-9]_*.ipynb"))


def left_to_root(root: Path = ROOT) -> dict[str, str]:
    """{node-id prefix: reason} for every test left to the root pass, globs expanded and every
    lesson but LESSON filled in."""
    out = {}
    for reason, patterns in LEFT_TO_ROOT.items():
        for pattern in patterns:
            if "{lesson}" in pattern:
                names = [pattern.format(lesson=x) for x in lessons(root) if x != LESSON]
            elif "::" not in pattern and glob.has_magic(pattern):
                names = sorted(Path(f).relative_to(root).as_posix()
                               for f in glob.glob(str(root / pattern)))
            else:
                names = [pattern]
            out.update((name, reason) for name in names)
    return out


def selection(root: Path = ROOT) -> list[str]:
    """course.py test's arguments that leave those tests to the root pass."""
    return [arg for name in left_to_root(root) for arg in ("--deselect", name)]


def tool(name: str) -> str:
    found = shutil.which(name) or shutil.which(name, path=SBIN)
    if not found:
        sys.exit(f"unprivileged: {name} not found: install the system's account tools (passwd)")
    return found


def main() -> int:
    if os.geteuid() != 0:
        print("unprivileged: not root, so this CI run already is an ordinary account's")
        return 0
    name = f"course-ci-{secrets.token_hex(3)}"
    base = Path(tempfile.mkdtemp(prefix="course-ci-"))
    base.chmod(0o755)
    home = base / "home"
    subprocess.run([tool("useradd"), "--create-home", "--home-dir", str(home),
                    "--shell", "/bin/sh", name], check=True)
    try:
        entry = pwd.getpwnam(name)
        clone = home / "course"
        subprocess.run(["git", "clone", "--quiet", "--no-hardlinks", str(ROOT), str(clone)],
                       check=True)
        # Its temporary files (pytest's, torch's compile cache) go in a folder of its own,
        # removed with the account: nothing of it is left in the shared /tmp.
        (home / "tmp").mkdir(mode=0o700)
        subprocess.run(["chown", "-R", f"{entry.pw_uid}:{entry.pw_gid}", str(home)], check=True)
        env = {k: v for k, v in os.environ.items() if k.startswith("PIP_")}
        env.update(HOME=str(home), USER=name, LOGNAME=name, LANG="C.UTF-8", TMPDIR=str(home / "tmp"),
                   PATH="/usr/local/bin:/usr/bin:/bin", TERM=os.environ.get("TERM", "dumb"))
        left = left_to_root(clone)
        print(f"== as {name} (uid {entry.pw_uid}), a fresh clone in {clone}, "
              f"{shutil.which('python3', path=env['PATH'])}: python3 course.py test "
              f"{' '.join(sys.argv[1:])}, the tests whose outcome can depend on the account "
              f"({len(left)} left to the root pass, each with its reason in .ci/unprivileged.py)",
              flush=True)
        t0 = time.monotonic()
        status = subprocess.run(["python3", "course.py", "test", *selection(clone), *sys.argv[1:]], cwd=clone,
                                env=env, user=entry.pw_uid, group=entry.pw_gid,
                                extra_groups=[]).returncode
        print(f"== as {name}: exit {status} after {time.monotonic() - t0:.0f} s", flush=True)
        return status
    finally:
        uid = pwd.getpwnam(name).pw_uid
        for proc in Path("/proc").iterdir():
            try:
                if proc.name.isdigit() and proc.stat().st_uid == uid:
                    os.kill(int(proc.name), signal.SIGKILL)
            except OSError:
                pass
        time.sleep(0.5)
        subprocess.run([tool("userdel"), name], check=False)
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
