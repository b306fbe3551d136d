"""Hints only when true (issue 44).

1. Every pair of planted mistakes of a checker does different things on the check's inputs (or
   the two share one hint): a hint shown for a match is a diagnosis, not a coincidence.
2. Exercise 2.1 with the max taken without keepdim gets the max's hint, not the sum's (both
   crash alike on a 5 × 7 input).
3. Mistakes that no checker plants, written as learners write them, get a failed property of the
   right answer or the smallest input where they differ — never a recipe, never a planted hint.
4. Every property holds for the reference and every valid alternative (a property that a right
   answer breaks would blame a right line).
"""
import math

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import course_lib.exercises  # noqa: F401  (fills the registry)
from course_lib.exercises import framework
from course_lib.exercises.framework import WRONG

EXERCISES = sorted(framework.REGISTRY.values(), key=lambda e: e.name)

# Words of the recipe-style generic hints issue 44 removed: none may come back.
RECIPE_WORDS = ["by hand", "step by step", "compute gate", "compare with", "should be -log",
                "follow the", "print your", "one step at a time", "then softmax("]


def _behaviour(ex, fn, inputs):
    return [ex._call(fn, args) for args in inputs]


@pytest.mark.parametrize("ex", EXERCISES, ids=[e.name for e in EXERCISES])
def test_planted_mistakes_differ_from_one_another(ex):
    """On the check's inputs (trials and probes), two mistakes with different hints never do
    the same thing — the same crash, or close values on every input."""
    inputs = ex._inputs()
    runs = [_behaviour(ex, m.fn, inputs) for m in ex.mistakes]
    for i, a in enumerate(runs):
        for j in range(i + 1, len(runs)):
            if ex.mistakes[i].hint == ex.mistakes[j].hint:
                continue
            same = all(ex._same_behaviour(x, y) for x, y in zip(a, runs[j]))
            assert not same, f"{ex.name}: planted mistakes {i} and {j} cannot be told apart"


@pytest.mark.parametrize("ex", EXERCISES, ids=[e.name for e in EXERCISES])
def test_every_property_holds_for_every_right_answer(ex):
    from course_lib.exercises.feedback import check_properties
    inputs = ex._inputs()
    for fn in [ex.reference, *ex.alternatives]:
        runs = _behaviour(ex, fn, inputs)

        def again(args, fn=fn):
            return ex._call(fn, args).value
        said = check_properties(ex.properties, [(a, r.value) for a, r in zip(inputs, runs)], again)
        assert said is None, f"{ex.name}: a right answer fails a property: {said}"


def test_a_max_without_keepdim_is_named_not_the_sum():
    """Issue 44: `scores.max(dim=-1).values` without keepdim crashed like `e.sum(dim=-1)` without
    it, and the sum's hint blamed the one reduction that had keepdim."""
    def softmax(scores):
        m = scores.max(dim=-1).values          # the slip: no keepdim
        e = torch.exp(scores - m)
        return e / e.sum(dim=-1, keepdim=True)  # right
    v = framework.REGISTRY["softmax"].verdict(softmax)
    assert v.status == WRONG and "max" in v.message and "keepdim" in v.message, v.message
    assert "e.sum" not in v.message, v.message


# ------------------------------------------------------------- mistakes no checker plants

def _scores(q, k):
    return q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])


class _SelfAttention(nn.Module):
    def __init__(self, d_model, d_k, d_v, forward=None):
        super().__init__()
        self.w_q = nn.Linear(d_model, d_k, bias=False)
        self.w_k = nn.Linear(d_model, d_k, bias=False)
        self.w_v = nn.Linear(d_model, d_v, bias=False)
        self._forward = forward

    def forward(self, x):
        return self._forward(self, x)


def _self_attention(body):
    return lambda d_model, d_k, d_v: _SelfAttention(d_model, d_k, d_v, body)


def _softmax_no_exp(s):
    e = s - s.max(dim=-1, keepdim=True).values          # the exponential forgotten
    return e / e.sum(dim=-1, keepdim=True)


def _softmax_max_in_numerator_only(s):
    e = torch.exp(s - s.max(dim=-1, keepdim=True).values)
    return e / torch.exp(s).sum(dim=-1, keepdim=True)


def _subclass(name, forward):
    """A learner's class: the reference's constructor (its parts), their own forward."""
    return type("Learner", (framework.REGISTRY[name].reference,), {"forward": forward})


def _mha_forward(scale=None, causal=False):
    def forward(self, x):
        b, n, d = x.shape
        q, k, v = (w(x).view(b, n, self.h, self.d_k).transpose(1, 2) for w in (self.w_q, self.w_k, self.w_v))
        s = q @ k.transpose(-2, -1) / math.sqrt(self.d_k if scale is None else scale(x))
        if causal:
            s = s.masked_fill(~torch.ones(n, n, dtype=torch.bool).tril(), float("-inf"))
        return self.w_o((torch.softmax(s, -1) @ v).transpose(1, 2).reshape(b, n, d))
    return forward


def _rnn(step, reverse=False, h0=torch.zeros):
    def rnn_forward(x, W, U, b):
        h, states = h0(x.shape[0], W.shape[0]), {}
        for t in (reversed(range(x.shape[1])) if reverse else range(x.shape[1])):
            h = step(h, x[:, t], W, U, b)
            states[t] = h
        return torch.stack([states[t] for t in range(x.shape[1])], dim=1)
    return rnn_forward


def _grad(loss, norm):
    def grad_norm(rnn, x, h0):
        h0 = h0.clone().requires_grad_()
        loss(rnn(x, h0)).backward()
        return norm(h0.grad)
    return grad_norm


def _table(fn):
    def sinusoidal_table(length, d_model, base=10000.0):
        pos = torch.arange(length, dtype=torch.float32)[:, None]
        j = torch.arange(d_model)
        angle = pos / base ** (2 * (j // 2) / d_model)
        return fn(angle, j)
    return sinusoidal_table


def _masked(fill_scores=None, scale=None):
    def masked_attention(q, k, v, mask):
        s = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1] if scale is None else scale(q, k))
        if fill_scores is not None:
            s = fill_scores(s, mask)
        w = torch.softmax(s, dim=-1)
        return w @ v, w
    return masked_attention


def _probs(fn):
    def next_token_probs(logits, temperature, top_k):
        if temperature == 0:
            return F.one_hot(logits.argmax(-1), logits.shape[-1]).float()
        return fn(logits, temperature, top_k)
    return next_token_probs


def _topk_keep(n_extra):
    def probs(logits, t, k):
        if k is not None:
            kth = torch.topk(logits, min(k + n_extra, logits.shape[-1]), dim=-1).values[..., -1:]
            logits = logits.masked_fill(logits < kth, float("-inf"))
        return torch.softmax(logits / t, dim=-1)
    return probs


def _generate(pick, reverse_prompt=False):
    def generate(model, tokens, max_new_tokens, temperature=1.0, top_k=None, generator=None):
        from course_lib.nn.decoding import next_token_probs
        out = tokens.flip(1) if reverse_prompt else tokens
        for _ in range(max_new_tokens):
            logits = model(tokens[:, -model.max_len:])[:, -1, :]
            if temperature == 0 or pick == "argmin":
                nxt = (logits.argmin if pick == "argmin" else logits.argmax)(-1, keepdim=True)
            else:
                nxt = torch.multinomial(next_token_probs(logits, temperature, top_k), 1, generator=generator)
            tokens, out = torch.cat([tokens, nxt], 1), torch.cat([out, nxt], 1)
        return out
    return generate


def _cross(q_from="x", scale=None, fill=float("-inf")):
    def cross_attention(x, memory, w_q, w_k, w_v, src_mask):
        q = (memory @ w_q)[:, : x.shape[1]] if q_from == "memory" else x @ w_q
        k, v = memory @ w_k, memory @ w_v
        s = q @ k.transpose(-2, -1) / (math.sqrt(w_q.shape[1]) if scale is None else scale(w_q))
        s = s.masked_fill(~src_mask[:, None, :], fill)
        return torch.softmax(s, -1) @ v
    return cross_attention


def _decoder(invert_self=False, ffn_residual=True):
    def forward(self, x, memory, self_mask, cross_mask):
        x = self.norm1(x + self.self_attn(x, mask=~self_mask if invert_self else self_mask))
        x = self.norm2(x + self.cross_attn(x, memory, mask=cross_mask))
        return self.norm3((x if ffn_residual else 0) + self.ffn(x))
    return forward


def _pad(rows, pad):
    n = max(map(len, rows))
    return torch.tensor([r + [pad] * (n - len(r)) for r in rows])


def _greedy(pick="argmax", start="bos"):
    def greedy_decode(model, src, bos_id, eos_id, max_len):
        src_mask = model.source_mask(src)
        memory = model.encode(src, src_mask)
        ys = torch.full((src.shape[0], 1), bos_id if start == "bos" else eos_id, dtype=torch.long)
        for _ in range(max_len):
            logits = model.decode(ys, memory, src_mask)[:, -1]
            ys = torch.cat([ys, getattr(logits, pick)(-1, keepdim=True)], dim=1)
        return ys
    return greedy_decode


def _beam_ranked_by_last_term(s, lp, k):
    _, flat = lp.flatten(1).topk(k, dim=-1)                 # ranked by the new token alone
    beam, token = flat // lp.shape[-1], flat % lp.shape[-1]
    b = torch.arange(s.shape[0])[:, None]
    return s[b, beam] + lp[b, beam, token], beam, token


def _beam_token_mod_k(s, lp, k):
    sc, flat = (s[..., None] + lp).flatten(1).topk(k, dim=-1)
    return sc, flat // lp.shape[-1], flat % k


def _rope_rotate(angle_scale=1.0, add=False):
    def apply_rope(x, base):
        n, d = x.shape[-2], x.shape[-1]
        inv = base ** (-torch.arange(0, d, 2, dtype=torch.float32) / d)
        a = angle_scale * torch.arange(n, dtype=torch.float32)[:, None] * inv
        x1, x2 = x[..., : d // 2], x[..., d // 2:]
        if add:                                              # sinusoids added, not a rotation
            return x + torch.cat((torch.sin(a), torch.cos(a) - 1), -1)
        return torch.cat((x1 * a.cos() - x2 * a.sin(), x1 * a.sin() + x2 * a.cos()), -1)
    return apply_rope


def _gqa(mask_diagonal=0, mean_kv=False):
    def grouped_query_attention(q, k, v):
        rep = q.shape[1] // k.shape[1]
        if mean_kv:
            k, v = k.mean(1, keepdim=True).expand_as(q), v.mean(1, keepdim=True).expand_as(q)
        else:
            k, v = k.repeat_interleave(rep, 1), v.repeat_interleave(rep, 1)
        n = q.shape[2]
        s = (q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])).masked_fill(
            ~torch.ones(n, n, dtype=torch.bool).tril(mask_diagonal), float("-inf"))
        return torch.softmax(s, -1).nan_to_num(0.0) @ v
    return grouped_query_attention


def _cached(scale=None, keep_old=False):
    def cached_attention_step(q, k_new, v_new, k_cache, v_cache):
        k, v = torch.cat((k_cache, k_new), 2), torch.cat((v_cache, v_new), 2)
        s = q @ k.transpose(-2, -1) / (math.sqrt(q.shape[-1]) if scale is None else scale(q, k))
        out = torch.softmax(s, -1) @ v
        return (out, torch.cat((k_new, k_cache), 2), torch.cat((v_new, v_cache), 2)) if keep_old else (out, k, v)
    return cached_attention_step


# exercise name -> [(id, learner's function, words its message must hold)]
UNLISTED = {
    "center_rows": [
        ("median", lambda x: x - x.median(dim=-1, keepdim=True).values, ["mean 0"]),
        ("plus-one", lambda x: x - x.mean(dim=-1, keepdim=True) + 1, ["mean 0"]),
        ("abs", lambda x: (x - x.mean(dim=-1, keepdim=True)).abs(), ["mean 0"]),
    ],
    "rnn_forward": [
        ("relu", _rnn(lambda h, xt, W, U, b: torch.relu(h @ W.T + xt @ U.T + b)), ["−1 and 1"]),
        ("reversed-time", _rnn(lambda h, xt, W, U, b: torch.tanh(h @ W.T + xt @ U.T + b), reverse=True),
         ["later input"]),
        ("h0-ones", _rnn(lambda h, xt, W, U, b: torch.tanh(h @ W.T + xt @ U.T + b), h0=torch.ones),
         ["differs", "small input"]),
    ],
    "grad_norm": [
        ("l1-norm", _grad(lambda s: s[:, -1].sum(), lambda g: g.abs().sum()), ["differs"]),
        ("squared-loss", _grad(lambda s: s[:, -1].pow(2).sum(), lambda g: g.norm()), ["differs"]),
        ("negative", _grad(lambda s: s[:, -1].sum(), lambda g: -g.norm()), ["below 0"]),
    ],
    "softmax": [
        ("no-exp", _softmax_no_exp, ["differs", "[[0, 1]]", "0.269"]),
        ("max-in-numerator-only", _softmax_max_in_numerator_only, ["sum to 1"]),
        ("negated", lambda s: torch.softmax(-s, dim=-1), ["differs"]),
        ("log-softmax", lambda s: torch.log_softmax(s, dim=-1), ["≥ 0"]),
    ],
    "attention": [
        ("scale-after-softmax", lambda q, k, v, mask=None: (lambda w: (w @ v, w))(
            torch.softmax((q @ k.transpose(-2, -1)).masked_fill(~mask, float("-inf")) if mask is not None
                          else q @ k.transpose(-2, -1), -1) / math.sqrt(q.shape[-1])), ["sum to 1"]),
        ("mask-ignored", lambda q, k, v, mask=None: (lambda w: (w @ v, w))(torch.softmax(_scores(q, k), -1)),
         ["blocked"]),
        ("scaled-by-n_k", lambda q, k, v, mask=None: (lambda w: (w @ v, w))(torch.softmax(
            (q @ k.transpose(-2, -1) / math.sqrt(k.shape[1])).masked_fill(
                ~mask if mask is not None else torch.zeros((), dtype=torch.bool), float("-inf")), -1)),
         ["differs"]),
        ("out-doubled", lambda q, k, v, mask=None: (lambda w: (2 * w @ v, w))(torch.softmax(
            _scores(q, k).masked_fill(~mask, float("-inf")) if mask is not None else _scores(q, k), -1)),
         ["not your weights @ v"]),
    ],
    "self_attention": [
        ("causal", _self_attention(lambda m, x: torch.softmax(_scores(m.w_q(x), m.w_k(x)).masked_fill(
            ~torch.ones(x.shape[1], x.shape[1], dtype=torch.bool).tril(), float("-inf")), -1) @ m.w_v(x)),
         ["permutation"]),
        ("scaled-by-n", _self_attention(lambda m, x: torch.softmax(
            m.w_q(x) @ m.w_k(x).transpose(-2, -1) / math.sqrt(x.shape[1]), -1) @ m.w_v(x)), ["differs"]),
        ("queries-use-w_k", _self_attention(lambda m, x: torch.softmax(
            _scores(m.w_k(x), m.w_k(x)), -1) @ m.w_v(x)), ["never reach", "self.w_q.weight"]),
    ],
    "sinusoidal_table": [
        ("sine-everywhere", _table(lambda a, j: torch.sin(a)), ["row 0"]),
        ("degrees", _table(lambda a, j: torch.where(j % 2 == 0, torch.sin(a * 180 / math.pi),
                                                     torch.cos(a * 180 / math.pi))), ["differs", "small input"]),
        ("doubled", _table(lambda a, j: 2 * torch.where(j % 2 == 0, torch.sin(a), torch.cos(a))), ["outside [-1, 1]"]),
    ],
    "add_learned_positions": [
        ("minus-x", lambda x, P, p: P[p] - x, ["changes when x changes"]),
        ("half-rows", lambda x, P, p: x + 0.5 * P[p], ["differs", "small input"]),
        ("plus-row-0", lambda x, P, p: x + P[p] + P[0], ["differs", "small input"]),
    ],
    "split_heads": [
        ("heads-reversed", lambda x, h: x.view(x.shape[0], x.shape[1], h, -1).transpose(1, 2).flip(1),
         ["differs", "small input"]),
        ("positions-reversed", lambda x, h: x.flip(1).view(x.shape[0], x.shape[1], h, -1).transpose(1, 2),
         ["differs", "small input"]),
    ],
    "merge_heads": [
        ("heads-reversed", lambda x: torch.cat(x.unbind(dim=1)[::-1], dim=-1), ["differs", "small input"]),
        ("heads-summed-back", lambda x: (x + x.flip(1)).transpose(1, 2).flatten(2), ["same numbers"]),
        ("features-reversed", lambda x: x.transpose(1, 2).flatten(2).flip(-1), ["differs", "small input"]),
    ],
    "multi_head_attention": [
        ("causal", _subclass("multi_head_attention", _mha_forward(causal=True)), ["permutation"]),
        ("scaled-by-n", _subclass("multi_head_attention", _mha_forward(scale=lambda x: x.shape[1])),
         ["differs"]),
    ],
    "layer_norm": [
        ("range-instead-of-std", lambda x, g, b, eps: (x - x.mean(-1, keepdim=True))
         / (x.amax(-1, keepdim=True) - x.amin(-1, keepdim=True) + eps) * g + b, ["variance 1"]),
        ("var-of-whole-tensor", lambda x, g, b, eps: (x - x.mean(-1, keepdim=True))
         / torch.sqrt(x.var(unbiased=False) + eps) * g + b, ["variance 1"]),
        ("beta-subtracted", lambda x, g, b, eps: (x - x.mean(-1, keepdim=True))
         / torch.sqrt(x.var(-1, keepdim=True, unbiased=False) + eps) * g - b, ["differs", "small input"]),
    ],
    "feed_forward": [
        ("tanh", _subclass("feed_forward", lambda m, x: m.w_2(torch.tanh(m.w_1(x)))), ["differs"]),
        ("mixes-positions", _subclass("feed_forward", lambda m, x: m.w_2(torch.relu(m.w_1(x.cumsum(1))))),
         ["permutation"]),
    ],
    "encoder_block": [
        ("causal", _subclass("encoder_block", lambda m, x: (lambda y: m.norm2(y + m.ffn(y)))(m.norm1(
            x + m.self_attn(x, mask=torch.ones(x.shape[1], x.shape[1], dtype=torch.bool).tril())))),
         ["permutation"]),
        ("no-norm1", _subclass("encoder_block", lambda m, x: (lambda y: m.norm2(y + m.ffn(y)))(x + m.self_attn(x))),
         ["differs"]),
    ],
    "causal_mask": [
        ("eye", lambda n: torch.eye(n, dtype=torch.bool), ["hides an earlier key"]),
        ("one-ahead", lambda n: torch.ones(n, n, dtype=torch.bool).tril(1), ["later key"]),
        ("nothing", lambda n: torch.zeros(n, n, dtype=torch.bool), ["itself"]),
    ],
    "masked_attention": [
        ("mask-ignored", _masked(), ["blocked"]),
        ("blocked-filled-minus-one", _masked(fill_scores=lambda s, m: s.masked_fill(~m, -1.0)), ["blocked"]),
        ("scaled-by-n_k", _masked(fill_scores=lambda s, m: s.masked_fill(~m, float("-inf")),
                                  scale=lambda q, k: k.shape[1]), ["differs"]),
    ],
    "next_token_probs": [
        ("one-extra-token", _probs(_topk_keep(1)), ["top_k"]),
        ("log-probabilities", _probs(lambda x, t, k: torch.log_softmax(_topk_keep(0)(x, t, k), -1)), ["≥ 0"]),
        ("temperature-squared", _probs(lambda x, t, k: _topk_keep(0)(x / t, t, k)), ["differs", "small input"]),
    ],
    "generate": [
        ("prompt-reversed", _generate("argmax", reverse_prompt=True), ["prompt"]),
        ("argmin", _generate("argmin"), ["differs"]),
    ],
    "cross_attention": [
        ("queries-from-memory-trimmed", _cross(q_from="memory"), ["never reach", "`x`"]),
        ("scaled-by-d_k", _cross(scale=lambda w_q: w_q.shape[1]), ["differs", "small input"]),
        ("padding-filled-minus-one", _cross(fill=-1.0), ["padded"]),
    ],
    "decoder_layer": [
        ("self-mask-inverted", _subclass("decoder_layer", _decoder(invert_self=True)), ["last target token"]),
        ("ffn-without-residual", _subclass("decoder_layer", _decoder(ffn_residual=False)), ["differs"]),
    ],
    "shift_targets": [
        ("labels-rolled", lambda s, b, e, p: (lambda t: (t, torch.roll(t, -1, dims=1)))(
            _pad([[b] + x for x in s], p)), ["<eos>"]),
        ("tgt-in-starts-with-eos", lambda s, b, e, p: (_pad([[e] + x for x in s], p), _pad([x + [e] for x in s], p)),
         ["<bos>"]),
        ("eos-also-in-tgt-in", lambda s, b, e, p: (_pad([[b] + x[:-1] + [e] for x in s], p),
                                                   _pad([x + [e] for x in s], p)), ["differs", "small input"]),
    ],
    "greedy_decode": [
        ("starts-with-eos", _greedy(start="eos"), ["<bos>"]),
        ("argmin", _greedy(pick="argmin"), ["differs"]),
    ],
    "beam_step": [
        ("ranked-by-last-token", _beam_ranked_by_last_term, ["sorted"]),
        ("token-mod-k", _beam_token_mod_k, ["does not add up"]),
    ],
    "mean_pool": [
        ("padding-in-the-sum", lambda h, m: h.sum(1) / m.sum(1, keepdim=True), ["padding"]),
        ("max-pool", lambda h, m: h.masked_fill(~m.bool()[..., None], float("-inf")).amax(1), ["differs"]),
    ],
    "previous_token_score": [
        ("max", lambda w: torch.diagonal(w, offset=-1, dim1=-2, dim2=-1).amax(-1), ["differs"]),
        ("divided-by-n-plus-1", lambda w: torch.diagonal(w, offset=-1, dim1=-2, dim2=-1).sum(-1) / (w.shape[-1] + 1),
         ["differs"]),
    ],
    "next_token_losses": [
        ("minus-p", lambda lo, t: -lo[:, :-1].softmax(-1).gather(-1, t[:, 1:, None])[..., 0], ["≥ 0", "−log p"]),
        ("one-minus-p", lambda lo, t: 1 - lo[:, :-1].softmax(-1).gather(-1, t[:, 1:, None])[..., 0],
         ["differs", "small input"]),
        ("softmax-over-positions", lambda lo, t: -lo[:, :-1].log_softmax(1).gather(-1, t[:, 1:, None])[..., 0],
         ["differs"]),
    ],
    "induction_score": [
        ("max", lambda w, p: w[:, torch.arange(p + 1, 2 * p + 1), torch.arange(2, p + 2)].amax(-1), ["differs"]),
        ("sum", lambda w, p: w[:, torch.arange(p + 1, 2 * p + 1), torch.arange(2, p + 2)].sum(-1) * 2,
         ["outside [0, 1]"]),
    ],
    "rms_norm": [
        ("mean-abs", lambda x, g, e: x / (x.abs().mean(-1, keepdim=True) + e) * g, ["root mean square"]),
        ("max-abs", lambda x, g, e: x / x.abs().amax(-1, keepdim=True) * g, ["root mean square"]),
        ("gamma-squared", lambda x, g, e: x / torch.sqrt(x.pow(2).mean(-1, keepdim=True) + e) * g * g,
         ["differs", "small input"]),
    ],
    "swiglu": [
        ("W3-never-used", lambda x, W1, W3, W2: F.silu(x @ W1) @ W2, ["never reach", "`W3`"]),
        ("gelu-gate", lambda x, W1, W3, W2: (F.gelu(x @ W1) * (x @ W3)) @ W2, ["differs", "small input"]),
    ],
    "apply_rope": [
        ("sinusoids-added", _rope_rotate(add=True), ["changed length"]),
        ("twice-the-angle", _rope_rotate(angle_scale=2.0), ["differs", "small input"]),
        ("shifted-positions", lambda x, b: _rope_rotate()(torch.cat((x[..., :1, :], x[..., :-1, :]), -2), b),
         ["changed length"]),
    ],
    "grouped_query_attention": [
        ("kv-heads-averaged", _gqa(mean_kv=True), ["differs"]),
        ("one-ahead", _gqa(mask_diagonal=1), ["last key"]),
    ],
    "cached_attention_step": [
        ("scaled-by-d_k", _cached(scale=lambda q, k: q.shape[-1]), ["differs", "small input"]),
        ("scaled-by-length", _cached(scale=lambda q, k: math.sqrt(k.shape[2])), ["differs"]),
        ("keys-as-values-cache", lambda *a: (lambda o, k, v: (o, k, k))(*_cached()(*a)), ["v_cache", "old cache"]),
    ],
}


@pytest.mark.parametrize("name, cid, fn, words", [(n, c, f, w) for n, cases in UNLISTED.items()
                                                  for c, f, w in cases],
                         ids=[f"{n}-{c}" for n, cases in UNLISTED.items() for c, _, _ in cases])
def test_an_unlisted_mistake_gets_a_property_or_a_counterexample(name, cid, fn, words):
    ex = framework.REGISTRY[name]
    v = ex.verdict(fn)
    assert v.status == WRONG, v.message
    assert v.message not in {m.hint for m in ex.mistakes}, v.message
    assert not any(w in v.message for w in RECIPE_WORDS), v.message
    for w in words:
        assert w in v.message, v.message


def test_every_checker_has_unlisted_mistakes_tried():
    assert {ex.name for ex in EXERCISES} <= set(UNLISTED), sorted({ex.name for ex in EXERCISES} - set(UNLISTED))


# ------------------------------------------------------------- the search never raises

def test_the_counterexample_search_never_raises_and_stays_in_its_budget():
    from course_lib.exercises.feedback import smallest_counterexample

    def candidates():
        yield (torch.ones(2),)
        raise RuntimeError("a broken generator of small inputs")

    ok = framework.Result(value=torch.ones(2))
    said = smallest_counterexample(candidates, lambda a: ok, lambda a: ok, framework.close,
                                   ["x"], ("out",), 1e-5)
    assert said is None

    def endless():
        while True:
            yield (torch.ones(2),)
    start = __import__("time").perf_counter()
    assert smallest_counterexample(endless, lambda a: ok, lambda a: ok, framework.close,
                                   ["x"], ("out",), 1e-5, budget_s=0.05) is None
    assert __import__("time").perf_counter() - start < 2.0


def test_code_that_fails_only_on_small_inputs_is_told_where():
    """Wrong on the check's inputs, and crashing on the tiny ones: the crash on the smallest
    input is the counterexample (a right answer runs on any valid input)."""
    def softmax(s):
        if s.shape[0] < 2:
            raise IndexError("my code assumed two rows")
        return torch.softmax(-s, dim=-1)
    v = framework.REGISTRY["softmax"].verdict(softmax)
    assert v.status == WRONG and "fails on a small input" in v.message and "scores = [[0, 1]]" in v.message, v.message


def test_a_property_that_cannot_be_evaluated_says_nothing():
    """A learner whose code crashes on the property's changed inputs still gets a message."""
    calls = []

    def center_rows(x):
        calls.append(1)
        if len(calls) > 4:                      # the check's inputs pass, later calls crash
            raise ValueError("no more")
        return x - x.median(dim=-1, keepdim=True).values
    v = framework.REGISTRY["center_rows"].verdict(center_rows)
    assert v.status == WRONG and v.message, v.message
