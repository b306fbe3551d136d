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
- **training**: `warmup_schedule`, `label_smoothed_cross_entropy`, `train_translator`.
- **evaluation**: `evaluate_exact_match`, `token_accuracy`, `translate`.

Fast generation. num2words takes ~0.2 ms per call here; a 60-second training run sees
~500 000 examples, so calling it per example would cost more than the training. But a
number below a million is `t·1000 + r`, and num2words writes it as
`words(t·1000)` followed by `words(r)` (joined by ", " or " and " in English). So we call
num2words once for each of the 2 000 group forms, keep their *token ids*, and build any
number's ids by concatenating two short lists. `tests/test_translation.py` checks the
composed strings against num2words itself.
"""

import math
import re
import time
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np
import torch
import torch.nn.functional as F

from ._checks import check_positive_int

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
    "warmup_schedule",
    "label_smoothed_cross_entropy",
    "smoothed_targets",
    "TranslatorConfig",
    "build_translator",
    "train_translator",
    "token_accuracy",
    "evaluate_exact_match",
    "translate",
    "parse_source",
    "attention_for_bertviz",
    "error_kind",
    "ERROR_KINDS",
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


# --------------------------------------------------------------------------- training


def warmup_schedule(step, warmup, total):
    """Learning-rate multiplier: linear warm-up to 1 over `warmup` steps, then a cosine
    decay to 0 at `total`. Early steps use a small rate because Adam's moment
    estimates and the post-attention activations are still unreliable.
    """
    if step < warmup:
        return (step + 1) / warmup
    progress = min(1.0, (step - warmup) / max(1, total - warmup))
    return 0.5 * (1 + math.cos(math.pi * progress))


def smoothed_targets(labels, vocab_size, smoothing):
    """The label-smoothed target distribution: 1 - ε on the right token, ε spread
    uniformly over all vocab_size tokens (so the right one gets 1 - ε + ε/V).
    labels: (...,) ids -> (..., vocab_size) probabilities. This is what
    F.cross_entropy(label_smoothing=ε) compares against.
    """
    one_hot = F.one_hot(labels, vocab_size).float()
    return one_hot * (1 - smoothing) + smoothing / vocab_size


def label_smoothed_cross_entropy(logits, labels, smoothing=0.1, pad_id=0):
    """Mean over non-pad positions of −Σ_v q(v) log p(v), q = smoothed_targets.

    logits: (batch, n, vocab); labels: (batch, n). Equal to
    F.cross_entropy(logits.transpose(1, 2), labels, ignore_index=pad_id, label_smoothing=ε).
    """
    log_p = logits.log_softmax(dim=-1)
    q = smoothed_targets(labels, logits.shape[-1], smoothing)
    per_position = -(q * log_p).sum(dim=-1)  # (batch, n)
    keep = labels != pad_id
    return per_position[keep].mean()


@dataclass
class TranslatorConfig:
    """Model and training settings used by lesson 08 and benchmarks/bench_translator.py."""

    d_model: int = 64
    h: int = 4
    d_ff: int = 256
    n_enc: int = 2
    n_dec: int = 2
    dropout: float = 0.0
    norm_first: bool = True
    batch_size: int = 64
    lr: float = 3e-3
    warmup: int = 50
    total_steps: int = 300
    label_smoothing: float = 0.1
    clip: float = 1.0
    seed: int = 0


def build_translator(data, config=None):
    """A fresh EncoderDecoder sized for `data`'s vocabularies (seeded by config.seed)."""
    from .models import EncoderDecoder

    c = config or TranslatorConfig()
    torch.manual_seed(c.seed)
    return EncoderDecoder(len(data.src_vocab), len(data.tgt_vocab), d_model=c.d_model, h=c.h, d_ff=c.d_ff,
                          n_enc=c.n_enc, n_dec=c.n_dec, dropout=c.dropout, norm_first=c.norm_first,
                          max_len=32, pad_id=data.src_vocab.pad_id)


def _optimizer(model, c):
    return torch.optim.AdamW(model.parameters(), lr=c.lr, betas=(0.9, 0.98), weight_decay=0.01)


def _scheduler(optimizer, c):
    return torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: warmup_schedule(s, c.warmup, c.total_steps))


@dataclass
class TrainState:
    """Everything needed to continue a run: the model, its optimizer and schedule, the
    step count and the loss history (one entry per step)."""

    model: torch.nn.Module
    optimizer: torch.optim.Optimizer
    scheduler: object
    config: TranslatorConfig
    step: int = 0
    history: dict = field(default_factory=lambda: {"step": [], "loss": [], "lr": [], "grad_norm": []})

    @classmethod
    def fresh(cls, data, config=None):
        c = config or TranslatorConfig()
        model = build_translator(data, c)
        opt = _optimizer(model, c)
        return cls(model, opt, _scheduler(opt, c), c)

    def save(self, path, data=None):
        """Checkpoint everything (and `data`'s sampler state, so the batches continue too)."""
        from dataclasses import asdict

        from .checkpoints import save_checkpoint

        extra = {} if data is None else {"sampler": data.rng.bit_generator.state}
        return save_checkpoint(path, self.model, self.optimizer, self.scheduler, self.step,
                               self.history, asdict(self.config), extra)

    @classmethod
    def load(cls, path, data):
        """Rebuild a TrainState from a checkpoint: same config, weights, optimizer
        moments, schedule position, step and history (loaded with weights_only=True)."""
        from .checkpoints import load_checkpoint, read_config

        config = TranslatorConfig(**read_config(path))
        state = cls.fresh(data, config)
        info = load_checkpoint(path, state.model, state.optimizer, state.scheduler)
        state.step, state.history = info["step"], info["history"]
        if "sampler" in info["extra"]:
            data.rng.bit_generator.state = info["extra"]["sampler"]
        return state


__all__ += ["TrainState"]


def train_translator(state, data, steps=None, seconds=None, progress=True, callback=None,
                     eval_every=None, eval_numbers=None):
    """Train `state.model` in place for `steps` more steps (or until `seconds` pass,
    or until state.config.total_steps), one fresh random batch per step.

    Each step: teacher-forced forward, label-smoothed cross-entropy (pads ignored),
    backward, gradient clipping to norm `clip`, AdamW step, warm-up schedule step.
    Appends to state.history; `callback(state)` (if given) runs after each step and
    may return True to stop. With eval_every, exact match on eval_numbers is
    recorded in state.history["eval"] as (step, accuracy, seconds).
    Returns state.
    """
    from tqdm.auto import tqdm

    c, model = state.config, state.model
    limit = c.total_steps - state.step if steps is None else min(steps, c.total_steps - state.step)
    model.train()
    start = time.perf_counter()
    bar = tqdm(total=limit, disable=not progress, desc="training", leave=True)
    hist = state.history
    for _ in range(limit):
        src, tgt_in, labels = data.make_batch(data.sample_train(c.batch_size))
        logits = model(src, tgt_in)
        loss = F.cross_entropy(logits.transpose(1, 2), labels, ignore_index=data.tgt_vocab.pad_id,
                               label_smoothing=c.label_smoothing)
        state.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), c.clip)
        state.optimizer.step()
        hist["step"].append(state.step)
        hist["loss"].append(loss.item())
        hist["lr"].append(state.optimizer.param_groups[0]["lr"])
        hist["grad_norm"].append(float(grad_norm))
        state.scheduler.step()
        state.step += 1
        bar.update(1)
        if state.step % 20 == 0:
            bar.set_postfix(loss=f"{loss.item():.3f}")
        if eval_every and state.step % eval_every == 0:
            acc = evaluate_exact_match(model, data, eval_numbers)["exact_match"]
            hist.setdefault("eval", []).append((state.step, acc, time.perf_counter() - start))
            model.train()
        if callback is not None and callback(state):
            break
        if seconds is not None and time.perf_counter() - start > seconds:
            break
    bar.close()
    model.eval()
    return state


# --------------------------------------------------------------------------- evaluation


@torch.no_grad()
def token_accuracy(model, data, numbers, batch_size=1000):
    """Teacher-forced per-token accuracy: the fraction of target positions (including
    <eos>, excluding padding) where argmax p(y_t | y_<t, x) is the right piece."""
    model.eval()
    right = total = 0
    for i in range(0, len(numbers), batch_size):
        src, tgt_in, labels = data.make_batch(numbers[i : i + batch_size])
        pred = model(src, tgt_in).argmax(-1)
        keep = labels != data.tgt_vocab.pad_id
        right += int((pred == labels)[keep].sum())
        total += int(keep.sum())
    return right / total


@torch.no_grad()
def evaluate_exact_match(model, data, numbers=None, batch_size=1000, beam_size=None):
    """Greedy (or beam) translation of each number; exact match = every piece right.

    Returns {"exact_match": fraction, "numbers": array, "predicted": list of piece
    lists, "expected": list of piece lists, "correct": bool array}.
    """
    from .seq2seq_decoding import beam_search, greedy_decode

    numbers = data.held_out if numbers is None else np.asarray(numbers)
    model.eval()
    predicted, expected = [], []
    v = data.tgt_vocab
    for i in range(0, len(numbers), batch_size):
        chunk = numbers[i : i + batch_size]
        src, _, _ = data.make_batch(chunk)
        max_len = max(len(data.tgt_ids(int(n))) for n in chunk) + 4
        if beam_size:
            out = beam_search(model, src, v.bos_id, v.eos_id, max_len=max_len, beam_size=beam_size)
        else:
            out = greedy_decode(model, src, v.bos_id, v.eos_id, max_len=max_len)
        predicted += [v.decode(row) for row in out]
        expected += [v.decode(data.tgt_ids(int(n))) for n in chunk]
    correct = np.array([p == e for p, e in zip(predicted, expected)])
    return {"exact_match": float(correct.mean()), "numbers": numbers, "predicted": predicted,
            "expected": expected, "correct": correct}


TENS = ("zwanzig", "dreißig", "vierzig", "fünfzig", "sechzig", "siebzig", "achtzig", "neunzig")
ERROR_KINDS = {
    "ein / eins": "German writes 'eins' only at the very end of a number and 'ein' before 'und', "
                  "'hundert', 'tausend'; the model used the other one",
    "eins before tausend": "num2words writes 'einhunderteinstausend' for 101 000 (correct German: "
                           "'einhunderteintausend'); the model wrote 'ein'",
    "units before tens": "a units word + 'und' was added to, or dropped from, a tens word "
                         "(e.g. 'neunzig' vs 'sieben und neunzig')",
    "too short / too long": "the translation stopped early or went on after the right end",
    "other": "a wrong piece of another kind",
}


def error_kind(expected, predicted):
    """Classify a wrong translation by its first differing piece (keys of ERROR_KINDS).

    expected, predicted: lists of German pieces. Returns None if they are equal.
    """
    if expected == predicted:
        return None
    i = next((i for i, (e, p) in enumerate(zip(expected, predicted)) if e != p), min(len(expected), len(predicted)))
    e = expected[i] if i < len(expected) else None
    p = predicted[i] if i < len(predicted) else None
    if {e, p} == {"eins", "ein"}:
        return "eins before tausend" if expected[i : i + 2] == ["eins", "tausend"] else "ein / eins"
    if e in TENS and p not in TENS and predicted[i + 1 : i + 2] == ["und"]:
        return "units before tens"
    if p in TENS and e not in TENS and expected[i + 1 : i + 2] == ["und"]:
        return "units before tens"
    if (e is None and p == "und") or (p is None and e == "und"):
        return "units before tens"  # '… neun' vs '… neun und dreißig'
    if e is None or p is None:
        return "too short / too long"
    return "other"


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


@torch.no_grad()
def translate(model, data, text, beam_size=None, max_len=20):
    """Translate one input (number or English words). Returns a dict with the
    English tokens, German pieces, the joined German word, and the cross-attention
    of every decoder layer (h, n_tgt, n_src) for the decoded sequence.
    """
    from .models import collect_attention
    from .seq2seq_decoding import beam_search, greedy_decode

    words, ids = parse_source(data, text)
    v = data.tgt_vocab
    src = torch.tensor([ids])
    model.eval()
    if beam_size:
        out = beam_search(model, src, v.bos_id, v.eos_id, max_len=max_len, beam_size=beam_size)
    else:
        out = greedy_decode(model, src, v.bos_id, v.eos_id, max_len=max_len)
    pieces = v.decode(out[0])
    tgt_in = torch.tensor([[v.bos_id] + v.encode(pieces)])
    attn = collect_attention(model, src, tgt_in)
    cross = [a[0] for a in attn["cross"]]  # each (h, n_tgt, n_src)
    return {"source": words, "pieces": pieces, "german": "".join(pieces), "cross": cross,
            "decoder_inputs": [BOS] + pieces}


def attention_for_bertviz(model, data, text):
    """Every layer's attention for one translation, ready for bertviz.

    Returns {"attention": {"encoder": [...], "decoder": [...], "cross": [...]},
    "src_tokens": English words, "tgt_tokens": <bos> + German pieces (the decoder's
    inputs)}. Each list holds one tensor per layer shaped (1, heads, seq_q, seq_k):
    encoder (1, h, n_src, n_src), decoder (1, h, n_tgt, n_tgt), cross (1, h, n_tgt, n_src).
    With `course_lib.bertviz_views`:
        show("model", v["attention"], src_tokens=v["src_tokens"], tgt_tokens=v["tgt_tokens"])
    """
    from .models import collect_attention

    result = translate(model, data, text)
    v = data.tgt_vocab
    src = torch.tensor([data.src_vocab.encode(result["source"])])
    tgt_in = torch.tensor([[v.bos_id] + v.encode(result["pieces"])])
    attn = collect_attention(model, src, tgt_in)
    return {"attention": {k: list(w) for k, w in attn.items()}, "src_tokens": result["source"],
            "tgt_tokens": result["decoder_inputs"]}
