"""classroom/kubernetes/values.yaml (Zero to JupyterHub): parsed, and its per-student CPU
and memory cross-checked against the measured load sweep (benchmarks/class_load.py,
classroom/kubernetes/class_load_measured.json). The chart's JSON schema ships with the
Helm chart, not with any pip or npm package, so it is not checked here; no cluster ran it."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
K8S = ROOT / "classroom" / "kubernetes"


@pytest.fixture(scope="module")
def values():
    return yaml.safe_load((K8S / "values.yaml").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def measured():
    return json.loads((K8S / "class_load_measured.json").read_text(encoding="utf-8"))


def _gb(quantity: str) -> float:
    m = re.fullmatch(r"([\d.]+)([MG])", str(quantity))
    assert m, f"memory must be like 512M or 1.5G, got {quantity!r}"
    return float(m.group(1)) / (1024 if m.group(2) == "M" else 1)


def test_values_parse_and_have_the_keys_the_chart_reads(values):
    assert set(values) >= {"hub", "singleuser", "cull", "proxy"}
    su = values["singleuser"]
    assert su["image"]["name"] and su["image"]["tag"]
    assert su["defaultUrl"] == "/lab/tree/notebooks/00_start_here.ipynb"
    assert "provision.py" in " ".join(su["lifecycleHooks"]["postStart"]["exec"]["command"])
    assert su["extraEnv"]["OMP_NUM_THREADS"] == "1"


def test_culling_matches_the_one_machine_hub(values):
    hub_config = (ROOT / "classroom" / "hub" / "hub.py").read_text(encoding="utf-8")
    default = int(re.search(r'"--cull-timeout", type=int, default=(\d+)', hub_config).group(1))
    assert values["cull"]["enabled"] is True
    assert values["cull"]["timeout"] == default


def test_limits_come_from_the_measurement(values, measured):
    rows = measured["rows"]
    su = values["singleuser"]
    # Memory: the guarantee holds a student of a typical lesson (02), the limit the
    # heaviest lesson measured (08) with headroom — a kernel over it is killed.
    typical = max(r["per_student_gb"] for r in rows if r["lesson"] == "02")
    heaviest = max(r["per_student_gb"] for r in rows)
    assert _gb(su["memory"]["guarantee"]) >= typical
    assert _gb(su["memory"]["limit"]) >= 1.2 * heaviest
    assert _gb(su["memory"]["guarantee"]) <= _gb(su["memory"]["limit"])
    # CPU: the guarantee is the share of a core each student had at the largest class
    # that still ran lesson 02 within 3x its solo time on 2 cores.
    largest = measured["largest_n"]["02"]
    assert largest >= 1
    share = measured["cores"] / largest
    assert su["cpu"]["guarantee"] == pytest.approx(share, rel=0.25)
    assert su["cpu"]["guarantee"] <= su["cpu"]["limit"]
