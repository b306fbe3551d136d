"""Dates written many ways -> ISO dates: the second translation task (lesson 08's extension).

    "3 March 2021"             -> "2021-03-03"
    "March 3rd, 2021"          -> "2021-03-03"
    "03/04/2021"   (US: M/D/Y) -> "2021-03-04"
    "4.3.21"  (European D.M.YY) -> "2021-03-04"

Every date from 1950-01-01 to 2049-12-31 can be written in each of `DATE_FORMATS`. The
source and target are both tokenized in **characters**. Each format fixes its convention,
so a source string always determines its date:

- slashes are US order, month/day/year (`"03/04/2021"` is the 4th of March);
- dots are European order, day.month.year, with a **two-digit year**: 50-99 mean
  1950-1999 and 00-49 mean 2000-2049 (the range of dates we generate, so it is exact).

`DateTranslationData` has the interface `course_lib.data.translation` needs
(`src_vocab`, `tgt_vocab`, `held_out`, `sample_train`, `make_batch`, `tgt_ids`), so
`TrainState`, `train_translator` and `evaluate_exact_match` work on it unchanged. An
*item* is one integer, `day_index * len(formats) + format_index`: a date in one format.
The split is by **date**: a held-out date never appears in training, in any format.
"""

import datetime as _dt

import numpy as np

from .._checks import check_positive_int
from .translation import Vocab, pad_sequences, shift_targets

__all__ = [
    "FIRST_DATE",
    "LAST_DATE",
    "MONTHS",
    "WEEKDAYS",
    "DATE_FORMATS",
    "ordinal",
    "format_date",
    "parse_two_digit_year",
    "DateTranslationData",
]

FIRST_DATE = _dt.date(1950, 1, 1)
LAST_DATE = _dt.date(2049, 12, 31)
# English names written out (not calendar.month_name, which follows the machine's locale).
MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September",
          "October", "November", "December")
WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")


def ordinal(day):
    """1 -> '1st', 2 -> '2nd', 3 -> '3rd', 11 -> '11th', 22 -> '22nd'."""
    check_positive_int("day", day)
    if 11 <= day % 100 <= 13:
        return f"{day}th"
    return f"{day}{ {1: 'st', 2: 'nd', 3: 'rd'}.get(day % 10, 'th') }"


def parse_two_digit_year(yy):
    """The pivot rule of the dotted format: 50-99 -> 1950-1999, 00-49 -> 2000-2049."""
    if isinstance(yy, bool) or not isinstance(yy, (int, np.integer)) or not 0 <= yy <= 99:
        raise ValueError(f"yy must be an int from 0 to 99, got {yy!r}")
    return 1900 + int(yy) if yy >= 50 else 2000 + int(yy)


DATE_FORMATS = {
    "day month year": lambda d: f"{d.day} {MONTHS[d.month - 1]} {d.year}",
    "month day, year": lambda d: f"{MONTHS[d.month - 1]} {ordinal(d.day)}, {d.year}",
    "weekday, day month year": lambda d: f"{WEEKDAYS[d.weekday()]}, {d.day} {MONTHS[d.month - 1]} {d.year}",
    "day mon year": lambda d: f"{d.day} {MONTHS[d.month - 1][:3]} {d.year}",
    "the day of month year": lambda d: f"the {ordinal(d.day)} of {MONTHS[d.month - 1]} {d.year}",
    "US mm/dd/yyyy": lambda d: f"{d.month:02d}/{d.day:02d}/{d.year}",
    "year-m-d": lambda d: f"{d.year}-{d.month}-{d.day}",
    "d.m.yy": lambda d: f"{d.day}.{d.month}.{d.year % 100:02d}",
}


def _check_date(date):
    if not isinstance(date, _dt.date) or isinstance(date, _dt.datetime):
        raise ValueError(f"date must be a datetime.date, got {type(date).__name__} ({date!r})")
    if not FIRST_DATE <= date <= LAST_DATE:
        raise ValueError(f"date must be between {FIRST_DATE} and {LAST_DATE}, got {date}")


def format_date(date, fmt):
    """Write `date` (a datetime.date in FIRST_DATE … LAST_DATE) in format `fmt`, a key of DATE_FORMATS."""
    _check_date(date)
    if fmt not in DATE_FORMATS:
        raise ValueError(f"fmt must be one of {list(DATE_FORMATS)}, got {fmt!r}")
    return DATE_FORMATS[fmt](date)


class DateTranslationData:
    """Dates in many formats -> ISO, character tokens, a train / held-out split by date.

    n_held_out: how many distinct dates to hold out; `held_out` holds every one of them
    in every format (n_held_out · len(formats) items), so exact match can be read per
    format. formats: names from DATE_FORMATS (default: all). The training sampler draws
    a uniform non-held-out date and a uniform format.
    """

    def __init__(self, n_held_out=200, seed=0, formats=None):
        check_positive_int("n_held_out", n_held_out)
        if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
            raise ValueError(f"seed must be a non-negative int, got {seed!r}")
        formats = list(DATE_FORMATS) if formats is None else list(formats)
        if not formats:
            raise ValueError("formats must name at least one format")
        unknown = [f for f in formats if f not in DATE_FORMATS]
        if unknown:
            raise ValueError(f"unknown format(s) {unknown}; choose from {list(DATE_FORMATS)}")
        if len(set(formats)) != len(formats):
            raise ValueError("formats must not repeat")
        self.formats = formats
        self.n_days = (LAST_DATE - FIRST_DATE).days + 1
        if n_held_out >= self.n_days:
            raise ValueError(f"n_held_out must be below the {self.n_days:,} dates, got {n_held_out:,}")

        chars = set("0123456789 ,./-") | set("".join(MONTHS + WEEKDAYS)) | set("thstndrdof")
        self.src_vocab = Vocab(sorted(chars))
        self.tgt_vocab = Vocab(list("0123456789-"))

        rng = np.random.default_rng(seed)
        self.held_out_days = np.sort(rng.choice(self.n_days, size=n_held_out, replace=False))
        self.is_held_out = np.zeros(self.n_days, dtype=bool)
        self.is_held_out[self.held_out_days] = True
        k = len(formats)
        self.held_out = (self.held_out_days[:, None] * k + np.arange(k)[None, :]).ravel()
        self.rng = np.random.default_rng(seed + 1)

    # ------------------------------------------------------------------ items
    def item(self, date, fmt):
        """The integer item for `date` written in `fmt`."""
        _check_date(date)
        if fmt not in self.formats:
            raise ValueError(f"fmt must be one of {self.formats}, got {fmt!r}")
        return (date - FIRST_DATE).days * len(self.formats) + self.formats.index(fmt)

    def _split(self, item):
        if isinstance(item, bool) or not isinstance(item, (int, np.integer)):
            raise ValueError(f"item must be an int, got {type(item).__name__} ({item!r})")
        if not 0 <= item < self.n_days * len(self.formats):
            raise ValueError(f"item must be between 0 and {self.n_days * len(self.formats) - 1}, got {item}")
        day, f = divmod(int(item), len(self.formats))
        return FIRST_DATE + _dt.timedelta(days=day), self.formats[f]

    def date(self, item):
        return self._split(item)[0]

    def format_name(self, item):
        return self._split(item)[1]

    def source(self, item):
        """The date written in its format, e.g. 'March 3rd, 2021'."""
        date, fmt = self._split(item)
        return DATE_FORMATS[fmt](date)

    def target(self, item):
        """The ISO date, e.g. '2021-03-03'."""
        return self.date(item).isoformat()

    def src_ids(self, item):
        return self.src_vocab.encode(list(self.source(item)))

    def tgt_ids(self, item):
        return self.tgt_vocab.encode(list(self.target(item)))

    # ------------------------------------------------------------------ what training needs
    def sample_train(self, k):
        """k training items: a uniform date that is not held out, in a uniform format."""
        check_positive_int("k", k)
        out = np.empty(0, dtype=np.int64)
        while len(out) < k:
            days = self.rng.integers(0, self.n_days, size=2 * k)
            days = days[~self.is_held_out[days]]
            fmts = self.rng.integers(0, len(self.formats), size=len(days))
            out = np.concatenate([out, days * len(self.formats) + fmts])
        return out[:k]

    def make_batch(self, items):
        """items -> (src (batch, n_src), tgt_in (batch, n_tgt), labels (batch, n_tgt))."""
        items = [int(i) for i in items]
        if not items:
            raise ValueError("items is empty")
        src = pad_sequences([self.src_ids(i) for i in items], self.src_vocab.pad_id)
        tgt_in, labels = shift_targets([self.tgt_ids(i) for i in items], self.tgt_vocab.bos_id,
                                       self.tgt_vocab.eos_id, self.tgt_vocab.pad_id)
        return src, tgt_in, labels

    def __repr__(self):
        return (f"DateTranslationData({len(self.formats)} formats, src vocab {len(self.src_vocab)}, "
                f"tgt vocab {len(self.tgt_vocab)}, {len(self.held_out_days)} held-out dates)")
