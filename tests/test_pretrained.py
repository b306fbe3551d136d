"""Our from-scratch BertEncoder with all-MiniLM-L6-v2's weights reproduces the
reference implementation (Hugging Face transformers' BertModel), offline."""
import pytest
import torch

from course_lib.nn.models import collect_attention
from course_lib.nn.pretrained import (
    BertEncoder,
    hf_to_course_names,
    load_config,
    load_encoder,
    load_reference,
    load_tokenizer,
    mean_pool,
    minilm_path,
    sentence_embeddings,
    tokenize,
)

SENTENCES = [
    "The animal didn't cross the street because it was too tired",
    "The animal didn't cross the street because it was too wide",
    "A cat sat on the mat.",        # shorter: padding in the batch
]


@pytest.fixture(scope="module")
def models():
    torch.manual_seed(0)
    return load_reference(), load_encoder(), load_tokenizer()


@pytest.fixture(scope="module")
def outputs(models):
    ref, ours, tok = models
    batch, tokens = tokenize(tok, SENTENCES)
    with torch.no_grad():
        theirs = ref(**batch, output_hidden_states=True)
        mine = ours.hidden_states(batch["input_ids"], batch["attention_mask"], batch["token_type_ids"])
    attn = collect_attention(ours, batch["input_ids"], batch["attention_mask"], batch["token_type_ids"])
    return batch, tokens, theirs, mine, attn["encoder"]


def test_the_model_ships_with_the_package():
    path = minilm_path()
    assert (path / "model.safetensors").exists() and (path / "vocab.txt").exists()
    config = load_config()
    assert (config["num_hidden_layers"], config["num_attention_heads"], config["hidden_size"]) == (6, 12, 384)


def test_tokenizer(models):
    _, tokens = tokenize(models[2], SENTENCES[0])
    assert tokens[0] == ["[CLS]", "the", "animal", "didn", "'", "t", "cross", "the", "street", "because",
                         "it", "was", "too", "tired", "[SEP]"]


def test_every_weight_is_mapped_once(models):
    ref, ours, _ = models
    names = hf_to_course_names(6)
    assert sorted(names.values()) == sorted(ours.state_dict())
    used = {k for k in ref.state_dict() if not k.startswith("pooler.")}
    assert set(names) == used
    for hf, mine in names.items():
        assert torch.equal(ref.state_dict()[hf], ours.state_dict()[mine]), hf


def test_hidden_states_match_the_reference_at_every_layer(outputs):
    batch, _, theirs, mine, _ = outputs
    assert len(theirs.hidden_states) == len(mine) == 7        # embeddings + 6 layers
    real = batch["attention_mask"].bool()
    for layer, (a, b) in enumerate(zip(theirs.hidden_states, mine)):
        assert (a - b).abs().max() <= 1e-4, f"layer {layer}"            # every position
        assert (a[real] - b[real]).abs().max() <= 2e-5, f"layer {layer}"   # real tokens


def test_attention_maps_match_the_reference(outputs):
    _, _, theirs, _, attn = outputs
    assert len(attn) == len(theirs.attentions) == 6
    for layer, (a, b) in enumerate(zip(theirs.attentions, attn)):
        assert a.shape == b.shape == (3, 12, 15, 15)
        assert (a - b).abs().max() <= 1e-5, f"layer {layer}"


def test_bertviz_views_of_the_reference_model(outputs):
    from course_lib.viz.bertviz_views import show

    batch, tokens, theirs, _, _ = outputs
    for view in ("head", "model"):
        v = show(view, theirs.attentions, tokens=tokens[1], batch_index=1)   # HF's tuple, as returned
        assert "cdnjs" not in v.data and '"street"' in v.data


def test_padding_gets_no_attention_and_does_not_change_a_sentence(models, outputs):
    _, ours, tok = models
    batch, _, _, mine, attn = outputs
    n = int(batch["attention_mask"][2].sum())
    assert attn[0][2, :, :, n:].abs().max() == 0
    alone, _ = tokenize(tok, SENTENCES[2])
    with torch.no_grad():
        solo = ours(alone["input_ids"], alone["attention_mask"])
    assert (solo[0] - mine[-1][2, :n]).abs().max() <= 1e-5


def test_sentence_embeddings_match_and_mean_pool_ignores_padding(models):
    ref, ours, tok = models
    e_ours = sentence_embeddings(ours, tok, SENTENCES)
    e_ref = sentence_embeddings(ref, tok, SENTENCES)
    assert (e_ours - e_ref).abs().max() <= 1e-5
    torch.testing.assert_close(e_ours.norm(dim=-1), torch.ones(3))
    sim = e_ours @ e_ours.T
    assert sim[0, 1] > 0.7 > sim[0, 2]          # same story vs. unrelated sentence
    h = torch.randn(2, 4, 3)
    m = torch.tensor([[1, 1, 0, 0], [1, 1, 1, 1]])
    torch.testing.assert_close(mean_pool(h, m), torch.stack([h[0, :2].mean(0), h[1].mean(0)]))


def test_token_types_are_used(models):
    _, ours, tok = models
    batch, _ = tokenize(tok, SENTENCES[0])
    with torch.no_grad():
        a = ours(batch["input_ids"])
        b = ours(batch["input_ids"], token_types=torch.ones_like(batch["input_ids"]))
    assert (a - b).abs().max() > 1e-3


def test_bad_inputs_are_named():
    model = BertEncoder(vocab_size=50, d_model=8, h=2, d_ff=16, n_layers=1, max_len=6)
    with pytest.raises(ValueError, match="token ids must be < vocab_size=50"):
        model(torch.tensor([[1, 50]]))
    with pytest.raises(ValueError, match="longer than the positional table"):
        model(torch.ones(1, 7, dtype=torch.long))
    with pytest.raises(ValueError, match="attention_mask has shape"):
        model(torch.ones(1, 3, dtype=torch.long), torch.ones(1, 4))
    with pytest.raises(ValueError, match="only GELU"):
        BertEncoder.from_config({**load_config(), "hidden_act": "relu"})
