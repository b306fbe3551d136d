"""Lesson 11's modern pieces, each equal to its reference (transformers' Llama modules,
torch), on small random weights: fast, no pretrained file needed."""
import pytest
import torch

from course_lib.nn.attention import causal_mask
from course_lib.nn.generation import cached_step, generate, step_times, uncached_step
from course_lib.nn.llama import LlamaConfig, LlamaLM, collect_llama_attention, hf_config, reference_sharing_weights, to_multi_head
from course_lib.nn.modern import GroupedQueryAttention, KVCache, RMSNorm, SwiGLU, decoder_mask, repeat_kv
from course_lib.nn.positional import apply_rotary, rotary_cos_sin
from course_lib.nn.rotary import interleaved_order


class _TransformersLlama:
    """transformers' Llama module (the reference), imported when a test first uses it: importing
    transformers takes about 7 s, which every pytest process that collects this file paid —
    each pass of `course.py test`, each worker, a `--lesson` run that needs none of it."""

    def __getattr__(self, name):
        from transformers.models.llama import modeling_llama
        return getattr(modeling_llama, name)


hf = _TransformersLlama()

# Not the defaults (eps 1e-5, θ = 10 000): the conversion to transformers' config must carry them.
TINY = LlamaConfig(vocab_size=50, d_model=32, n_layers=2, h=4, h_kv=2, d_ff=48, eps=1e-4,
                   rope_base=500.0, max_len=64)


def _randomize(module, seed=0):
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(torch.randn(p.shape, generator=g) * 0.3 + (1.0 if p.dim() == 1 else 0.0))
    return module


@pytest.fixture(scope="module")
def tiny():
    torch.manual_seed(0)
    return _randomize(LlamaLM(TINY)).eval()


def test_rmsnorm_fused_and_formula_equal_transformers_and_torch():
    x = torch.randn(3, 5, 16) * 4 + 1
    ours = _randomize(RMSNorm(16, eps=1e-5))
    ref = hf.LlamaRMSNorm(16, eps=1e-5)
    ref.weight.data.copy_(ours.weight)
    formula = RMSNorm(16, eps=1e-5, fused=False)
    formula.weight.data.copy_(ours.weight)
    torch_norm = torch.nn.RMSNorm(16, eps=1e-5)
    torch_norm.weight.data.copy_(ours.weight)
    for other in (ref(x), formula(x), torch_norm(x)):
        torch.testing.assert_close(ours(x), other, atol=1e-6, rtol=1e-5)
    # No centring: unlike LayerNorm, a constant vector is not sent to 0.
    assert RMSNorm(4)(torch.full((1, 4), 3.0)).allclose(torch.ones(1, 4), atol=1e-5)


def test_swiglu_equals_llama_mlp():
    cfg = hf_config(TINY)
    ref, ours = hf.LlamaMLP(cfg), _randomize(SwiGLU(32, 48))
    ref.gate_proj.weight.data.copy_(ours.w_1.weight)
    ref.up_proj.weight.data.copy_(ours.w_3.weight)
    ref.down_proj.weight.data.copy_(ours.w_2.weight)
    x = torch.randn(2, 7, 32)
    torch.testing.assert_close(ours(x), ref(x), atol=1e-6, rtol=1e-5)


def test_repeat_kv_groups_consecutive_heads():
    x = torch.randn(2, 3, 5, 4)
    out = repeat_kv(x, 3)
    assert torch.equal(out, hf.repeat_kv(x, 3))
    assert torch.equal(out, x.repeat_interleave(3, dim=1))
    assert torch.equal(out[:, 4], x[:, 1])          # query head 4 uses kv head 4 // 3 = 1
    assert repeat_kv(x, 1) is x


def test_halves_rotary_equals_transformers_and_is_a_reordering_of_lesson_03s():
    cfg = hf_config(TINY)
    rope = hf.LlamaRotaryEmbedding(cfg)
    q, k = torch.randn(1, 4, 9, 8), torch.randn(1, 2, 9, 8)
    pos = torch.arange(3, 12)[None]
    cos, sin = rope(q, pos)
    q_ref, k_ref = hf.apply_rotary_pos_emb(q, k, cos, sin)
    torch.testing.assert_close(apply_rotary(q, 500.0, 3, pairs="halves"), q_ref, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(apply_rotary(k, 500.0, 3, pairs="halves"), k_ref, atol=1e-5, rtol=1e-5)
    order = interleaved_order(8)
    torch.testing.assert_close(apply_rotary(q[..., order], 500.0, 3),
                               apply_rotary(q, 500.0, 3, pairs="halves")[..., order])


def _copy_attention(ours, ref):
    for theirs, mine in (("q_proj", "w_q"), ("k_proj", "w_k"), ("v_proj", "w_v"), ("o_proj", "w_o")):
        getattr(ref, theirs).weight.data.copy_(getattr(ours, mine).weight)


def test_grouped_query_attention_equals_llama_attention():
    cfg = hf_config(TINY)
    ours = _randomize(GroupedQueryAttention(32, 4, 2))
    ref = hf.LlamaAttention(cfg, layer_idx=0).eval()
    _copy_attention(ours, ref)
    x = torch.randn(2, 6, 32)
    cos, sin = hf.LlamaRotaryEmbedding(cfg)(x, torch.arange(6)[None])
    mask = torch.zeros(1, 1, 6, 6).masked_fill(~causal_mask(6), float("-inf"))
    out_ref, w_ref = ref(x, (cos, sin), attention_mask=mask)
    out, w = ours(x, rope=rotary_cos_sin(6, 8, 500.0), need_weights=True)
    torch.testing.assert_close(out, out_ref, atol=1e-5, rtol=1e-4)
    torch.testing.assert_close(w, w_ref, atol=1e-6, rtol=0)
    # The fused fast path gives the same output.
    torch.testing.assert_close(ours(x, rope=rotary_cos_sin(6, 8, 500.0)), out, atol=1e-5, rtol=1e-4)


def test_gqa_with_h_kv_equal_h_is_multi_head_attention():
    attn = _randomize(GroupedQueryAttention(16, 2, 2, bias=True))
    from course_lib.nn.layers import MultiHeadAttention
    mha = MultiHeadAttention(16, 2)
    mha.load_state_dict(attn.state_dict())
    x = torch.randn(1, 5, 16)
    torch.testing.assert_close(attn(x), mha(x, mask=causal_mask(5)), atol=1e-6, rtol=1e-5)


def test_tiny_model_equals_transformers_on_the_same_tensors(tiny):
    ref = reference_sharing_weights(tiny)
    tokens = torch.randint(0, 50, (2, 11), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        theirs = ref(tokens, output_attentions=True)
        ours = tiny(tokens)
    torch.testing.assert_close(ours, theirs.logits, atol=1e-4, rtol=1e-4)
    for a, b in zip(collect_llama_attention(tiny, tokens), theirs.attentions):
        torch.testing.assert_close(a, b, atol=1e-6, rtol=0)


def test_cache_gives_the_same_logits_as_the_whole_sequence(tiny):
    tokens = torch.randint(0, 50, (1, 20), generator=torch.Generator().manual_seed(2))
    with torch.no_grad():
        full = tiny(tokens)
        cache = tiny.new_cache(capacity=4)                 # grows past its capacity
        parts = [tiny(tokens[:, :7], cache=cache)] + [tiny(tokens[:, i:i + 1], cache=cache) for i in range(7, 20)]
    torch.testing.assert_close(torch.cat(parts, dim=1), full, atol=1e-5, rtol=1e-4)
    assert len(cache) == 20
    assert cache.nbytes == 2 * TINY.n_layers * 1 * TINY.h_kv * 20 * TINY.d_k * 4


def test_cached_and_uncached_generation_agree(tiny):
    prompt = torch.tensor([[3, 1, 4, 1, 5]])
    a = generate(tiny, prompt, 20)
    b = generate(tiny, prompt, 20, use_cache=False)
    assert torch.equal(a, b) and a.shape == (1, 25)
    g1, g2 = torch.Generator().manual_seed(0), torch.Generator().manual_seed(0)
    assert torch.equal(generate(tiny, prompt, 10, 1.0, 5, g1), generate(tiny, prompt, 10, 1.0, 5, g2, use_cache=False))
    positions, seconds = step_times(tiny, prompt, 4)
    assert positions == [5, 6, 7, 8] and len(seconds) == 4


def test_step_functions_predict_the_next_token(tiny):
    prompt = torch.tensor([[3, 1, 4]])
    with torch.no_grad():
        expected = tiny(prompt)[:, -1]
        torch.testing.assert_close(cached_step(tiny)(prompt), expected, atol=1e-5, rtol=1e-4)
        torch.testing.assert_close(uncached_step(tiny)(prompt), expected)


def test_multi_head_version_has_the_same_logits_and_a_larger_cache(tiny):
    mha = to_multi_head(tiny)
    tokens = torch.randint(0, 50, (1, 9), generator=torch.Generator().manual_seed(3))
    with torch.no_grad():
        gqa_cache, mha_cache = tiny.new_cache(), mha.new_cache()
        torch.testing.assert_close(mha(tokens, cache=mha_cache), tiny(tokens, cache=gqa_cache), atol=1e-5, rtol=1e-4)
    assert mha_cache.nbytes == gqa_cache.nbytes * TINY.h // TINY.h_kv


def test_rotary_positions_make_the_output_shift_invariant(tiny):
    tokens = torch.randint(0, 50, (1, 8), generator=torch.Generator().manual_seed(4))
    with torch.no_grad():
        torch.testing.assert_close(tiny(tokens), tiny(tokens, offset=40), atol=1e-4, rtol=1e-4)


def test_decoder_mask():
    assert torch.equal(decoder_mask(4, 4), causal_mask(4))
    assert decoder_mask(1, 6).all()
    assert torch.equal(decoder_mask(2, 5), torch.tensor([[1, 1, 1, 1, 0], [1, 1, 1, 1, 1]], dtype=torch.bool))


def test_kv_cache_checks_its_inputs():
    cache = KVCache(2, 1, 2, 4)
    with pytest.raises(ValueError, match=r"k must be \(batch=1, h_kv=2, n, d_k=4\), got \(1, 3, 5, 4\)"):
        cache.update(0, torch.zeros(1, 3, 5, 4), torch.zeros(1, 3, 5, 4))
    with pytest.raises(ValueError, match=r"layer must be an int in \[0, 2\), got 2"):
        cache.update(2, torch.zeros(1, 2, 5, 4), torch.zeros(1, 2, 5, 4))
