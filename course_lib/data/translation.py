"""English number words -> German number words: the translation task of lesson 08.

    "twenty-one"                        -> "einundzwanzig"
    "four hundred and twelve thousand"  -> "vierhundertzwölftausend"

German writes the units *before* the tens ("ein-und-zwanzig" = one-and-twenty), so a
translator has to reorder, not just look words up. The pairs come from `num2words`
(no download), for every number 0 … 999 999.

Pieces of the pipeline, one function each:

- **text**: `english(n)`, `german(n)` — num2words' strings, made fast (see below).
- **tokens**: `tokenize_english` (words; hyphens and commas dropped) and
  `tokenize_german` (sub-word pieces: the German words for 0-19 and the tens, plus
  "und", "hundert", "tausend"; greedy longest match, lossless).
- **ids**: `Vocab` (token <-> id, with <pad>, <bos>, <eos>).
- **split by number**: `NumberTranslationData` holds 1 000 held-out numbers that the
  training sampler never returns.
- **batches**: `pad_sequences`, `shift_targets` (teacher forcing), `make_batch`.
- **training** and **evaluation**: `course_lib.experiments.translator` and
  `course_lib.experiments.translator_eval`.

Fast generation. num2words takes ~0.2 ms per call here; a 60-second training run sees
~500 000 examples, so calling it per example would cost more than the training. But a
number below a million is `t·1000 + r`, and num2words writes it as
`words(t·1000)` followed by `words(r)` (joined by ", " or " and " in English). So we call
num2words once for each of the 2 000 group forms, keep their *token ids*, and build any
number's ids by concatenating two short lists. `tests/test_translation.py` checks the
composed strings against num2words itself.
"""

import re
from functools import lru_cache

import numpy as np
import torch

from .._checks import check_positive_int

__all__ = [
    "MAX_NUMBER",
    "PAD",
    "BOS",
    "EOS",
    "english",
    "german",
    "tokenize_english",
    "tokenize_german",
    "german_pieces",
    "Vocab",
    "NumberTranslationData",
    "pad_sequences",
    "shift_targets",
    "sample_numbers",
    "parse_source",
]


MAX_NUMBER = 999_999
PAD, BOS, EOS = "<pad>", "<bos>", "<eos>"
SPECIALS = (PAD, BOS, EOS)  # ids 0, 1, 2 in both vocabularies


def _num2words(n, lang):
    from num2words import num2words  # imported here: `import course_lib` stays fast

    return num2words(n, lang=lang)


@lru_cache(maxsize=None)
def _groups(lang):
    """num2words of r (r < 1000) and of t·1000 (1 ≤ t < 1000): the 2 000 building blocks."""
    small = [_num2words(r, lang) for r in range(1000)]
    thousands = [None] + [_num2words(t * 1000, lang) for t in range(1, 1000)]
    return small, thousands


def _check_number(n):
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
        raise TypeError(f"n must be an int, got {type(n).__name__} ({n!r})")
    if not 0 <= n <= MAX_NUMBER:
        raise ValueError(f"n must be between 0 and {MAX_NUMBER:,}, got {n:,}")
    return int(n)


def english(n):
    """num2words(n) for 0 ≤ n ≤ 999 999, e.g. 1234 -> 'one thousand, two hundred and thirty-four'."""
    t, r = divmod(_check_number(n), 1000)
    small, thousands = _groups("en")
    if t == 0:
        return small[r]
    if r == 0:
        return thousands[t]
    return thousands[t] + (", " if r >= 100 else " and ") + small[r]


def german(n):
    """num2words(n, lang='de') for 0 ≤ n ≤ 999 999, e.g. 21 -> 'einundzwanzig'."""
    t, r = divmod(_check_number(n), 1000)
    small, thousands = _groups("de")
    if t == 0:
        return small[r]
    return thousands[t] + (small[r] if r else "")


def tokenize_english(text):
    """Lower-case words; hyphens, commas and spaces only separate them.

    'Twenty-one' and 'twenty one' give the same ['twenty', 'one']: the punctuation
    carries no information the words don't.
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    return re.findall(r"[a-zäöüß]+", text.lower())


@lru_cache(maxsize=None)
def german_pieces():
    """The German sub-word inventory, longest first.

    The words num2words writes for 0-19 and for the tens 20, 30, … 90, plus 'ein'
    (as in 'einundzwanzig'), 'und', 'hundert' and 'tausend'. Every German number
    below a million is a concatenation of these pieces.
    """
    words = {_num2words(i, "de") for i in (*range(20), *range(20, 100, 10))}
    return tuple(sorted(words | {"ein", "und", "hundert", "tausend"}, key=lambda w: (-len(w), w)))


def tokenize_german(text):
    """Split a German number word into pieces by greedy longest match (lossless).

    'einundzwanzig' -> ['ein', 'und', 'zwanzig']; ''.join(pieces) == text.
    Raises ValueError naming the first place no piece fits.
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    pieces, i, word = [], 0, text.lower().replace(" ", "")
    inventory = german_pieces()
    while i < len(word):
        match = next((p for p in inventory if word.startswith(p, i)), None)
        if match is None:
            raise ValueError(f"cannot split {text!r} into German number pieces at {word[i:]!r}")
        pieces.append(match)
        i += len(match)
    return pieces


class Vocab:
    """Tokens <-> ids. Ids 0, 1, 2 are <pad>, <bos>, <eos>; the rest follow `tokens`."""

    def __init__(self, tokens):
        tokens = [t for t in tokens if t not in SPECIALS]
        if len(set(tokens)) != len(tokens):
            raise ValueError("tokens must not repeat")
        self.itos = list(SPECIALS) + tokens
        self.stoi = {t: i for i, t in enumerate(self.itos)}
        self.pad_id, self.bos_id, self.eos_id = 0, 1, 2

    def __len__(self):
        return len(self.itos)

    def __contains__(self, token):
        return token in self.stoi

    def encode(self, tokens):
        """List of tokens -> list of ids. An unknown token raises ValueError naming it."""
        unknown = [t for t in tokens if t not in self.stoi]
        if unknown:
            raise ValueError(f"unknown word(s) {unknown}: the vocabulary has {len(self)} tokens "
                             f"({', '.join(self.itos[3:12])}, …)")
        return [self.stoi[t] for t in tokens]

    def decode(self, ids, strip=True):
        """Ids -> tokens. With strip, stop at the first <eos> and drop <pad>/<bos>."""
        ids = ids.tolist() if isinstance(ids, torch.Tensor) else list(ids)
        out = []
        for i in ids:
            if strip and i == self.eos_id:
                break
            if strip and i in (self.pad_id, self.bos_id):
                continue
            out.append(self.itos[i])
        return out

    def __repr__(self):
        return f"Vocab({len(self)} tokens: {self.itos[:8]} …)"


def pad_sequences(seqs, pad_id):
    """List of id lists -> LongTensor (batch, longest), right-padded with pad_id."""
    if not seqs:
        raise ValueError("seqs is empty")
    n = max(len(s) for s in seqs)
    out = torch.full((len(seqs), n), pad_id, dtype=torch.long)
    for row, s in zip(out, seqs):
        row[: len(s)] = torch.as_tensor(s, dtype=torch.long)
    return out


def shift_targets(seqs, bos_id, eos_id, pad_id):
    """Teacher forcing: the decoder reads the target shifted right by one.

        decoder input:  <bos> y1 y2 … yn          (what it has seen so far)
        labels:         y1   y2 … yn <eos>        (what it must predict next)

    Both right-padded with pad_id to the same length (longest + 1).
    seqs: list of target id lists (no <bos>/<eos>). Returns (tgt_in, labels), each
    LongTensor (batch, longest + 1).
    """
    tgt_in = pad_sequences([[bos_id] + list(s) for s in seqs], pad_id)
    labels = pad_sequences([list(s) + [eos_id] for s in seqs], pad_id)
    return tgt_in, labels


def sample_numbers(rng, k, max_digits=6, exclude=None):
    """k numbers whose digit count (1 … max_digits) is uniform, never in `exclude`.

    Uniform over 0 … 999 999 would make 90 % of examples six-digit numbers and almost
    never show 'seven' alone; equal weight per length shows every form often.
    rng: numpy Generator. exclude: bool array indexed by number (True = forbidden).
    Returns an int64 numpy array (k,).
    """
    out = np.empty(0, dtype=np.int64)
    while len(out) < k:
        digits = rng.integers(1, max_digits + 1, size=2 * k)
        lo = np.where(digits == 1, 0, 10 ** (digits - 1))
        nums = lo + (rng.random(2 * k) * (10**digits - lo)).astype(np.int64)
        if exclude is not None:
            nums = nums[~exclude[nums]]
        out = np.concatenate([out, nums])
    return out[:k]


class NumberTranslationData:
    """The English -> German number task with a train / held-out split *by number*.

    held_out: `n_held_out` distinct numbers with 3 to 6 digits (equal counts per
    length; the 1 000 numbers below 1 000 are too few to hold any out — every
    bigger number reuses them). The training sampler never returns a held-out
    number. Everything after construction is fast: token ids are composed from the
    cached 3-digit groups.
    """

    def __init__(self, n_held_out=1000, seed=0):
        check_positive_int("n_held_out", n_held_out)
        en_small, en_thousands = _groups("en")
        de_small, de_thousands = _groups("de")
        words = sorted({w for s in en_small for w in tokenize_english(s)} | {"thousand"})
        self.src_vocab = Vocab(words)
        self.tgt_vocab = Vocab(sorted(german_pieces()))
        src, tgt = self.src_vocab, self.tgt_vocab
        # Token ids of each group form: small[r] for r < 1000, thousands[t] for t·1000.
        self._src_small = [src.encode(tokenize_english(s)) for s in en_small]
        self._src_thousands = [[]] + [src.encode(tokenize_english(s)) for s in en_thousands[1:]]
        self._tgt_small = [tgt.encode(tokenize_german(s)) for s in de_small]
        self._tgt_thousands = [[]] + [tgt.encode(tokenize_german(s)) for s in de_thousands[1:]]
        self._and = src.stoi["and"]

        rng = np.random.default_rng(seed)
        per_length = [n_held_out // 4 + (i < n_held_out % 4) for i in range(4)]
        held = [rng.choice(np.arange(10 ** (d - 1), 10**d), size=k, replace=False)
                for d, k in zip(range(3, 7), per_length)]
        self.held_out = np.sort(np.concatenate(held))
        self.is_held_out = np.zeros(MAX_NUMBER + 1, dtype=bool)
        self.is_held_out[self.held_out] = True
        self.rng = np.random.default_rng(seed + 1)

    def src_ids(self, n):
        """English token ids of n (no <bos>/<eos>)."""
        t, r = divmod(_check_number(n), 1000)
        if t == 0:
            return self._src_small[r]
        if r == 0:
            return self._src_thousands[t]
        glue = [self._and] if r < 100 else []  # "… thousand and five", "… thousand, one hundred"
        return self._src_thousands[t] + glue + self._src_small[r]

    def tgt_ids(self, n):
        """German piece ids of n (no <bos>/<eos>)."""
        t, r = divmod(_check_number(n), 1000)
        if t == 0:
            return self._tgt_small[r]
        return self._tgt_thousands[t] + (self._tgt_small[r] if r else [])

    def sample_train(self, k):
        """k training numbers (never held out), digit count uniform in 1 … 6."""
        return sample_numbers(self.rng, k, exclude=self.is_held_out)

    def make_batch(self, numbers):
        """numbers -> (src (batch, n_src), tgt_in (batch, n_tgt), labels (batch, n_tgt))."""
        numbers = [int(n) for n in numbers]
        src = pad_sequences([self.src_ids(n) for n in numbers], self.src_vocab.pad_id)
        tgt_in, labels = shift_targets([self.tgt_ids(n) for n in numbers], self.tgt_vocab.bos_id,
                                       self.tgt_vocab.eos_id, self.tgt_vocab.pad_id)
        return src, tgt_in, labels

    def __repr__(self):
        return (f"NumberTranslationData(src vocab {len(self.src_vocab)}, tgt vocab "
                f"{len(self.tgt_vocab)}, {len(self.held_out)} held-out numbers)")


def parse_source(data, text):
    """A number ('21', '4 512') or English words ('twenty-one') -> (English tokens, src ids).

    Raises ValueError with a message meant for a learner: unknown words are named,
    numbers outside 0 … 999 999 are refused.
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    cleaned = text.strip().replace(",", "").replace("_", "").replace(" ", "")
    if cleaned.lstrip("-").isdigit():
        n = int(cleaned)
        if not 0 <= n <= MAX_NUMBER:
            raise ValueError(f"{n:,} is out of range: the model was trained on 0 … {MAX_NUMBER:,}")
        words = tokenize_english(english(n))
    else:
        words = tokenize_english(text)
        if not words:
            raise ValueError("type a number (e.g. 21) or English number words (e.g. twenty-one)")
        unknown = [w for w in words if w not in data.src_vocab]
        if unknown:
            raise ValueError(f"unknown word(s) {unknown}: the model only knows English number words "
                             f"(zero … nineteen, twenty … ninety, hundred, thousand, and)")
    return words, data.src_vocab.encode(words)
