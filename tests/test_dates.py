"""Dates written many ways -> ISO: generator, split by date, and the adapter to translation.py."""
import datetime as dt

import numpy as np
import pytest
import torch

from course_lib.data.dates import (
    DATE_FORMATS, FIRST_DATE, LAST_DATE, DateTranslationData, format_date, ordinal, parse_two_digit_year,
)
from course_lib.experiments.translator import TrainState, TranslatorConfig, train_translator
from course_lib.experiments.translator_eval import evaluate_exact_match


@pytest.fixture(scope="module")
def data():
    return DateTranslationData(n_held_out=50, seed=0)


def test_formats_write_the_examples_of_the_docstring():
    d = dt.date(2021, 3, 3)
    assert format_date(d, "day month year") == "3 March 2021"
    assert format_date(d, "month day, year") == "March 3rd, 2021"
    assert format_date(d, "weekday, day month year") == "Wednesday, 3 March 2021"
    assert format_date(d, "day mon year") == "3 Mar 2021"
    assert format_date(d, "the day of month year") == "the 3rd of March 2021"
    assert format_date(d, "year-m-d") == "2021-3-3"
    assert format_date(d, "d.m.yy") == "3.3.21"
    # US order: month first.
    assert format_date(dt.date(2021, 3, 4), "US mm/dd/yyyy") == "03/04/2021"
    assert format_date(dt.date(2021, 3, 4), "d.m.yy") == "4.3.21"


@pytest.mark.parametrize("day, text", [(1, "1st"), (2, "2nd"), (3, "3rd"), (4, "4th"), (11, "11th"),
                                       (12, "12th"), (13, "13th"), (21, "21st"), (22, "22nd"), (31, "31st")])
def test_ordinal_suffixes(day, text):
    assert ordinal(day) == text


def test_weekdays_agree_with_datetime():
    for date in [dt.date(1950, 1, 1), dt.date(2000, 2, 29), dt.date(2049, 12, 31)]:
        assert format_date(date, "weekday, day month year").startswith(date.strftime("%A"))


def test_every_format_parses_back_to_its_date():
    """Each format determines its date: strptime (C locale month names) reads it back."""
    patterns = {"day month year": "%d %B %Y", "weekday, day month year": "%A, %d %B %Y", "day mon year": "%d %b %Y",
                "US mm/dd/yyyy": "%m/%d/%Y", "year-m-d": "%Y-%m-%d"}
    rng = np.random.default_rng(0)
    for offset in rng.integers(0, (LAST_DATE - FIRST_DATE).days + 1, size=200):
        date = FIRST_DATE + dt.timedelta(days=int(offset))
        for fmt, pattern in patterns.items():
            assert dt.datetime.strptime(format_date(date, fmt), pattern).date() == date
        d, m, yy = map(int, format_date(date, "d.m.yy").split("."))
        assert dt.date(parse_two_digit_year(yy), m, d) == date


def test_two_digit_year_pivot():
    assert parse_two_digit_year(50) == 1950 and parse_two_digit_year(99) == 1999
    assert parse_two_digit_year(0) == 2000 and parse_two_digit_year(49) == 2049


def test_held_out_dates_never_appear_in_training(data):
    k = len(data.formats)
    assert len(data.held_out) == 50 * k
    held_days = set(data.held_out // k)
    train_days = set(data.sample_train(20_000) // k)
    assert held_days.isdisjoint(train_days)
    assert len(train_days) > 10_000  # and training covers most of the calendar


def test_sampler_is_seeded_and_covers_every_format():
    a, b = DateTranslationData(n_held_out=10, seed=3), DateTranslationData(n_held_out=10, seed=3)
    assert np.array_equal(a.held_out, b.held_out)
    assert np.array_equal(a.sample_train(100), b.sample_train(100))
    assert set(a.sample_train(1000) % len(a.formats)) == set(range(len(a.formats)))


def test_items_round_trip(data):
    date = dt.date(2021, 3, 3)
    item = data.item(date, "month day, year")
    assert data.date(item) == date and data.format_name(item) == "month day, year"
    assert data.source(item) == "March 3rd, 2021" and data.target(item) == "2021-03-03"
    assert "".join(data.src_vocab.decode(data.src_ids(item))) == "March 3rd, 2021"
    assert "".join(data.tgt_vocab.decode(data.tgt_ids(item))) == "2021-03-03"


def test_every_source_character_is_in_the_vocabulary_and_fits_the_model(data):
    longest = 0
    for day in range(0, data.n_days, 7):
        for f in range(len(data.formats)):
            ids = data.src_ids(day * len(data.formats) + f)
            longest = max(longest, len(ids))
    assert longest <= 32  # build_translator's max_len


def test_make_batch_shapes_and_teacher_forcing(data):
    src, tgt_in, labels = data.make_batch(data.held_out[:5])
    assert src.shape[0] == tgt_in.shape[0] == labels.shape[0] == 5
    assert tgt_in.shape[1] == labels.shape[1] == 11  # ISO date: 10 characters + <bos>/<eos>
    assert (tgt_in[:, 0] == data.tgt_vocab.bos_id).all()
    assert torch.equal(tgt_in[:, 1:], labels[:, :-1])
    assert (labels[:, -1] == data.tgt_vocab.eos_id).all()


@pytest.mark.parametrize("kwargs, match", [
    ({"n_held_out": 0}, "n_held_out must be positive"),
    ({"n_held_out": 10**6}, "n_held_out must be below"),
    ({"seed": -1}, "seed must be"),
    ({"formats": []}, "at least one format"),
    ({"formats": ["iso week"]}, "unknown format"),
    ({"formats": ["year-m-d", "year-m-d"]}, "must not repeat"),
])
def test_bad_arguments_are_refused(kwargs, match):
    with pytest.raises(ValueError, match=match):
        DateTranslationData(**kwargs)


def test_bad_dates_formats_and_items_are_refused(data):
    with pytest.raises(ValueError, match="between 1950-01-01 and 2049-12-31"):
        format_date(dt.date(2050, 1, 1), "year-m-d")
    with pytest.raises(ValueError, match="datetime.date"):
        format_date("2021-03-03", "year-m-d")
    with pytest.raises(ValueError, match="fmt must be one of"):
        format_date(dt.date(2021, 3, 3), "%d/%m")
    with pytest.raises(ValueError, match="item must be between"):
        data.source(-1)
    with pytest.raises(ValueError, match="yy must be"):
        parse_two_digit_year(100)
    with pytest.raises(ValueError, match="items is empty"):
        data.make_batch([])


def test_translation_pipeline_trains_on_dates_unchanged():
    """A few steps of the unchanged training loop and greedy exact match run on dates."""
    torch.set_num_threads(1)
    data = DateTranslationData(n_held_out=5, seed=0)
    config = TranslatorConfig(d_model=32, d_ff=64, n_enc=1, n_dec=1, batch_size=16, total_steps=6, warmup=2)
    state = train_translator(TrainState.fresh(data, config), data, progress=False)
    assert state.step == 6 and np.isfinite(state.history["loss"]).all()
    result = evaluate_exact_match(state.model, data)
    assert len(result["predicted"]) == len(data.held_out)
    assert 0.0 <= result["exact_match"] <= 1.0
