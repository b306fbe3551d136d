"""SmolLM2-135M on the course's own code equals transformers' LlamaForCausalLM, loaded by
transformers' own GGUF reader: weights bit for bit, logits, attention, greedy text.
Then every bad input a learner can give the loader and the generator, one clear line each.

The pretrained model is loaded once per session (`slow` tests, about a minute in all).
"""
import numpy as np
import pytest
import torch

from course_lib.nn.generation import generate, generate_text
from course_lib.nn.llama import (LlamaConfig, LlamaLM, collect_llama_attention, load_gguf, load_reference,
                              load_tokenizer, read_gguf_config, smollm2_path, tensor_types)

PROMPTS = [
    "The animal didn't cross the street because it was too tired",
    "The animal didn't cross the street because it was too wide",
    "Once upon a time",
    "def fibonacci(n):\n    if n < 2:\n        return n",
    "The capital of France is Paris. The capital of Germany is",
]


@pytest.fixture(scope="session")
def smollm():
    torch.set_num_threads(1)
    return load_gguf(), load_reference(attn_implementation="eager"), load_tokenizer()


def _ids(tokenizer, text):
    return torch.tensor([tokenizer.encode(text)])


@pytest.mark.slow
def test_config_read_from_the_file():
    assert read_gguf_config() == LlamaConfig(vocab_size=49152, d_model=576, n_layers=30, h=9, h_kv=3,
                                             d_ff=1536, eps=pytest.approx(1e-5), rope_base=100_000.0,
                                             max_len=8192, tie_embeddings=True)
    assert tensor_types() == {"Q4_1": 210, "F32": 61, "Q8_0": 1}     # 4-bit matrices, 8-bit embedding


@pytest.mark.slow
def test_every_tensor_equals_transformers_own_gguf_loader(smollm):
    ours, ref, _ = smollm
    theirs = ref.state_dict()
    mine = ours.state_dict()
    assert len(mine) == 272
    pairs = {"embed.weight": "model.embed_tokens.weight", "norm.weight": "model.norm.weight"}
    hf = {"attn.w_q": "self_attn.q_proj", "attn.w_k": "self_attn.k_proj", "attn.w_v": "self_attn.v_proj",
          "attn.w_o": "self_attn.o_proj", "ffn.w_1": "mlp.gate_proj", "ffn.w_3": "mlp.up_proj",
          "ffn.w_2": "mlp.down_proj", "attn_norm": "input_layernorm", "ffn_norm": "post_attention_layernorm"}
    for i in range(30):
        for o, t in hf.items():
            pairs[f"blocks.{i}.{o}.weight"] = f"model.layers.{i}.{t}.weight"
    assert set(pairs) == set(mine)
    for o, t in pairs.items():
        assert torch.equal(mine[o], theirs[t]), o     # W^Q, W^K rows un-permuted exactly like theirs


@pytest.mark.slow
def test_logits_and_attention_equal_the_reference(smollm):
    ours, ref, tok = smollm
    for text in PROMPTS:
        ids = _ids(tok, text)
        with torch.no_grad():
            theirs = ref(ids, output_attentions=True)
            logits = ours(ids)
        scale = theirs.logits.abs().max()
        assert (logits - theirs.logits).abs().max() <= 1e-4 * scale, text
        for layer, (a, b) in enumerate(zip(collect_llama_attention(ours, ids), theirs.attentions)):
            assert (a - b).abs().max() <= 1e-5, (text, layer)


@pytest.mark.slow
def test_greedy_generation_is_identical_for_50_tokens(smollm):
    ours, ref, tok = smollm
    ids = _ids(tok, "Once upon a time")
    mine = generate(ours, ids, 50)
    with torch.no_grad():
        theirs = ref.generate(ids, max_new_tokens=50, do_sample=False, min_new_tokens=50)
    assert torch.equal(mine, theirs)
    assert torch.equal(mine, generate(ours, ids, 50, use_cache=False))    # the cache changes nothing
    assert tok.decode(mine[0]).startswith("Once upon a time")


@pytest.mark.slow
def test_it_attends_to_animal_in_some_head(smollm):
    ours, _, tok = smollm
    ids = _ids(tok, PROMPTS[0])
    pieces = tok.convert_ids_to_tokens(ids[0])
    it, animal = pieces.index("Ġit"), pieces.index("Ġanimal")
    weights = torch.stack([a[0, :, it, animal] for a in collect_llama_attention(ours, ids)])   # (layers, h)
    assert weights.max() >= 0.4


@pytest.mark.slow
def test_tokenizer_is_the_files_own_bpe(smollm):
    *_, tok = smollm
    assert len(tok) == 49152
    assert tok.convert_ids_to_tokens(tok.encode("Once upon a time")) == ["Once", "Ġupon", "Ġa", "Ġtime"]


@pytest.mark.slow
def test_a_prompt_longer_than_the_real_context_is_refused_before_any_work(smollm):
    ours, *_ = smollm
    with pytest.raises(ValueError, match=r"^the prompt has 8193 tokens, longer than the context window of 8192$"):
        generate(ours, torch.zeros(1, 8193, dtype=torch.long), 1)


# ----------------------------------------------------------------------------- bad input
TINY = LlamaConfig(vocab_size=20, d_model=16, n_layers=1, h=2, h_kv=1, d_ff=8, max_len=12)


@pytest.fixture(scope="module")
def tiny():
    return LlamaLM(TINY).eval()


@pytest.mark.parametrize("call, error, message", [
    (lambda m: generate(m, torch.zeros(1, 13, dtype=torch.long), 1), ValueError,
     r"^the prompt has 13 tokens, longer than the context window of 12$"),
    (lambda m: generate(m, torch.zeros(1, 10, dtype=torch.long), 5), ValueError,
     r"^10 prompt tokens \+ 5 new ones exceed the context window of 12; ask for at most 2 new tokens$"),
    (lambda m: m(torch.zeros(1, 13, dtype=torch.long)), ValueError,
     r"^13 positions do not fit the context window of 12 tokens"),
    (lambda m: generate(m, torch.zeros(1, 0, dtype=torch.long), 3), ValueError,
     r"^tokens must be \(batch, n\) with n ≥ 1, got shape \(1, 0\)$"),
    (lambda m: generate_text(m, None, ""), ValueError, r"^the prompt is empty"),
    (lambda m: generate(m, torch.zeros(1, 2, dtype=torch.long), 3, temperature=-0.5), ValueError,
     r"^temperature must be >= 0 \(0 = greedy\), got -0.5$"),
    (lambda m: generate(m, torch.zeros(1, 2, dtype=torch.long), 3, 1.0, top_k=21), ValueError,
     r"^top_k=21 is larger than the vocabulary \(20 tokens\)$"),
    (lambda m: generate(torch.nn.Linear(2, 2), torch.zeros(1, 2, dtype=torch.long), 3), TypeError,
     r"^model must be a LlamaLM, got Linear$"),
])
def test_bad_generation_requests_say_what_is_wrong(tiny, call, error, message):
    with pytest.raises(error, match=message):
        call(tiny)


def test_missing_gguf_file(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"^no GGUF file at .*nothing\.gguf$"):
        load_gguf(tmp_path / "nothing.gguf")


@pytest.mark.parametrize("n_bytes", [100, 20_000_000, -1000])   # in the header, the tensors, the last one
def test_truncated_gguf_file(tmp_path, n_bytes):
    path = tmp_path / "cut.gguf"
    with open(smollm2_path(), "rb") as src, open(path, "wb") as dst:
        dst.write(src.read(n_bytes % smollm2_path().stat().st_size))
    with pytest.raises(ValueError, match=r"cut.gguf is not a complete GGUF file \(truncated or corrupt\): "):
        load_gguf(path)


def test_gguf_file_of_another_architecture(tmp_path):
    import gguf

    path = tmp_path / "gpt2.gguf"
    writer = gguf.GGUFWriter(str(path), "gpt2")
    writer.add_block_count(1)
    writer.add_tensor("token_embd.weight", np.zeros((4, 8), dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    with pytest.raises(ValueError, match=r"holds a 'gpt2' model; this loader reads Llama-architecture GGUF files only$"):
        load_gguf(path)
    with pytest.raises(ValueError, match=r"holds a 'gpt2' model"):
        load_tokenizer(path)
