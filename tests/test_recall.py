"""The long-range recall task of lesson 01 and its two models."""
import pytest
import torch

from course_lib.experiments.recall import (N_SYMBOLS, QUERY, VOCAB_SIZE, RecallAttention, RecallRNN, decode,
                               first_symbol_share, recall_accuracy, recall_batch, train_recall)


@pytest.fixture(autouse=True)
def one_thread():
    """Small models on a shared CPU: one thread is much faster, and restored afterwards."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def test_a_batch_opens_with_the_answer_and_ends_with_the_question():
    tokens, targets = recall_batch(5, 4, torch.Generator().manual_seed(0))
    assert tokens.shape == (4, 7) and targets.shape == (4,)
    assert torch.equal(tokens[:, 0], targets)
    assert (targets < N_SYMBOLS).all()
    assert ((tokens[:, 1:-1] >= N_SYMBOLS) & (tokens[:, 1:-1] < QUERY)).all()   # distractors only
    assert (tokens[:, -1] == QUERY).all() and tokens.max() < VOCAB_SIZE


def test_zero_distractors_and_decode():
    tokens, _ = recall_batch(0, 1, torch.Generator().manual_seed(0))
    assert tokens.shape == (1, 2)
    assert decode(torch.tensor([2, 8, 17, QUERY])) == "C 0 9 ?"


def test_same_generator_seed_same_batch():
    a = recall_batch(3, 8, torch.Generator().manual_seed(7))
    b = recall_batch(3, 8, torch.Generator().manual_seed(7))
    assert all(torch.equal(x, y) for x, y in zip(a, b))


@pytest.mark.parametrize("model_cls", [RecallRNN, RecallAttention])
def test_models_map_tokens_to_symbol_logits(model_cls):
    tokens, _ = recall_batch(4, 3)
    assert model_cls(d_model=16)(tokens).shape == (3, N_SYMBOLS)


def test_one_attention_layer_learns_recall_over_many_distractors():
    torch.manual_seed(0)
    model = RecallAttention(d_model=32)
    steps = train_recall(model, 16, max_steps=300, seed=0)
    assert steps < 300                       # stopped early: solved
    assert recall_accuracy(model, 16, n_eval=300) > 0.95


def test_rnn_learns_recall_over_two_distractors():
    torch.manual_seed(0)
    model = RecallRNN(d_model=32)
    train_recall(model, 2, max_steps=300, seed=0)
    assert recall_accuracy(model, 2, n_eval=300) > 0.95
    # a model that answers right must hold the symbol in its last state...
    assert first_symbol_share(model, 2) > 0.9
    # ... while an untrained one, like the ones that fail to learn under many distractors, has
    # nothing of it left in h_n after 32 of them
    torch.manual_seed(0)
    assert first_symbol_share(RecallRNN(d_model=32), 32) < 0.01


def test_first_symbol_share_reads_only_an_rnn():
    torch.manual_seed(0)
    share = first_symbol_share(RecallRNN(d_model=8), 0, count=20)
    assert 0.0 < share <= 1.0
    with pytest.raises(TypeError, match="reads a RecallRNN's hidden state, got RecallAttention"):
        first_symbol_share(RecallAttention(8), 2)


@pytest.mark.parametrize("call, message", [
    (lambda: recall_batch(-1, 4), "n must be >= 0"),
    (lambda: recall_batch(2, 0), "batch_size must be positive"),
    (lambda: train_recall(RecallRNN(8), 2, lr=0), "lr must be > 0"),
    (lambda: recall_accuracy(RecallRNN(8), 2, n_eval=0), "n_eval must be positive"),
    (lambda: RecallRNN(8)(torch.tensor([[0, VOCAB_SIZE]])), "must be < vocab_size"),
])
def test_bad_arguments_are_named(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_a_float_length_is_a_type_error():
    with pytest.raises(TypeError, match="n must be an int"):
        recall_batch(2.5, 4)
