#!/usr/bin/env python3
"""Issue 14: give course_lib a package layout whose folders say what they hold.

    python tools/layout_migration/apply_layout.py CHECKOUT [--dry-run]

On the checkout (a git working tree) it
  1. `git mv`s every flat module of course_lib/ into nn/, data/, experiments/ or classroom/
     (the MOVES table below), merges decoding.py + seq2seq_decoding.py into nn/decoding.py
     (templates/decoding.py: one calling convention), splits translation.py and progress.py
     by concern (SPLITS: top-level definitions moved with `ast`, so whatever the module holds
     when this runs is moved; an unknown or missing definition stops the script);
  2. rewrites every import and dotted reference to a moved module, by module name, in every
     tracked or new (not ignored) file: *.py anywhere (course_lib, tests, tools, benchmarks,
     classroom …), notebooks/*.ipynb (sources only, via nbformat; outputs and metadata are
     left as they are), and README / docs / Makefile text — `from .attention import`,
     `from ..x import` in subpackages, `from course_lib import attention`,
     `import course_lib.positional as positional`, "course_lib.training.tqdm" strings …;
     calls of the old encoder-decoder decoders are rewritten to the new convention;
  3. writes tests/test_package_layout.py and ports tests/test_seq2seq_decoding.py, and puts
     the "How the code is organised" section into README.md.

It is idempotent (a second run changes nothing) and fails loudly on a course_lib module it
does not know how to place: add the module to MOVES (or STAY) and run it again.
"""
from __future__ import annotations

import argparse
import ast
import hashlib
import io
import re
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
TEMPLATES = HERE / "templates"

# =========================================================================== the mapping table
# old module course_lib.<key>  ->  new module course_lib.<value>. Add a row for a new module.
MOVES = {
    # nn/: the transformer the course builds, how it is trained and decoded (the core)
    "attention": "nn.attention",
    "positional": "nn.positional",
    "rotary": "nn.rotary",
    "layers": "nn.layers",
    "models": "nn.models",
    "rnn": "nn.rnn",
    "decoding": "nn.decoding",            # merged with seq2seq_decoding (MERGES)
    "seq2seq_decoding": "nn.decoding",
    "training": "nn.training",
    "checkpoints": "nn.checkpoints",
    "torch_compat": "nn.torch_compat",
    "modern": "nn.modern",                # lesson 11: RMSNorm, SwiGLU, GQA, KV cache
    "llama": "nn.llama",                  # lesson 11: SmolLM2 in the course's pieces
    "generation": "nn.generation",        # lesson 11: KV-cached generation
    "pretrained": "nn.pretrained",        # lesson 09: MiniLM in the course's encoder
    # data/: corpora and tasks
    "shakespeare": "data.shakespeare",
    "dates": "data.dates",
    # experiments/: one lesson's measurements on small models
    "recall": "experiments.recall",               # 01
    "extrapolation": "experiments.extrapolation", # 03
    "toy_tasks": "experiments.toy_tasks",         # 04, 05
    "stacks": "experiments.stacks",               # 05
    "families": "experiments.families",           # 09
    "head_patterns": "experiments.head_patterns", # 09, 10
    "induction": "experiments.induction",         # 10
    # classroom/: the learner's setup and the course's plumbing
    "environment": "classroom.environment",
    "student": "classroom.student",
}

# Modules split by concern: each part lists the top-level names it receives (constants,
# functions, classes). `primary` is where a bare reference to the old module goes.
SPLITS = {
    "translation": {
        "primary": "data.translation",
        "parts": {
            "data.translation": [
                "MAX_NUMBER", "PAD", "BOS", "EOS", "SPECIALS", "_num2words", "_groups", "_check_number",
                "english", "german", "tokenize_english", "german_pieces", "tokenize_german", "Vocab",
                "pad_sequences", "shift_targets", "sample_numbers", "NumberTranslationData", "parse_source",
            ],
            "experiments.translator": [
                "warmup_schedule", "smoothed_targets", "label_smoothed_cross_entropy", "TranslatorConfig",
                "build_translator", "_optimizer", "_scheduler", "TrainState", "train_translator",
            ],
            "experiments.translator_eval": [
                "token_accuracy", "evaluate_exact_match", "TENS", "ERROR_KINDS", "error_kind", "translate",
                "attention_for_bertviz",
            ],
        },
        "docstrings": {
            "data.translation": None,  # the original docstring, its training/evaluation bullets replaced
            "experiments.translator": '''\
Training the lesson 08 translator: the recipe (lesson 08; the dates extension reuses it).

- `TranslatorConfig`: model size and training settings; `build_translator`: a fresh
  EncoderDecoder sized for the data's vocabularies.
- `TrainState`: everything a run needs to continue — model, AdamW, schedule, step, loss
  history — with `save` / `load` (course_lib.nn.checkpoints).
- `train_translator`: teacher forcing, label-smoothed cross-entropy (pads ignored), gradient
  clipping, AdamW, warm-up then cosine decay; the pieces the lesson shows one by one are
  `warmup_schedule`, `smoothed_targets` and `label_smoothed_cross_entropy`.

The data: `course_lib.data.translation` (numbers) or `course_lib.data.dates`; judging the
result: `course_lib.experiments.translator_eval`.
''',
            "experiments.translator_eval": '''\
Judging the lesson 08 translator: exact match, per-token accuracy, kinds of error (lesson 08).

- `evaluate_exact_match`: greedy (or beam) translation of held-out numbers, every piece right;
  `token_accuracy`: teacher-forced, per target position.
- `error_kind` / `ERROR_KINDS`: a wrong translation classified by its first wrong piece.
- `translate`: one input (a number or English words) with the decoder's cross-attention;
  `attention_for_bertviz`: every layer's attention for `course_lib.bertviz_views.show`.

Decoding is `course_lib.nn.decoding`; the data `course_lib.data.translation`.
''',
        },
        "docstring_bullets": (r"^- \*\*(training|evaluation)\*\*", (
            "- **training** and **evaluation**: `course_lib.experiments.translator` and\n"
            "  `course_lib.experiments.translator_eval`.")),
    },
    # Breaks the cycle exercises.framework -> progress -> exercises: the framework records a
    # verdict in `records` (which imports nothing of course_lib); `progress` lists the exercises.
    "progress": {
        "primary": "classroom.progress",
        "parts": {
            "classroom.records": ["SOLVED", "ATTEMPTED", "NOT_STARTED", "progress_file", "_load", "record"],
            "classroom.progress": ["progress_table", "show_progress"],
        },
        "docstrings": {
            "classroom.records": '''\
Where exercise verdicts are kept: one small JSON file on this machine.

Each check writes its latest verdict to `~/.transformers-course/progress.json` (or
$COURSE_PROGRESS_FILE). Nothing leaves the machine. A corrupt file is set aside, not trusted.
`course_lib.classroom.progress` turns the file into the table `show_progress()` prints; the two
are apart so that the checkers (which record) and the table (which lists the checkers) do not
import each other.
''',
            "classroom.progress": '''\
Every exercise and its state — solved, attempted, not started — as a table (`show_progress()`).

The verdicts come from the file `course_lib.classroom.records` keeps; the list of exercises
from the checkers' registry (`course_lib.exercises`).
''',
        },
    },
}

# Modules merged into one, written from a template. The hashes are the git blob ids of the
# versions the template was written from: if a source has changed since, the script stops
# (port the change into the template, then update the hash).
MERGES = {
    "nn.decoding": {
        "template": "decoding.py",
        "sources": {"decoding": "44e9cbf280b843816a8798b21922745b2f8798bc",
                    "seq2seq_decoding": "0f7e6c6b9aa549e14b4ca2b89864cd9cbb94ad56"},
    },
}

STAY = {"__init__", "_checks", "_discover", "utils", "bertviz_views"}   # top-level modules that stay
SUBPACKAGES = {"viz", "widgets", "exercises"}                           # subpackages that stay
NEW_PACKAGES = {
    "nn": None,  # written by nn_init()
    "data": "Corpora and tasks the lessons train on: Shakespeare (06), English→German number words (08),\n"
            "dates written many ways (08's extension).\n",
    "experiments": "One lesson's measurements on small models: the long-range recall task (01), positional\n"
                   "extrapolation (03), the bindings toy task (04, 05), deep stacks (05), the lesson 08\n"
                   "translator's recipe and evaluation, transformer families and head patterns (09),\n"
                   "induction heads (10). They build on course_lib.nn and course_lib.data; the core never\n"
                   "imports them.\n",
    "classroom": "The learner's setup and the course's plumbing: the environment check (00), the local record\n"
                 "of exercise verdicts and its table, the student versions of the notebooks.\n",
}
# Core modules whose `__all__` course_lib.nn re-exports (`from course_lib.nn import causal_mask`).
NN_REEXPORT = ["attention", "positional", "rotary", "layers", "models", "rnn", "modern", "decoding",
               "training"]

# Files the script writes: target -> (template, the file it replaces or None, that file's git blob id)
WRITES = {
    "tests/test_package_layout.py": ("test_package_layout.py", None, None),
    "tests/test_decoding_encoder_decoder.py": ("test_decoding_encoder_decoder.py", "tests/test_seq2seq_decoding.py",
                                               "b18e3b6b488ba9c705f1860e2f2d558195499068"),
}
INIT_HEAD_BLOB = "b8c0d7193393b90eadeb2b69545fd7840fe3279c"   # course_lib/__init__.py the template replaces

# Calls of the old encoder-decoder decoders (course_lib.seq2seq_decoding) and their parameters,
# rewritten to (model, <bos>, max_len, eos_id, ..., src=src).
OLD_SEQ2SEQ = {
    "greedy_decode": (["model", "src", "bos_id", "eos_id", "max_len", "pad_id"], ["pad_id"]),
    "beam_search": (["model", "src", "bos_id", "eos_id", "max_len", "beam_size", "length_penalty", "pad_id",
                     "return_all"], ["beam_size", "length_penalty", "pad_id", "return_all"]),
}
OLD_MAX_LEN_DEFAULT = "20"

TEXT_SUFFIXES = {".md", ".txt", ".cfg", ".toml", ".yml", ".yaml", ".ini", ".sh", ".rst"}
TEXT_NAMES = {"Makefile", "postBuild", "run"}
SKIP_DIRS = {".git", ".venv", "node_modules", "test-artifacts", "__pycache__"}

README_HEADING = "## How the code is organised"
README_BEFORE = "## Exercises and checks"


class LayoutError(SystemExit):
    def __init__(self, msg):
        super().__init__("apply_layout: " + msg)


# =========================================================================== names


def _check_tables():
    olds = set(MOVES) | set(SPLITS)
    for pkg in NEW_PACKAGES:
        if pkg in olds or pkg in STAY or pkg in SUBPACKAGES:
            raise LayoutError(f"new package {pkg!r} is also an old module name: rewriting would not be idempotent")
    for old, spec in SPLITS.items():
        seen = {}
        for part, names in spec["parts"].items():
            for n in names:
                if n in seen:
                    raise LayoutError(f"SPLITS[{old!r}]: {n} is in both {seen[n]} and {part}")
                seen[n] = part
    for new, spec in MERGES.items():
        for src in spec["sources"]:
            if MOVES.get(src) != new:
                raise LayoutError(f"MERGES[{new!r}]: MOVES[{src!r}] must be {new!r}")


def split_part(old, name, where=""):
    spec = SPLITS[old]
    if name is None:
        return spec["primary"]
    for part, names in spec["parts"].items():
        if name in names:
            return part
    raise LayoutError(f"{where}: course_lib.{old} is split and {name!r} is in none of its parts "
                      f"(SPLITS[{old!r}]['parts'])")


def map_module(absname, name=None, where=""):
    """New absolute name of an old module (a name in it picks a split's part); None if it stays."""
    parts = absname.split(".")
    if parts[0] != "course_lib" or len(parts) < 2:
        return None
    old, rest = parts[1], parts[2:]
    if old in MOVES:
        return ".".join(["course_lib", MOVES[old], *rest])
    if old in SPLITS:
        if rest:  # course_lib.translation.x.y: x is a name in the module
            return None
        return "course_lib." + split_part(old, name, where)
    return None


def is_old_module(absname):
    parts = absname.split(".")
    return len(parts) == 2 and parts[0] == "course_lib" and (parts[1] in MOVES or parts[1] in SPLITS)


DOTTED = re.compile(r"(?<![\w.])course_lib\.(\w+)((?:\.\w+)*)")
PATH = re.compile(r"(?<![\w/.])course_lib/(\w+)\.py\b")


def rewrite_references(text, where):
    """course_lib.<old>[.name…] and course_lib/<old>.py in any text (strings, comments, docs)."""

    def dotted(m):
        old, rest = m.group(1), m.group(2)
        if old in MOVES:
            return f"course_lib.{MOVES[old]}{rest}"
        if old in SPLITS:
            first = rest.split(".")[1] if rest else None
            try:
                part = split_part(old, first, where)
            except LayoutError:
                part = SPLITS[old]["primary"]
                NOTES.append(f"{where}: 'course_lib.{old}{rest}' — {first!r} is not a name of the split "
                             f"module; pointed at course_lib.{part}, check it")
            return f"course_lib.{part}{rest}"
        return m.group(0)

    def path(m):
        old = m.group(1)
        if old in MOVES:
            return "course_lib/" + MOVES[old].replace(".", "/") + ".py"
        if old in SPLITS:
            return "course_lib/" + SPLITS[old]["primary"].replace(".", "/") + ".py"
        return m.group(0)

    return PATH.sub(path, DOTTED.sub(dotted, text))


# =========================================================================== python source rewriting

NOTES: list[str] = []


class Source:
    """Edits by byte offsets (ast's col_offset counts UTF-8 bytes)."""

    def __init__(self, text):
        self.text = text
        self.data = text.encode("utf-8")
        self.starts = [0]
        for line in self.data.splitlines(keepends=True):
            self.starts.append(self.starts[-1] + len(line))
        self.edits = []

    def span(self, node):
        return (self.starts[node.lineno - 1] + node.col_offset, self.starts[node.end_lineno - 1] + node.end_col_offset)

    def segment(self, node):
        a, b = self.span(node)
        return self.data[a:b].decode("utf-8")

    def replace(self, a, b, new):
        self.edits.append((a, b, new))

    def result(self):
        out, last = self.data, None
        for a, b, new in sorted(self.edits, reverse=True):
            if last is not None and b > last:
                raise LayoutError(f"overlapping edits at byte {a}")
            out = out[:a] + new.encode("utf-8") + out[b:]
            last = a
        return out.decode("utf-8")


def resolve(level, module, package):
    if not level:
        return module
    parts = package.split(".")
    if level - 1 >= len(parts):
        raise LayoutError(f"relative import beyond the top in package {package}")
    base = parts[: len(parts) - level + 1]
    return ".".join(base + ([module] if module else []))


def relativize(target, package):
    """`from X import` text for absolute module `target`, seen from `package`."""
    p, t = package.split("."), target.split(".")
    common = 0
    while common < min(len(p), len(t)) and p[common] == t[common]:
        common += 1
    if common == 0:
        return target
    return "." * (len(p) - common + 1) + ".".join(t[common:])


def _alias(a):
    return a.name if a.asname is None else f"{a.name} as {a.asname}"


def _format_from(module, aliases, indent, width=100):
    line = f"from {module} import {', '.join(aliases)}"
    if len(indent) + len(line) <= width or len(aliases) == 1:
        return line
    head = f"from {module} import ("
    lines, cur = [], head
    for i, a in enumerate(aliases):
        piece = a + (", " if i < len(aliases) - 1 else ")")
        if len(indent) + len(cur) + len(piece.rstrip()) > width and cur != head:
            lines.append(cur.rstrip())
            cur = " " * len(head)
        cur += piece
    lines.append(cur)
    return ("\n" + indent).join(lines)


class Context:
    def __init__(self, where, old_package, new_package, notebook=False, nn_names=None):
        self.where = where
        self.old_package = old_package      # resolves the file's relative imports (its old place)
        self.new_package = new_package      # where the file is now: relative imports are written from here
        self.notebook = notebook            # shorten core imports to `from course_lib.nn import …`
        self.nn_names = nn_names or {}


def _mask_magics(text):
    """IPython lines (%magic, !shell) become comments of the same length, so ast offsets hold."""
    if text.lstrip().startswith("%%"):
        return None
    out = []
    for line in text.splitlines(keepends=True):
        stripped = line.lstrip()
        if stripped[:1] in ("%", "!"):
            i = len(line) - len(stripped)
            line = line[:i] + "#" + line[i + 1:]
        out.append(line)
    return "".join(out)


def seq2seq_bindings(tree, ctx):
    """Local names bound to the old encoder-decoder decoders: (functions, module aliases)."""
    funcs, modules = {}, set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            target = resolve(node.level, node.module, ctx.old_package)
            for a in node.names:
                if target == "course_lib.seq2seq_decoding" and a.name in OLD_SEQ2SEQ:
                    funcs[a.asname or a.name] = a.name
                if target == "course_lib" and a.name == "seq2seq_decoding":
                    modules.add(a.asname or a.name)
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name == "course_lib.seq2seq_decoding" and a.asname:
                    modules.add(a.asname)
    return funcs, modules


def _defined_names(tree):
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for a in node.names:
                out.add((a.asname or a.name).split(".")[0])
    return out


def rewrite_python(text, ctx, bindings=None):
    """Rewrite imports (at any depth), old decoder calls and dotted references. Returns new text."""
    masked = _mask_magics(text) if ctx.notebook else text
    if masked is None:
        return rewrite_references(text, ctx.where)
    try:
        tree = ast.parse(masked)
    except SyntaxError as e:
        if not ctx.notebook:
            raise LayoutError(f"{ctx.where}: cannot parse ({e})")
        NOTES.append(f"{ctx.where}: a cell does not parse as Python ({e.msg}); only dotted references rewritten")
        return rewrite_references(text, ctx.where)
    src = Source(masked)
    funcs, modules = bindings if bindings is not None else seq2seq_bindings(tree, ctx)

    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            _rewrite_import_from(node, src, ctx)
        elif isinstance(node, ast.Import):
            _rewrite_import(node, src, ctx)
    if funcs or modules:
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                _rewrite_seq2seq_call(node, src, ctx, funcs, modules)
    out = src.result()
    if ctx.notebook and out != masked:  # put the magics back: only import lines changed
        out = _unmask(text, masked, out)
    elif ctx.notebook:
        out = text
    return rewrite_references(out, ctx.where)


def _unmask(original, masked, rewritten):
    orig_lines = original.splitlines(keepends=True)
    magic = {ml: ol for ol, ml in zip(orig_lines, masked.splitlines(keepends=True)) if ol != ml}
    return "".join(magic.get(line, line) for line in rewritten.splitlines(keepends=True))


def _rewrite_import_from(node, src, ctx):
    target = resolve(node.level, node.module, ctx.old_package)
    if target is None or not (target == "course_lib" or target.startswith("course_lib.")):
        return
    groups = {}   # new module -> aliases (text), in order
    changed = bool(node.level) and ctx.old_package != ctx.new_package   # moved file: re-relativize
    for a in node.names:
        sub = f"{target}.{a.name}"
        if a.name != "*" and is_old_module(sub):          # from course_lib import attention
            new = map_module(sub, where=ctx.where)
            parent, last = new.rsplit(".", 1)
            local = a.asname or a.name
            groups.setdefault(parent, []).append(last if last == local else f"{last} as {local}")
            changed = True
        elif is_old_module(target):                         # from course_lib.attention import x
            if a.name == "*" and target.split(".")[1] in SPLITS:
                raise LayoutError(f"{ctx.where}:{node.lineno}: `from {target} import *` of a split module")
            new = map_module(target, None if a.name == "*" else a.name, where=f"{ctx.where}:{node.lineno}")
            groups.setdefault(new, []).append(_alias(a))
            changed = True
        else:
            groups.setdefault(target, []).append(_alias(a))
    if not changed:
        return
    indent = " " * node.col_offset
    lines = []
    for module, aliases in groups.items():
        if node.level:
            text_module = relativize(module, ctx.new_package)
        elif ctx.notebook and _short_nn(module, aliases, ctx):
            text_module = "course_lib.nn"
        else:
            text_module = module
        lines.append((text_module, aliases))
    a, b = src.span(node)
    seg = src.segment(node)
    m = re.match(r"from\s+([.\w]+)\s+import\b", seg)
    if len(lines) == 1 and [_alias(x) for x in node.names] == lines[0][1] and m:
        src.replace(a + len(seg[: m.start(1)].encode()), a + len(seg[: m.end(1)].encode()), lines[0][0])
    else:
        src.replace(a, b, ("\n" + indent).join(_format_from(mod, al, indent) for mod, al in lines))


def _short_nn(module, aliases, ctx):
    parts = module.split(".")
    if len(parts) != 3 or parts[:2] != ["course_lib", "nn"] or parts[2] not in ctx.nn_names:
        return False
    names = [x.split(" as ")[0] for x in aliases]
    return "*" not in names and all(n in ctx.nn_names[parts[2]] for n in names)


def _rewrite_import(node, src, ctx):
    new_aliases, changed = [], False
    for a in node.names:
        first2 = ".".join(a.name.split(".")[:2])
        if is_old_module(first2):
            if first2.split(".")[1] in SPLITS:
                raise LayoutError(f"{ctx.where}:{node.lineno}: `import {a.name}` of a split module: "
                                  "import the names from their new modules instead")
            rest = a.name[len(first2):]
            new_aliases.append(_alias(ast.alias(name=map_module(first2) + rest, asname=a.asname)))
            changed = True
        else:
            new_aliases.append(_alias(a))
    if changed:
        a, b = src.span(node)
        src.replace(a, b, "import " + ", ".join(new_aliases))


def _rewrite_seq2seq_call(node, src, ctx, funcs, modules):
    f = node.func
    if isinstance(f, ast.Name) and f.id in funcs:
        old = funcs[f.id]
    elif isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id in modules \
            and f.attr in OLD_SEQ2SEQ:
        old = f.attr
    else:
        return
    where = f"{ctx.where}:{node.lineno}"
    params, keywords_after = OLD_SEQ2SEQ[old]
    if any(isinstance(x, ast.Starred) for x in node.args) or any(k.arg is None for k in node.keywords):
        raise LayoutError(f"{where}: a call of the old {old} with *args/**kwargs: rewrite it by hand to "
                          f"{old}(model, bos_id, max_len, eos_id, ..., src=src)")
    bound = {}
    for p, arg in zip(params, node.args):
        bound[p] = src.segment(arg)
    for k in node.keywords:
        bound[k.arg] = src.segment(k.value)
    missing = [p for p in ("model", "src", "bos_id", "eos_id") if p not in bound]
    if missing:
        raise LayoutError(f"{where}: call of the old {old} without {missing}")
    pieces = [bound["model"], bound["bos_id"], bound.get("max_len", OLD_MAX_LEN_DEFAULT), bound["eos_id"]]
    pieces += [f"{k}={bound[k]}" for k in keywords_after if k in bound and k not in ("pad_id", "return_all")]
    pieces.append(f"src={bound['src']}")
    pieces += [f"{k}={bound[k]}" for k in ("pad_id", "return_all") if k in bound]
    func_text = src.segment(f)
    text = f"{func_text}({', '.join(pieces)})"
    if "\n" in text or len(text) + node.col_offset > 110:
        indent = " " * (node.col_offset + len(func_text) + 1)
        head = ", ".join(pieces[:4])
        text = f"{func_text}({head},\n{indent}{', '.join(pieces[4:])})"
    a, b = src.span(node)
    src.replace(a, b, text)
    NOTES.append(f"{where}: call of the old encoder-decoder {old} rewritten to {text.splitlines()[0]}…")


# =========================================================================== the checkout


class Checkout:
    def __init__(self, root, dry_run=False):
        self.root = Path(root).resolve()
        self.dry = dry_run
        self.moved = {}        # new path (relative) -> old module name (for relative imports)
        self.created = []
        self.rewritten = []
        self.actions = []

    def git(self, *args, check=True):
        return subprocess.run(["git", "-C", str(self.root), *args], check=check, capture_output=True, text=True)

    def tracked(self, rel):
        return self.git("ls-files", "--error-unmatch", str(rel), check=False).returncode == 0

    def blob(self, rel):
        return self.git("hash-object", str(rel)).stdout.strip()

    def write(self, rel, text):
        path = self.root / rel
        if path.exists() and path.read_text(encoding="utf-8") == text:
            return False
        new = not path.exists()
        if not self.dry:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
        if new:
            self.created.append(str(rel))
        return True

    def mv(self, src_rel, dst_rel):
        dst = self.root / dst_rel
        if dst.exists():
            raise LayoutError(f"cannot move {src_rel} to {dst_rel}: {dst_rel} exists already")
        self.actions.append(f"moved {src_rel} -> {dst_rel}")
        if self.dry:
            return
        dst.parent.mkdir(parents=True, exist_ok=True)
        if self.tracked(src_rel):
            self.git("mv", str(src_rel), str(dst_rel))
        else:
            (self.root / src_rel).rename(dst)
            self.actions[-1] += "  (untracked: renamed, not git mv)"

    def rm(self, rel):
        self.actions.append(f"removed {rel} (merged)")
        if self.dry:
            return
        if self.tracked(rel):
            self.git("rm", "-q", "-f", str(rel))
        else:
            (self.root / rel).unlink()

    def files(self):
        out = self.git("ls-files", "--cached", "--others", "--exclude-standard", "-z").stdout.split("\0")
        return sorted({p for p in out if p and (self.root / p).is_file()
                       and not set(Path(p).parts) & SKIP_DIRS})


# --------------------------------------------------------------------------- step 1: inventory


def inventory(co):
    pkg = co.root / "course_lib"
    if not (pkg / "__init__.py").is_file():
        raise LayoutError(f"{co.root} has no course_lib/__init__.py")
    unknown = []
    for p in sorted(pkg.iterdir()):
        if p.name in SKIP_DIRS or p.name.startswith("."):
            continue
        if p.is_file() and p.suffix == ".py":
            name = p.stem
            if name not in MOVES and name not in SPLITS and name not in STAY:
                unknown.append(f"course_lib/{p.name}")
        elif p.is_dir() and (p / "__init__.py").exists():
            if p.name not in SUBPACKAGES and p.name not in NEW_PACKAGES:
                unknown.append(f"course_lib/{p.name}/")
    if unknown:
        raise LayoutError("modules the layout does not know how to place: " + ", ".join(unknown) +
                          "\n  Read each one's docstring and imports, add a row to MOVES (or STAY / "
                          "SUBPACKAGES) at the top of this script, and run it again.")


# --------------------------------------------------------------------------- step 2: moves


def do_moves(co):
    for old, new in MOVES.items():
        src = Path("course_lib") / f"{old}.py"
        if not (co.root / src).exists():
            continue
        if new in MERGES:
            continue
        dst = Path("course_lib") / (new.replace(".", "/") + ".py")
        co.mv(src, dst)
        co.moved[str(dst)] = f"course_lib.{old}"


def do_merges(co):
    for new, spec in MERGES.items():
        present = [s for s in spec["sources"] if (co.root / "course_lib" / f"{s}.py").exists()]
        if not present:
            continue
        for s in present:
            blob = co.blob(f"course_lib/{s}.py")
            if blob != spec["sources"][s]:
                raise LayoutError(f"course_lib/{s}.py has changed since templates/{spec['template']} was written "
                                  f"from it (blob {blob}, expected {spec['sources'][s]}): port the change into "
                                  "the template and update MERGES' hash")
        dst = Path("course_lib") / (new.replace(".", "/") + ".py")
        first, *rest = present
        co.mv(Path("course_lib") / f"{first}.py", dst)
        for s in rest:
            co.rm(Path("course_lib") / f"{s}.py")
        if not co.dry:
            (co.root / dst).write_text((TEMPLATES / spec["template"]).read_text(encoding="utf-8"), encoding="utf-8")
        co.actions.append(f"wrote {dst} from templates/{spec['template']} (merges {', '.join(present)})")


def _top_level_names(node):
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [node.name]
    if isinstance(node, (ast.Assign, ast.AnnAssign)):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        out = []
        for t in targets:
            for n in ast.walk(t):
                if isinstance(n, ast.Name):
                    out.append(n.id)
        return out
    return None


def _used_names(nodes):
    used = set()
    for node in nodes:
        for n in ast.walk(node):
            if isinstance(n, ast.Name):
                used.add(n.id)
    return used


def _all_list(tree):
    names = []
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            names = list(ast.literal_eval(node.value))
        elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name) and node.target.id == "__all__":
            names += list(ast.literal_eval(node.value))
    return names


def split_module(text, old, where):
    """-> {part: source text}. Top-level statements go to the part that lists their name."""
    spec = SPLITS[old]
    tree = ast.parse(text)
    lines = text.splitlines(keepends=True)
    body = tree.body
    doc = ast.get_docstring(tree)
    public = _all_list(tree)
    owner = {n: part for part, names in spec["parts"].items() for n in names}
    chunks = {part: [] for part in spec["parts"]}
    imports, future, seen = [], [], set()
    prev_end = 0
    for i, node in enumerate(body):
        start = (node.decorator_list[0].lineno if getattr(node, "decorator_list", None) else node.lineno) - 1
        # a chunk takes the comment lines right above it
        lead = start
        while lead > prev_end and (not lines[lead - 1].strip() or lines[lead - 1].lstrip().startswith("#")):
            lead -= 1
        chunk = "".join(lines[lead: node.end_lineno])
        prev_end = node.end_lineno
        if i == 0 and doc is not None and isinstance(node, ast.Expr):
            continue
        if isinstance(node, ast.ImportFrom) and node.module == "__future__":
            future.append(chunk)
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            imports.append(node)
            continue
        if isinstance(node, (ast.Assign, ast.AugAssign)) and any(
                isinstance(t, ast.Name) and t.id == "__all__"
                for t in (node.targets if isinstance(node, ast.Assign) else [node.target])):
            continue
        names = _top_level_names(node)
        if not names:
            raise LayoutError(f"{where}:{node.lineno}: a top-level statement SPLITS cannot place "
                              f"({type(node).__name__}); move it by hand or extend the script")
        parts = {owner.get(n) for n in names}
        if None in parts:
            unknown = [n for n in names if n not in owner]
            raise LayoutError(f"{where}: top-level name(s) {unknown} are in no part of SPLITS[{old!r}]: "
                              "add them to the part they belong to")
        if len(parts) > 1:
            raise LayoutError(f"{where}:{node.lineno}: {names} are split over {parts}")
        part = parts.pop()
        chunks[part].append((node, chunk, names))
        seen.update(names)
    missing = [n for n in owner if n not in seen]
    if missing:
        raise LayoutError(f"{where}: SPLITS[{old!r}] expects {missing}, which the module does not define "
                          "(renamed or removed?): update the table")

    defined = {part: {n for _, _, names in chunks[part] for n in names} for part in chunks}
    out = {}
    deps = {}
    for part, items in chunks.items():
        nodes = [n for n, _, _ in items]
        used = _used_names(nodes)
        need = [imp for imp in imports
                if any((a.asname or a.name).split(".")[0] in used for a in imp.names)]
        cross = {}
        for other, names in defined.items():
            if other != part:
                hit = sorted(n for n in names if n in used)
                if hit:
                    cross[other] = hit
        deps[part] = set(cross)
        if part == spec["primary"] and spec["docstrings"].get(part) is None:
            docstring = _adjust_doc(doc, spec)
        else:
            docstring = spec["docstrings"][part]
        body_text = []
        for j, (node, chunk, _) in enumerate(items):
            chunk = chunk.strip("\n")
            if j == 0:
                chunk = "\n".join(l for l in chunk.splitlines() if not re.match(r"#\s*-{5,}", l)).strip("\n") \
                    if chunk.lstrip().startswith("#") else chunk
            defs = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
            consecutive = j > 0 and not isinstance(node, defs) and not isinstance(items[j - 1][0], defs)
            sep = "\n" if consecutive and not chunk.startswith("#") else "\n\n\n"
            body_text.append((sep if j else "") + chunk)
        header = ['"""' + docstring.rstrip("\n") + '\n"""\n']
        if future:
            header.append("".join(future))
        header.append("\n")
        import_lines = [ast.get_source_segment(text, imp) for imp in need]
        # names from the other parts, written as imports from the old module (the rewrite maps them)
        import_lines += [_format_from(f".{old}", names, "") for other, names in cross.items()]
        header.append(_order_imports(import_lines))
        if public:   # the old module's __all__, each name where it went
            names_public = [n for n in public if n in defined[part]]
            header.append("\n__all__ = [\n" + "".join(f'    "{n}",\n' for n in names_public) + "]\n")
        header.append("\n\n")
        out[part] = "".join(header) + "".join(body_text) + "\n"
    _no_cycle(deps, old)
    return out


def _order_imports(lines):
    std, third, local = [], [], []
    for line in lines:
        mod = line.split()[1]
        if mod.startswith("."):
            local.append(line)
        elif mod.split(".")[0] in sys.stdlib_module_names:
            std.append(line)
        else:
            third.append(line)
    blocks = ["\n".join(b) for b in (std, third, local) if b]
    return "\n\n".join(blocks) + "\n"


def _no_cycle(deps, old):
    def visit(p, path):
        for q in deps[p]:
            if q in path:
                raise LayoutError(f"SPLITS[{old!r}]: the parts would import each other: {path + [q]}")
            visit(q, path + [q])
    for p in deps:
        visit(p, [p])


def _adjust_doc(doc, spec):
    pattern, replacement = spec["docstring_bullets"]
    lines, out, skipping, replaced = doc.splitlines(), [], False, False
    for line in lines:
        if re.match(pattern, line):
            if not replaced:
                out.append(replacement)
                replaced = True
            skipping = True
            continue
        if skipping and line.startswith("  ") and line.strip():
            continue
        skipping = False
        out.append(line)
    if not replaced:
        out += ["", replacement.lstrip("- ")]
    return "\n".join(out) + "\n"


def do_splits(co):
    for old, spec in SPLITS.items():
        src = Path("course_lib") / f"{old}.py"
        if not (co.root / src).exists():
            continue
        parts = split_module((co.root / src).read_text(encoding="utf-8"), old, str(src))
        primary = Path("course_lib") / (spec["primary"].replace(".", "/") + ".py")
        for part in parts:
            dst = Path("course_lib") / (part.replace(".", "/") + ".py")
            if part != spec["primary"] and (co.root / dst).exists():
                raise LayoutError(f"cannot split {src} into {dst}: it exists already")
        co.mv(src, primary)                      # history follows the primary part
        for part, text in parts.items():
            dst = Path("course_lib") / (part.replace(".", "/") + ".py")
            if not co.dry:
                (co.root / dst).write_text(text, encoding="utf-8")
            if part != spec["primary"]:
                co.created.append(str(dst))
            co.moved[str(dst)] = f"course_lib.{old}"
            co.actions.append(f"split {src} -> {dst} ({len(text.splitlines())} lines)")


# --------------------------------------------------------------------------- step 3: packages, tests


def nn_init():
    mods = ", ".join(sorted(NN_REEXPORT))
    stars = "".join(f"from .{m} import *  # noqa: F401,F403\n" for m in NN_REEXPORT)
    alls = "".join(f"    *{m}.__all__,\n" for m in NN_REEXPORT)
    return f'''"""The transformer the course builds, one concept per module, and how it is trained and decoded.

    attention     softmax attention, scaled dot-product, masks (causal, padding)     02, 06
    positional    sinusoidal, learned and rotary tables;  rotary: rotary attention  03
    layers        MultiHeadAttention, FeedForward, LayerNorm, encoder/decoder layers 04, 05, 07
    models        Encoder, Decoder, EncoderDecoder, DecoderOnlyLM                   06, 07, 08, 10
    rnn           the small recurrent network                                        01
    decoding      greedy, sampling, beam search: one calling convention for both kinds 06, 08
    training      train/eval loop, schedules;  checkpoints: save and resume a run    06, 07, 08
    modern        RMSNorm, SwiGLU, grouped-query attention, KV cache                 11
    llama         SmolLM2 (a Llama) in these pieces;  generation: KV-cached decoding 11
    pretrained    MiniLM (a BERT) in our Encoder;  torch_compat: weights to/from torch 04, 05, 07, 09

The names in the `__all__` of {mods} are re-exported here:
`from course_lib.nn import MultiHeadAttention, causal_mask`. The other modules are imported by
name (`from course_lib.nn.llama import LlamaLM`). Core code imports no plotting, widgets, notebook
tooling, data or lesson experiment (tests/test_package_layout.py checks).
"""
from . import {mods}  # noqa: F401
{stars}
__all__ = [
{alls}]
'''


COURSE_LIB_INIT = '''"""Transformers, hands-on: the code the lessons build, importable and tested.

    nn/            the transformer the course builds (attention … models), decoding, training
    data/          corpora and tasks: Shakespeare, number words, dates
    experiments/   one lesson's measurements on small models (extrapolation … induction heads)
    classroom/     the environment check, progress, the student versions
    viz/ → widgets/   figures (data in, Figure out) and the explorers over them
    exercises/     one checker per exercise, with hints for common mistakes

Dependencies point one way: widgets → viz → nn → torch (tests/test_package_layout.py).
This file imports nothing, and heavy optional imports (transformers, bertviz) live inside
the functions that need them, so `import course_lib` stays fast.
"""

__version__ = "0.1.0"
'''


def do_packages(co):
    for pkg, doc in NEW_PACKAGES.items():
        rel = Path("course_lib") / pkg / "__init__.py"
        text = nn_init() if pkg == "nn" else f'"""{doc.rstrip()}\n"""\n'
        if co.write(rel, text):
            co.actions.append(f"wrote {rel}")
    rel = Path("course_lib/__init__.py")
    current = (co.root / rel).read_text(encoding="utf-8")
    if current != COURSE_LIB_INIT:
        if co.blob(rel) == INIT_HEAD_BLOB:
            co.write(rel, COURSE_LIB_INIT)
            co.actions.append(f"wrote {rel} (docstring: the layout)")
        else:
            NOTES.append(f"{rel} differs from the version the new docstring was written for: left as it is")


def do_writes(co):
    for target, (template, replaces, blob) in WRITES.items():
        text = (TEMPLATES / template).read_text(encoding="utf-8")
        if replaces and (co.root / replaces).exists():
            got = co.blob(replaces)
            if got != blob:
                raise LayoutError(f"{replaces} has changed since templates/{template} was ported from it "
                                  f"(blob {got}, expected {blob}): port the change and update WRITES' hash")
            co.mv(replaces, target)
            if not co.dry:
                (co.root / target).write_text(text, encoding="utf-8")
            co.actions.append(f"ported {replaces} -> {target} (templates/{template}: the new calling convention)")
        elif co.write(target, text):
            co.actions.append(f"wrote {target} (templates/{template})")


# --------------------------------------------------------------------------- step 4: rewrite


def module_of(rel):
    parts = Path(rel).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def nn_names(co):
    out = {}
    for m in NN_REEXPORT:
        path = co.root / "course_lib" / "nn" / f"{m}.py"
        if path.exists():
            out[m] = set(_all_list(ast.parse(path.read_text(encoding="utf-8"))))
    return out


def python_context(co, rel, names):
    if rel.startswith("course_lib/"):
        new_module = module_of(rel)
        new_package = new_module if rel.endswith("__init__.py") else new_module.rpartition(".")[0]
        old_module = co.moved.get(rel)
        old_package = old_module.rpartition(".")[0] if old_module else new_package
    else:
        new_package = old_package = module_of(rel).rpartition(".")[0] or "_outside_"
    return Context(rel, old_package, new_package, notebook=False, nn_names=names)


def rewrite_all(co):
    names = nn_names(co)
    for rel in co.files():
        path = co.root / rel
        if rel.endswith(".py"):
            text = path.read_text(encoding="utf-8")
            new = rewrite_python(text, python_context(co, rel, names))
        elif rel.endswith(".ipynb"):
            new = rewrite_notebook(path, rel, names)
            text = path.read_text(encoding="utf-8")
        elif Path(rel).suffix in TEXT_SUFFIXES or Path(rel).name in TEXT_NAMES:
            try:
                text = path.read_text(encoding="utf-8")
            except UnicodeDecodeError:
                continue
            new = rewrite_references(text, rel)
        else:
            continue
        if new != text:
            co.rewritten.append(rel)
            if not co.dry:
                path.write_text(new, encoding="utf-8")
            if rel.endswith(".py"):
                try:
                    compile(new, rel, "exec")
                except SyntaxError as e:
                    raise LayoutError(f"{rel}: the rewrite does not compile ({e}); nothing else is wrong with "
                                      "the table — fix the rewriter")


def rewrite_notebook(path, rel, names):
    import nbformat

    raw = path.read_text(encoding="utf-8")
    nb = nbformat.reads(raw, as_version=nbformat.NO_CONVERT)
    tail = "\n" if raw.endswith("\n") else ""
    if nbformat.writes(nb) + tail != raw:
        NOTES.append(f"{rel}: nbformat does not write this notebook back byte for byte; if it is rewritten, "
                     "more than sources may change in its diff")
    ctx = Context(rel, "_notebook_", "_notebook_", notebook=True, nn_names=names)
    funcs, modules = {}, set()
    for cell in nb.cells:   # the old decoders may be imported in one cell and called in another
        if cell.cell_type == "code":
            masked = _mask_magics(cell.source)
            try:
                f, m = seq2seq_bindings(ast.parse(masked), ctx) if masked else ({}, set())
            except SyntaxError:
                continue
            funcs.update(f)
            modules |= m
    if funcs:
        defined = set()
        for cell in nb.cells:
            if cell.cell_type == "code":
                try:
                    tree = ast.parse(_mask_magics(cell.source) or "")
                except SyntaxError:
                    continue
                defined |= {n.name for n in ast.walk(tree)
                            if isinstance(n, (ast.FunctionDef, ast.ClassDef)) and n.name in funcs}
        if defined:
            raise LayoutError(f"{rel}: {sorted(defined)} is both the old library decoder and a function "
                              "defined in the notebook: rename the import (… as library_greedy) by hand first")
    changed = False
    for i, cell in enumerate(nb.cells):
        ctx.where = f"{rel} cell {i}"
        if cell.cell_type == "code":
            new = rewrite_python(cell.source, ctx, (funcs, modules))
        elif cell.cell_type == "markdown":
            new = rewrite_references(cell.source, ctx.where)
        else:
            continue
        if new != cell.source:
            cell.source = new
            changed = True
    return nbformat.writes(nb) + tail if changed else raw


# --------------------------------------------------------------------------- step 5: README


def readme_section():
    return (HERE / "README_SECTION.md").read_text(encoding="utf-8").rstrip("\n") + "\n"


def do_readme(co):
    rel = Path("README.md")
    path = co.root / rel
    if not path.exists():
        NOTES.append("no README.md: section not inserted")
        return
    text = path.read_text(encoding="utf-8")
    section = readme_section()
    if README_HEADING in text:
        start = text.index(README_HEADING)
        nxt = text.find("\n## ", start + len(README_HEADING))
        end = len(text) if nxt < 0 else nxt + 1
        new = text[:start] + section + "\n" + text[end:]
    elif README_BEFORE in text:
        i = text.index(README_BEFORE)
        new = text[:i] + section + "\n" + text[i:]
    else:
        new = text.rstrip("\n") + "\n\n" + section
    old_sentence = re.compile(r"`course_lib/` \(one module per concept: [^)]*\), so later lessons import what "
                              r"earlier ones built\.")
    new = old_sentence.sub("`course_lib/` (see [How the code is organised](#how-the-code-is-organised)), so "
                           "later lessons import what earlier ones built.", new)
    if new != text:
        if not co.dry:
            path.write_text(new, encoding="utf-8")
        co.actions.append("README.md: section 'How the code is organised'")
        if str(rel) not in co.rewritten:
            co.rewritten.append(str(rel))


# --------------------------------------------------------------------------- main


def leftovers(co):
    olds = "|".join(sorted(set(MOVES) | set(SPLITS), key=len, reverse=True))
    pattern = re.compile(rf"(?<![\w.])course_lib\.({olds})\b|(?<![\w/.])course_lib/({olds})\.py\b")
    hits = []
    for rel in co.files():
        if Path(rel).suffix in {".py", ".ipynb", ".md"} or Path(rel).name in TEXT_NAMES:
            text = (co.root / rel).read_text(encoding="utf-8", errors="replace")
            if rel.endswith(".ipynb"):
                continue  # outputs may still name old modules until the notebook is re-executed
            for m in pattern.finditer(text):
                hits.append(f"{rel}: {m.group(0)}")
    return hits


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("checkout", help="a git working tree holding course_lib/")
    ap.add_argument("--dry-run", action="store_true", help="report what would change, write nothing")
    args = ap.parse_args(argv)
    _check_tables()
    co = Checkout(args.checkout, args.dry_run)
    inventory(co)
    do_moves(co)
    do_merges(co)
    do_splits(co)
    do_packages(co)
    do_writes(co)
    if co.dry and co.actions:
        print("\n".join(co.actions))
        print("(dry run: stopping before the rewrite, which needs the moved files)")
        return 0
    rewrite_all(co)
    do_readme(co)
    if not co.dry and co.created:
        co.git("add", "--", *co.created)
    for a in co.actions:
        print(a)
    for rel in co.rewritten:
        print(f"rewrote {rel}")
    for n in NOTES:
        print(f"note: {n}")
    rest = leftovers(co)
    for h in rest:
        print(f"left over: {h}")
    if not co.actions and not co.rewritten:
        print("nothing to do: the layout is applied")
    return 1 if rest else 0


if __name__ == "__main__":
    sys.exit(main())
