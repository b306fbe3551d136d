"""Hints only when true (issue 44).

1. Every pair of planted mistakes of a checker does different things on the check's inputs (or
   the two share one hint): a hint shown for a match is a diagnosis, not a coincidence.
2. Exercise 2.1 with the max taken without keepdim gets the max's hint, not the sum's (both
   crash alike on a 5 × 7 input).
3. Mistakes that no checker plants, written as learners write them, get a failed property of the
   right answer or the smallest input where they differ — never a recipe, never a planted hint.
4. Every property holds for the reference and every valid alternative (a property that a right
   answer breaks would blame a right line).
5. A planted mistake is matched by what it computes: one that crashes on every trial runs on a
   probe, and code that crashes like it for another reason never gets its hint; only a mistake whose
   error names it (`Mistake.by_error`) is matched by its error alone.
"""
import math

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import course_lib.exercises  # noqa: F401  (fills the registry)
from course_lib.exercises import framework
from course_lib.exercises.framework import CRASHED, WRONG

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


# ------------------------------------------------- slips that crash like a planted mistake does

def _cross_scores_transposed(x, memory, w_q, w_k, w_v, src_mask):
    """Projections right, only the scores transposed: the mask no longer fits, with the same error
    as keys taken from x."""
    q, k, v = x @ w_q, memory @ w_k, memory @ w_v
    s = k @ q.transpose(-2, -1) / math.sqrt(q.shape[-1])
    s = s.masked_fill(~src_mask[:, None, :], float("-inf"))
    return torch.softmax(s, dim=-1) @ v


def _decoder_residual_from_memory(self, x, memory, self_mask, cross_mask):
    """The cross-attention called right; its residual adds memory, not h₁."""
    x = self.norm1(x + self.self_attn(x, mask=self_mask))
    x = self.norm2(self.cross_attn(x, memory, mask=cross_mask) + memory)
    return self.norm3(x + self.ffn(x))


def _rnn_h0_per_position(x, W, U, b):
    """x[:, t] is right; h₀ has one row per *position*: the sum fails as x[t] would make it fail."""
    h, states = torch.zeros(x.shape[1], W.shape[0]), []
    for t in range(x.shape[1]):
        h = torch.tanh(x[:, t] @ U.T + h @ W.T + b)
        states.append(h)
    return torch.stack(states, dim=1)


def _generate_cropped_one_too_long(model, tokens, max_new_tokens, temperature=1.0, top_k=None, generator=None):
    from course_lib.nn.decoding import next_token_probs
    for _ in range(max_new_tokens):
        logits = model(tokens[:, -(model.max_len + 1):])[:, -1, :]        # cropped, one too long
        if temperature == 0:
            nxt = logits.argmax(-1, keepdim=True)
        else:
            nxt = torch.multinomial(next_token_probs(logits, temperature, top_k), 1, generator=generator)
        tokens = torch.cat([tokens, nxt], dim=1)
    return tokens


def _grad_of_a_vector(rnn, x, h0):
    h0 = h0.clone().requires_grad_()
    L = rnn(x, h0)[:, -1]                    # the sum forgotten: L is a vector
    (g,) = torch.autograd.grad(L, h0)
    return g.norm()


def _cached_k_not_transposed(q, k_new, v_new, k_cache, v_cache):
    k, v = torch.cat((k_cache, k_new), 2), torch.cat((v_cache, v_new), 2)
    return torch.softmax(q @ k / math.sqrt(q.shape[-1]), -1) @ v, k, v


# exercise name -> [(id, learner's function, words its message must hold, words it must not hold)]
CRASHING = {
    "cross_attention": [
        ("scores-transposed", _cross_scores_transposed,
         ["fails on a small input", "raised RuntimeError", "s.masked_fill(~src_mask[:, None, :]"],
         ["does not fit your scores", "Keys from x", "queries and keys/values are swapped"]),
    ],
    "decoder_layer": [
        ("residual-from-memory", _subclass("decoder_layer", _decoder_residual_from_memory),
         ["raised RuntimeError", "+ memory)"], ["swapped", "x_q, x_kv"]),
    ],
    "rms_norm": [
        ("sum-without-keepdim", lambda x, g, e: x / torch.sqrt(x.pow(2).sum(-1) + e) * g,
         ["fails on a small input", "x.pow(2).sum(-1)"], ["x.pow(2).mean(dim=-1)", "without keepdim=True"]),
    ],
    "rnn_forward": [
        ("h0-per-position", _rnn_h0_per_position, ["raised RuntimeError", "x[:, t] @ U.T + h @ W.T"],
         ["x[t] is sequence t"]),
    ],
    "merge_heads": [
        ("view-after-transpose-2-3", lambda x: x.transpose(2, 3).view(x.shape[0], x.shape[2], -1),
         ["raised RuntimeError", "transpose(2, 3)"], ["after transpose(1, 2) the numbers"]),
    ],
    "generate": [
        ("cropped-one-too-long", _generate_cropped_one_too_long, ["raised ValueError", "length 9"],
         ["you fed the whole sequence"]),
    ],
    "grad_norm": [
        ("gradient-of-a-vector", _grad_of_a_vector, ["raised RuntimeError", "scalar outputs"],
         ["h0.grad is None"]),
    ],
    "cached_attention_step": [
        ("keys-not-transposed", _cached_k_not_transposed, ["fails on a small input", "raised RuntimeError"],
         ["the cache grows along"]),
    ],
    "softmax": [
        ("max-of-each-column", lambda s: (lambda e: e / e.sum(dim=-1, keepdim=True))(
            torch.exp(s - s.max(dim=0, keepdim=True).values)),
         ["small input", "[[0, 1]]", "[[0.5, 0.5]]"], ["contains NaN"]),
    ],
}
for _name, _cases in CRASHING.items():
    UNLISTED[_name] = UNLISTED.get(_name, []) + _cases


def _cases():
    for name, cases in UNLISTED.items():
        for case in cases:
            cid, fn, words, *rest = case
            yield name, cid, fn, words, (rest[0] if rest else [])


@pytest.mark.parametrize("name, cid, fn, words, not_words", list(_cases()),
                         ids=[f"{n}-{c}" for n, c, *_ in _cases()])
def test_an_unlisted_mistake_gets_a_property_or_a_counterexample(name, cid, fn, words, not_words):
    """Past the planted list: a failed property, a smallest counterexample, or — for code that
    crashes — the crash on the smallest input that crashes, with the learner's line. Never a
    planted hint, never a recipe; the words a slip must not be told are the planted hints' claims
    about code it did not write."""
    ex = framework.REGISTRY[name]
    v = ex.verdict(fn)
    assert v.status in (WRONG, CRASHED), v.message
    assert v.message not in {m.hint for m in ex.mistakes}, v.message
    assert not any(w in v.message for w in RECIPE_WORDS), v.message
    for w in words:
        assert w in v.message, v.message
    for w in not_words:
        assert w not in v.message, v.message


# ------------------------------------------------ crash-only planted mistakes (issue 44 §1)

@pytest.mark.parametrize("ex", EXERCISES, ids=[e.name for e in EXERCISES])
def test_a_mistake_matched_by_its_error_alone_is_marked(ex):
    """A planted mistake that crashes on every input of its check (trials and probes) can only be
    matched by its error text: it must say that its error names it (by_error); one that says so
    must crash everywhere (else a probe matches it by its numbers, and the flag is moot)."""
    inputs = ex._inputs()
    for i, mistake in enumerate(ex.mistakes):
        crashes = all(ex._call(mistake.fn, args).error is not None for args in inputs)
        assert crashes == mistake.by_error, (
            f"{ex.name} mistake {i} crashes on every input of the check: give the checker a probe on "
            f"which it runs, or mark it by_error if its error names it" if crashes else
            f"{ex.name} mistake {i} is marked by_error but runs on some input")


def _elsewhere(out):
    """Another output of the same kind: a float tensor (or a tuple's first) shifted by 1."""
    if isinstance(out, (tuple, list)):
        return type(out)([_elsewhere(out[0]), *out[1:]])
    return out + 1 if isinstance(out, torch.Tensor) else out


def _crashes_alike_elsewhere_different(fn):
    """Code that raises exactly what `fn` raises wherever it raises, and computes something else
    wherever it runs: a slip that crashes like a planted mistake, for another reason."""
    if isinstance(fn, type):
        return type("CrashesAlike", (fn,), {"forward": lambda self, *a: _elsewhere(fn.forward(self, *a))})
    return lambda *a: _elsewhere(fn(*a))


def _crash_only_on_trials():
    """(exercise, i, mistake) for each planted mistake, not marked by_error, that crashes on every
    random trial of its check (the probes left out: they are what lets it run)."""
    found = []
    for ex in EXERCISES:
        trials = ex._inputs()[:ex.trials]      # the whole _inputs(): lesson 06's settings cycle round
        found += [(ex, i, m) for i, m in enumerate(ex.mistakes)
                  if not getattr(m, "by_error", False) and all(ex._call(m.fn, a).error is not None for a in trials)]
    return found


CRASH_ONLY_ON_TRIALS = _crash_only_on_trials()


@pytest.mark.parametrize("ex, i, mistake", CRASH_ONLY_ON_TRIALS,
                         ids=[f"{ex.name}-mistake{i}" for ex, i, _ in CRASH_ONLY_ON_TRIALS])
def test_a_crash_only_hint_is_never_given_to_code_that_crashes_for_another_reason(ex, i, mistake):
    """Issue 44 §1: a planted mistake that crashes on every random trial (24 of them before this
    test) was matched by its error text alone, so any code raising that text got its hint — scores
    transposed with the right keys were told their keys came from x. Such code crashes exactly
    where the mistake crashes and differs where it runs (the probes): it must not get the hint."""
    assert ex.verdict(mistake.fn).message == mistake.hint        # the mistake itself still does
    v = ex.verdict(_crashes_alike_elsewhere_different(mistake.fn))
    assert v.status in (WRONG, CRASHED) and v.message != mistake.hint, v.message


def test_the_three_reported_slips_get_no_planted_hint():
    """The audit's three counterexamples, with the words of the hints they used to get."""
    def rms_norm(x, gamma, eps):
        return x / torch.sqrt(x.pow(2).sum(-1) + eps) * gamma

    cases = {"cross_attention": (_cross_scores_transposed, "src_mask[:, None, :] does not fit"),
             "decoder_layer": (_subclass("decoder_layer", _decoder_residual_from_memory), "swapped"),
             "rms_norm": (rms_norm, "x.pow(2).mean(dim=-1)")}
    for name, (fn, old) in cases.items():
        v = framework.REGISTRY[name].verdict(fn)
        assert v.status == CRASHED and old not in v.message and "raised RuntimeError" in v.message, v.message


# ----------------------------------------------------------------- NaN after the properties

def test_nan_is_named_after_a_property_or_a_counterexample():
    """Issue 44 §2: a softmax that subtracts each column's max is NaN on the check's row of -60s,
    and plainly wrong on [[0, 1]]: the small input says more than the NaN."""
    v = framework.REGISTRY["softmax"].verdict(
        lambda s: (lambda e: e / e.sum(dim=-1, keepdim=True))(torch.exp(s - s.max(dim=0, keepdim=True).values)))
    assert v.status == WRONG and "contains NaN" not in v.message and "[[0.5, 0.5]]" in v.message, v.message


def test_a_nan_nothing_else_explains_is_located():
    """Right everywhere but where a score is above 80: no planted mistake, property or small input
    shows it, so the message says where the NaN is and on which input."""
    v = framework.REGISTRY["softmax"].verdict(
        lambda s: torch.softmax(s, -1) + torch.where(s > 80, float("nan"), 0.0))
    assert v.status == WRONG and "`weights` contains NaN values: weights[" in v.message, v.message
    assert "on the check's input (scores (5, 7))" in v.message, v.message


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


def test_h0_marked_after_the_forward_pass_is_told_so():
    """A by_error hint where it is true: h0.requires_grad_() after rnn(x, h0) leaves h0.grad None,
    which is what the hint says ("marked before the forward pass")."""
    def grad_norm(rnn, x, h0):
        L = rnn(x, h0)[:, -1].sum()
        h0.requires_grad_()
        L.backward()
        return h0.grad.norm()
    from course_lib.exercises.lesson01 import NO_REQUIRES_GRAD_HINT
    assert framework.REGISTRY["grad_norm"].verdict(grad_norm).message == NO_REQUIRES_GRAD_HINT
