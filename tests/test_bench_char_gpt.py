"""Smoke test of benchmarks/bench_char_gpt.py --compare recipe: its functions train two
tiny models side by side for a handful of steps and report under the keys `main_recipe`
prints. No timing is asserted: the numbers depend on the machine and its load."""
import importlib.util
import math
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("bench_char_gpt", ROOT / "benchmarks" / "bench_char_gpt.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_recipe_comparison_runs_and_reports(bench):
    ids = torch.arange(3000) % 7                       # a periodic "text": learnable in a few steps
    base = bench.Recipe("base", lr=1e-3, warmup=2, iters=8, min_ratio=0.1, batch=4, block=16)
    cand = bench.replace(bench.LESSON, name="cand", iters=6, batch=4, block=16)
    lines = []
    res = bench.compare_recipes(ids[:2500], ids[2500:], 7, base, cand, d_model=32, heads=2, layers=2,
                                eval_every=4, candidate_eval_every=2, eval_batches=2, eval_batch_size=4,
                                log=lines.append)
    assert res["baseline"]["step"] == 8 and res["candidate_final"]["step"] == 6
    last_base = [row for row in res["rows"] if row[0] == "base"][-1]
    assert last_base[1] == 8 and res["target"] == last_base[-1] and math.isfinite(res["target"])
    names = [row[0] for row in res["rows"]]
    assert names.count("base") == 2 and names.count("cand") == 3
    assert len(lines) == 1 + len(res["rows"])          # the header, then one line per evaluation
    # interleaved: the candidate's evaluations are not all after the baseline's
    assert names.index("cand") < len(names) - names[::-1].index("base") - 1
    if res["candidate"] is not None:
        assert res["candidate"]["seconds"] <= res["candidate_final"]["seconds"]
        reached = [r for r in res["rows"] if r[0] == "cand" and r[1] == res["candidate"]["step"]]
        assert reached[0][-1] <= res["target"]


def test_different_block_sizes_are_refused(bench):
    ids = torch.arange(500) % 5
    base = bench.Recipe("base", lr=1e-3, warmup=1, iters=2, min_ratio=0.1, batch=2, block=16)
    with pytest.raises(ValueError, match="block"):
        bench.compare_recipes(ids, ids, 5, base, bench.replace(base, block=8), d_model=16, heads=2, layers=1)


def test_gpt2_init_scales_the_residual_projections(bench):
    torch.manual_seed(0)
    model = bench.DecoderOnlyLM(11, d_model=64, h=4, d_ff=256, n_layers=8, max_len=16)
    bench.gpt2_init(model)
    layer = model.blocks.layers[0]
    assert abs(layer.self_attn.w_q.weight.std().item() - 0.02) < 0.002
    assert abs(layer.ffn.w_2.weight.std().item() - 0.02 / 4) < 0.0005     # 0.02 / √(2·8)
    assert abs(layer.self_attn.w_o.weight.std().item() - 0.02 / 4) < 0.0005
    assert torch.count_nonzero(layer.ffn.w_1.bias) == 0


def test_tied_embeddings_share_one_parameter_and_are_decayed_once(bench):
    recipe = bench.replace(bench.LESSON, tied=True, block=16)
    model = bench.build_lm(11, recipe, d_model=32, heads=2, layers=1)
    assert model.lm_head.weight is model.embed.weight
    opt, _ = bench.recipe_optimizer(model, recipe)
    in_groups = [p for g in opt.param_groups for p in g["params"]]
    assert len(in_groups) == len({id(p) for p in in_groups}) == len(list(model.parameters()))
