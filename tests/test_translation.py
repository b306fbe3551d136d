"""The number-translation data, batching, loss, schedule and training loop (lesson 08)."""
import numpy as np
import pytest
import torch
import torch.nn.functional as F
from num2words import num2words

from course_lib.data.translation import (MAX_NUMBER, NumberTranslationData, Vocab, english, german,
                                         german_pieces, pad_sequences, parse_source, sample_numbers,
                                         shift_targets, tokenize_english, tokenize_german)
from course_lib.experiments.translator import (TrainState, TranslatorConfig,
                                               label_smoothed_cross_entropy, smoothed_targets,
                                               train_translator)
from course_lib.nn.training import warmup_cosine
from course_lib.experiments.translator_eval import (attention_for_bertviz, ERROR_KINDS, error_kind,
                                                    evaluate_exact_match, token_accuracy, translate)

EDGES = [0, 1, 7, 10, 11, 16, 17, 20, 21, 99, 100, 101, 110, 999, 1000, 1001, 1010, 1099, 1100, 1101,
         16017, 21000, 21001, 100000, 101000, 101001, 200000, 999999]


@pytest.fixture(scope="module")
def data():
    return NumberTranslationData()


def _sample(k, seed=0):
    return np.random.default_rng(seed).integers(0, MAX_NUMBER + 1, size=k).tolist()


@pytest.mark.parametrize("n", EDGES + _sample(150))
def test_fast_generation_agrees_with_num2words(n):
    assert english(n) == num2words(n)
    assert german(n) == num2words(n, lang="de")


@pytest.mark.parametrize("bad, err", [(-1, ValueError), (1_000_000, ValueError), (True, TypeError),
                                      (2.0, TypeError)])
def test_out_of_range_numbers_are_refused(bad, err):
    with pytest.raises(err, match="n must be"):
        english(bad)


def test_english_tokens_ignore_punctuation_and_case():
    assert tokenize_english("Twenty-one") == tokenize_english("twenty one") == ["twenty", "one"]
    assert tokenize_english(english(1234)) == ["one", "thousand", "two", "hundred", "and", "thirty", "four"]


def test_german_pieces_split_the_reordering_visibly():
    assert tokenize_german("einundzwanzig") == ["ein", "und", "zwanzig"]
    assert tokenize_german("siebzehn") == ["siebzehn"]
    assert tokenize_german("einhunderteins") == ["ein", "hundert", "eins"]


@pytest.mark.parametrize("n", EDGES + _sample(100, seed=1))
def test_german_tokenization_is_lossless(n):
    assert "".join(tokenize_german(german(n))) == german(n)


def test_german_tokenizer_names_what_it_cannot_split():
    with pytest.raises(ValueError, match="at 'xyz'"):
        tokenize_german("einxyz")


def test_the_inventory_is_small_and_longest_first():
    pieces = german_pieces()
    assert len(pieces) == 32 and "und" in pieces and "tausend" in pieces
    assert [len(p) for p in pieces] == sorted((len(p) for p in pieces), reverse=True)


def test_vocab_round_trip_and_unknown_words():
    v = Vocab(["one", "two"])
    assert v.itos[:3] == ["<pad>", "<bos>", "<eos>"] and len(v) == 5
    assert v.decode([1] + v.encode(["two", "one"]) + [2, 0, 0]) == ["two", "one"]
    with pytest.raises(ValueError, match=r"unknown word\(s\) \['three'\]"):
        v.encode(["three"])


@pytest.mark.parametrize("n", EDGES + _sample(100, seed=2))
def test_composed_ids_equal_tokenizing_the_strings(data, n):
    assert data.src_vocab.decode(data.src_ids(n)) == tokenize_english(english(n))
    assert data.tgt_vocab.decode(data.tgt_ids(n)) == tokenize_german(german(n))


def test_split_by_number(data):
    held = data.held_out
    assert len(held) == len(set(held.tolist())) == 1000
    digits = np.array([len(str(n)) for n in held])
    assert sorted(set(digits)) == [3, 4, 5, 6] and all((digits == d).sum() == 250 for d in (3, 4, 5, 6))
    train = data.sample_train(200_000)
    assert not np.isin(train, held).any()
    assert train.min() >= 0 and train.max() <= MAX_NUMBER


def test_the_split_is_the_same_every_time(data):
    assert np.array_equal(NumberTranslationData().held_out, data.held_out)


def test_digit_lengths_are_sampled_uniformly():
    nums = sample_numbers(np.random.default_rng(0), 60_000)
    counts = np.bincount([len(str(n)) for n in nums])[1:]
    assert len(counts) == 6 and counts.min() > 9000


def test_padding_and_target_shift():
    assert pad_sequences([[5, 6, 7], [8]], pad_id=0).tolist() == [[5, 6, 7], [8, 0, 0]]
    tgt_in, labels = shift_targets([[5, 6, 7], [8]], bos_id=1, eos_id=2, pad_id=0)
    assert tgt_in.tolist() == [[1, 5, 6, 7], [1, 8, 0, 0]]
    assert labels.tolist() == [[5, 6, 7, 2], [8, 2, 0, 0]]
    with pytest.raises(ValueError, match="empty"):
        pad_sequences([], 0)


def test_make_batch_shapes(data):
    src, tgt_in, labels = data.make_batch([21, 777777, 5])
    assert src.shape == (3, 11) and tgt_in.shape == labels.shape == (3, 12)
    assert data.tgt_vocab.decode(tgt_in[0]) == ["ein", "und", "zwanzig"]
    words = labels[:, :-1] > 2  # real pieces (not pad, bos, eos): the input is the labels shifted right
    assert torch.equal(tgt_in[:, 1:][words], labels[:, :-1][words])


def test_translator_schedule_warms_up_then_decays_to_zero():
    """The translator uses lesson 06's warm-up + cosine schedule, decaying to 0."""
    lr = [warmup_cosine(s, 10, 100, min_ratio=0.0) for s in range(100)]
    assert lr[0] == pytest.approx(0.1) and lr[9] == pytest.approx(1.0) and lr[10] == pytest.approx(1.0)
    assert all(a <= b for a, b in zip(lr[:10], lr[1:10])) and all(a >= b for a, b in zip(lr[10:], lr[11:]))
    assert warmup_cosine(100, 10, 100, min_ratio=0.0) == pytest.approx(0.0)
    data = NumberTranslationData(n_held_out=5, seed=0)
    state = TrainState.fresh(data, TranslatorConfig(d_model=16, d_ff=32, n_enc=1, n_dec=1, lr=1e-3,
                                                    warmup=10, total_steps=100))
    seen = []
    for _ in range(100):
        seen.append(state.optimizer.param_groups[0]["lr"] / 1e-3)
        state.optimizer.step()
        state.scheduler.step()
    assert seen == pytest.approx(lr)


def test_label_smoothing_matches_pytorch():
    g = torch.Generator().manual_seed(0)
    logits = torch.randn(3, 5, 9, generator=g)
    labels = torch.randint(1, 9, (3, 5), generator=g)
    labels[1, 3:] = 0
    ours = label_smoothed_cross_entropy(logits, labels, smoothing=0.1, pad_id=0)
    theirs = F.cross_entropy(logits.transpose(1, 2), labels, ignore_index=0, label_smoothing=0.1)
    assert torch.allclose(ours, theirs, atol=1e-6)
    q = smoothed_targets(torch.tensor([2]), 9, 0.1)
    assert torch.allclose(q.sum(), torch.tensor(1.0)) and q[0, 2] == pytest.approx(0.9 + 0.1 / 9)


def test_parse_source_accepts_numbers_and_words_and_explains_refusals(data):
    assert parse_source(data, "21")[0] == ["twenty", "one"]
    assert parse_source(data, "4,512")[0] == parse_source(data, "four thousand, five hundred and twelve")[0]
    with pytest.raises(ValueError, match="out of range"):
        parse_source(data, "1000000")
    with pytest.raises(ValueError, match="out of range"):
        parse_source(data, "-5")
    with pytest.raises(ValueError, match=r"unknown word\(s\) \['million'\]"):
        parse_source(data, "one million")
    with pytest.raises(ValueError, match="type a number"):
        parse_source(data, "   ")


@pytest.fixture(scope="module")
def tiny_state(data):
    cfg = TranslatorConfig(d_model=16, h=2, d_ff=32, n_enc=1, n_dec=1, batch_size=16, warmup=3, total_steps=12)
    return train_translator(TrainState.fresh(data, cfg), data, progress=False)


def test_training_runs_records_history_and_lowers_the_loss(tiny_state):
    h = tiny_state.history
    assert tiny_state.step == 12 and len(h["loss"]) == len(h["lr"]) == len(h["grad_norm"]) == 12
    assert np.mean(h["loss"][-3:]) < np.mean(h["loss"][:3])
    assert h["lr"][0] < h["lr"][2]  # warming up


def test_training_stops_at_total_steps(data, tiny_state):
    train_translator(tiny_state, data, steps=5, progress=False)
    assert tiny_state.step == 12


def test_training_is_reproducible(data):
    cfg = TranslatorConfig(d_model=16, h=2, d_ff=32, n_enc=1, n_dec=1, batch_size=8, total_steps=4)
    a = train_translator(TrainState.fresh(NumberTranslationData(), cfg), NumberTranslationData(), progress=False)
    b = train_translator(TrainState.fresh(NumberTranslationData(), cfg), NumberTranslationData(), progress=False)
    assert a.history["loss"] == b.history["loss"]


def test_evaluation_and_translation_outputs(data, tiny_state):
    m = tiny_state.model
    r = evaluate_exact_match(m, data, data.held_out[:20])
    assert 0.0 <= r["exact_match"] <= 1.0 and len(r["predicted"]) == 20 and r["correct"].dtype == bool
    assert 0.0 <= token_accuracy(m, data, data.held_out[:20]) <= 1.0
    out = translate(m, data, "twenty-one")
    assert out["source"] == ["twenty", "one"] and out["german"] == "".join(out["pieces"])
    assert len(out["cross"]) == 1 and out["cross"][0].shape == (2, len(out["pieces"]) + 1, 2)


def test_bertviz_hook_shapes(data, tiny_state):
    a = attention_for_bertviz(tiny_state.model, data, "21")
    n_src, n_tgt = len(a["src_tokens"]), len(a["tgt_tokens"])
    assert a["src_tokens"] == ["twenty", "one"] and a["tgt_tokens"][0] == "<bos>"
    assert [t.shape for t in a["attention"]["encoder"]] == [(1, 2, n_src, n_src)]
    assert [t.shape for t in a["attention"]["decoder"]] == [(1, 2, n_tgt, n_tgt)]
    assert [t.shape for t in a["attention"]["cross"]] == [(1, 2, n_tgt, n_src)]


def test_bertviz_hook_renders_offline(data, tiny_state):
    pytest.importorskip("bertviz")
    from course_lib.viz.bertviz_views import show
    a = attention_for_bertviz(tiny_state.model, data, "21")
    view = show("model", a["attention"], src_tokens=a["src_tokens"], tgt_tokens=a["tgt_tokens"])
    html = view._repr_html_() if hasattr(view, "_repr_html_") else str(view)
    assert "twenty" in html and "cdnjs" not in html


@pytest.mark.slow
def test_default_recipe_reaches_99_percent_on_held_out_numbers():
    torch.set_num_threads(1)
    data = NumberTranslationData()
    state = train_translator(TrainState.fresh(data), data, progress=False)
    assert evaluate_exact_match(state.model, data)["exact_match"] >= 0.99


@pytest.mark.parametrize("expected, predicted, kind", [
    ("drei hundert eins", "drei hundert eins", None),
    ("drei hundert eins", "drei hundert ein", "ein / eins"),
    ("acht hundert eins", "acht hundert ein hundert", "ein / eins"),
    ("drei hundert eins tausend neun", "drei hundert ein tausend neun", "eins before tausend"),
    ("sieben hundert zwanzig tausend", "sieben hundert sieben und zwanzig tausend", "units before tens"),
    ("vier tausend neunzig", "vier tausend vier und neunzig", "units before tens"),
    ("drei und dreißig tausend neun", "drei und dreißig tausend neun und dreißig", "units before tens"),
    ("sechs tausend", "sechs tausend sechs", "too short / too long"),
    ("ein tausend ein hundert", "ein tausend eins", "hundert / tausend dropped"),     # 1 100
    ("sechs hundert eins tausend ein und neunzig",                                     # 601 091
     "sechs hundert ein und neunzig tausend ein und neunzig", "units before tens"),
    ("achtzehn tausend neunzig", "achtzehn tausend achtzehn", "other"),
])
def test_error_kinds(expected, predicted, kind):
    assert error_kind(expected.split(), predicted.split()) == kind
    assert kind is None or kind in ERROR_KINDS
