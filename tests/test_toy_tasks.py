"""The bindings task of lessons 04-05: data, relation masks, the tiny model, head scores."""
import pytest
import torch

from course_lib.experiments.toy_tasks import (BINDING_VOCAB, IGNORE, LETTERS, N_DIGITS, BindingModel, attention_by_layer,
                                  binding_accuracy, bindings_batch, head_relation_scores, relation_masks,
                                  token_labels, train_binding_model)


@pytest.fixture(autouse=True)
def one_thread():
    """Tiny models: one thread is much faster than two on a busy machine."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)

FIRST_QUERY = len(LETTERS) * N_DIGITS


def _batch(seed=0, batch=64, n=12):
    return bindings_batch(batch, n, torch.Generator().manual_seed(seed))


def test_sequences_follow_the_rules_and_targets_are_right():
    b = _batch()
    for toks, prev, recall in zip(b.tokens.tolist(), b.prev.tolist(), b.recall.tolist()):
        bound = {}
        for t, tok in enumerate(toks):
            if tok < FIRST_QUERY:
                letter, digit = divmod(tok, N_DIGITS)
                assert letter not in bound, "a letter is bound twice"
                bound[letter] = digit
                assert recall[t] == IGNORE
            else:
                letter = tok - FIRST_QUERY
                assert letter in bound, "a query for a letter not bound before it"
                assert recall[t] == bound[letter]
            if t == 0 or toks[t - 1] >= FIRST_QUERY:
                assert prev[t] == IGNORE
            else:
                assert prev[t] == toks[t - 1] % N_DIGITS
        assert toks[0] < FIRST_QUERY and toks[1] < FIRST_QUERY


def test_same_generator_seed_same_batch_and_labels():
    a, b = _batch(3), _batch(3)
    assert torch.equal(a.tokens, b.tokens) and torch.equal(a.recall, b.recall)
    assert token_labels(torch.tensor([0, 7, FIRST_QUERY + 2])) == ["a0", "b2", "c?"]
    assert len(BINDING_VOCAB) == FIRST_QUERY + len(LETTERS)


@pytest.mark.parametrize("kwargs, message", [
    (dict(batch=0), "batch must be positive"),
    (dict(batch=2, n=0), "n must be positive"),
    (dict(batch=2, p_bind=0.0), "p_bind must be in"),
])
def test_bad_arguments_are_named(kwargs, message):
    with pytest.raises(ValueError, match=message):
        bindings_batch(**kwargs)


def test_relation_masks_point_where_the_relations_point():
    b = _batch(1, batch=8)
    prev, match = relation_masks(b.tokens)
    assert prev.shape == match.shape == (8, 12, 12)
    assert prev[:, 0].sum() == 0 and prev[:, 5, 4].all()
    is_query = b.tokens >= FIRST_QUERY
    assert torch.equal(match.sum(-1), is_query.long())      # every query has exactly one binding
    for i, t in zip(*torch.nonzero(is_query, as_tuple=True)):
        j = match[i, t].nonzero().item()
        assert b.tokens[i, j] // N_DIGITS == b.tokens[i, t] - FIRST_QUERY and j < t


def test_model_shapes_and_length_check():
    torch.manual_seed(0)
    model = BindingModel(d_model=16, h=2, n_layers=2, max_len=12)
    prev_logits, recall_logits = model(_batch(batch=3).tokens)
    assert prev_logits.shape == recall_logits.shape == (3, 12, N_DIGITS)
    with pytest.raises(ValueError, match="max_len=12"):
        model(torch.zeros(1, 13, dtype=torch.long))
    weights = attention_by_layer(model, _batch(batch=3).tokens)
    assert len(weights) == 2 and weights[0].shape == (3, 2, 12, 12)
    assert torch.allclose(weights[1].sum(-1), torch.ones(3, 2, 12))


def test_scores_of_ideal_heads():
    tokens = _batch(2, batch=16).tokens
    prev, match = relation_masks(tokens)
    prev_head = prev.float()
    prev_head[:, 0, 0] = 1.0                                 # position 0 has no previous token
    match_head = torch.where(match.any(-1, keepdim=True), match.float(), torch.eye(12))
    weights = [torch.stack([prev_head, match_head], dim=1)]  # one layer, two heads
    s = head_relation_scores(weights, tokens)
    assert s.shape == (1, 2, 2)
    assert s[0, 0, 0] == 1 and s[0, 1, 1] == 1               # each ideal head scores 1 on its relation
    assert s[0, 0, 1] == 0 and s[0, 1, 0] == 0               # overlaps excluded: 0 on the other


@pytest.mark.slow
def test_two_heads_learn_both_relations_quickly():
    torch.manual_seed(0)
    model = BindingModel(d_model=32, h=2, n_layers=1)
    losses = train_binding_model(model, steps=150, lr=1e-2, seed=0)
    assert losses[-1] < losses[0] / 5
    acc = binding_accuracy(model, examples=300)
    assert acc["prev"] > 0.95 and acc["recall"] > 0.95
