"""deploy/kubernetes/values.yaml (Zero to JupyterHub): deep-merged over the chart's own
defaults and validated against the chart's own JSON schema (both vendored in
deploy/kubernetes/z2jh/, as Helm does before rendering), a planted typo caught; the
single-user image's JupyterHub equal to the chart's hub; the per-student CPU and memory
cross-checked against the measured load sweep (benchmarks/class_load.py,
deploy/kubernetes/class_load_measured.json). No cluster ran it."""
from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
K8S = ROOT / "deploy" / "kubernetes"
CHART = K8S / "z2jh"


def _yaml(path: Path):
    return yaml.safe_load(path.read_text(encoding="utf-8"))


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
    hub_config = (ROOT / "deploy" / "hub" / "hub.py").read_text(encoding="utf-8")
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


def test_limits_match_the_one_machine_hubs_defaults(values):
    """A student gets the same CPU and memory on Kubernetes as on `course.py hub`."""
    import sys

    sys.path.insert(0, str(ROOT / "deploy" / "hub"))
    import hub

    defaults = hub.parser().parse_args(["--users", "x"])
    su = values["singleuser"]
    assert su["cpu"]["limit"] == defaults.cpu_limit
    assert _gb(su["memory"]["limit"]) * 2**30 == hub.parse_size(defaults.mem_limit)
    assert "podPidsLimit" in (K8S / "values.yaml").read_text(encoding="utf-8")
    assert su["storage"]["capacity"] == "1Gi"


# ------------------------------------------------------------------ the chart's own schema
def helm_merge(defaults: dict, user: dict) -> dict:
    """Helm's coalescing of a user's values over a chart's: maps merge key by key, anything
    else (lists included) replaces, and a null removes the chart's key."""
    merged = copy.deepcopy(defaults)
    for key, value in user.items():
        if value is None:
            merged.pop(key, None)
        elif isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = helm_merge(merged[key], value)
        else:
            merged[key] = copy.deepcopy(value)
    return merged


def schema_errors(values: dict) -> list[str]:
    """What Helm would refuse: our values over the chart's defaults, against its schema."""
    import jsonschema

    schema = _yaml(CHART / "values.schema.yaml")
    validator = jsonschema.Draft7Validator(schema)
    merged = helm_merge(_yaml(CHART / "values.yaml"), values)
    return [f"{'.'.join(map(str, e.absolute_path)) or '(top)'}: {e.message[:160]}"
            for e in validator.iter_errors(merged)]


def chart_hub_version() -> str:
    """The JupyterHub the chart's hub image runs (its appVersion, in the vendored README)."""
    readme = (CHART / "README.md").read_text(encoding="utf-8")
    return re.search(r"appVersion`? (\d+\.\d+\.\d+)", readme).group(1)


def test_the_chart_is_vendored_with_its_source_and_licence():
    readme = (CHART / "README.md").read_text(encoding="utf-8")
    assert re.search(r"commit\s+[0-9a-f]{40}", readme), "the README names the chart's source commit"
    assert "BSD 3-Clause" in (CHART / "LICENSE").read_text(encoding="utf-8")
    assert _yaml(CHART / "values.schema.yaml")["$schema"].startswith("http://json-schema.org/draft-07")
    assert schema_errors({}) == [], "the chart's defaults validate against its own schema"


def test_values_validate_against_the_chart_schema(values):
    assert schema_errors(values) == []


@pytest.mark.parametrize("path, typo", [
    (("singleuser", "memory"), {"limt": "2G"}),                 # a misspelt key
    (("singleuser",), {"defaultURL": "/lab"}),                  # a key in the wrong case
    (("cull",), {"timeout": "an hour"}),                        # a string for a number
    (("singleuser", "cpu"), {"guarantee": "half"}),             # same, for a CPU share
])
def test_a_planted_typo_fails_the_schema(values, path, typo):
    planted = copy.deepcopy(values)
    node = planted
    for key in path:
        node = node[key]
    node.update(typo)
    errors = schema_errors(planted)
    assert errors and all(e.startswith(".".join(path)) for e in errors), errors


def test_the_image_runs_the_charts_jupyterhub():
    """The single-user image (repo2docker builds it from environment.yml) runs
    jupyterhub-singleuser: its JupyterHub must be the chart's hub's, 5.5.0, whatever the
    one-machine hub (requirements-instructor.txt) runs."""
    assert chart_hub_version() == "5.5.0"
    env = _yaml(ROOT / "environment.yml")
    pip = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict) and "pip" in d)
    pins = [p for p in pip if p.lower().startswith("jupyterhub==")]
    assert pins == [f"jupyterhub=={chart_hub_version()}"], pins


# ------------------------------------------------------------------ the class board, deployed beside the chart
def _board_manifests() -> dict[str, dict]:
    docs = yaml.safe_load_all((K8S / "class-board.yaml").read_text(encoding="utf-8"))
    return {d["kind"]: d for d in docs if d}


def test_the_class_board_is_registered_for_the_teacher_only(values):
    import sys
    sys.path.insert(0, str(ROOT / "deploy" / "board"))
    import service

    hub = values["hub"]
    board = hub["services"]["class-board"]
    assert board["oauth_client_allowed_scopes"] == [service.VIEW_SCOPE]
    role = hub["loadRoles"]["teacher"]
    assert service.VIEW_SCOPE in role["scopes"] and "access:services!service=class-board" in role["scopes"]
    assert role["users"] == hub["config"]["Authenticator"]["admin_users"]
    # extraConfig defines the custom scope, as jupyterhub_config.py does for `course.py hub`.
    ns = {"c": type("C", (), {"JupyterHub": type("J", (), {})})()}
    exec(compile(hub["extraConfig"]["classBoard"], "extraConfig.classBoard", "exec"), ns)
    assert service.VIEW_SCOPE in ns["c"].JupyterHub.custom_scopes
    local = (ROOT / "deploy" / "hub" / "jupyterhub_config.py").read_text(encoding="utf-8")
    assert f'BOARD_SCOPE = "{service.VIEW_SCOPE}"' in local


def test_the_board_deployment_agrees_with_the_values(values):
    m = _board_manifests()
    assert set(m) == {"PersistentVolumeClaim", "Deployment", "Service"}
    assert m["PersistentVolumeClaim"]["spec"]["accessModes"] == ["ReadWriteMany"]
    pod = m["Deployment"]["spec"]["template"]
    container = pod["spec"]["containers"][0]
    env = {e["name"]: e.get("value", e.get("valueFrom")) for e in container["env"]}
    url = values["hub"]["services"]["class-board"]["url"]
    host, port = url.removeprefix("http://").split(":")
    assert host == m["Service"]["metadata"]["name"]
    assert int(port) == m["Service"]["spec"]["ports"][0]["port"] == container["ports"][0]["containerPort"]
    assert env["JUPYTERHUB_SERVICE_URL"].endswith(f":{port}") and env["COURSE_BOARD_IP"] == "0.0.0.0"
    assert env["JUPYTERHUB_SERVICE_PREFIX"] == "/services/class-board/"
    assert env["JUPYTERHUB_CLIENT_ID"] == "service-class-board"
    assert env["JUPYTERHUB_API_TOKEN"]["secretKeyRef"] == {"name": "hub",
                                                           "key": "hub.services.class-board.apiToken"}
    assert pod["metadata"]["labels"]["hub.jupyter.org/network-access-hub"] == "true"
    # The board reads the whole records volume; each student's pod writes its own folder.
    su = values["singleuser"]
    claim = m["PersistentVolumeClaim"]["metadata"]["name"]
    board_mount = container["volumeMounts"][0]
    assert board_mount["readOnly"] is True and env["COURSE_BOARD_RECORDS"] == board_mount["mountPath"]
    (student_mount,) = su["storage"]["extraVolumeMounts"]
    (student_volume,) = su["storage"]["extraVolumes"]
    assert student_volume["persistentVolumeClaim"]["claimName"] == claim
    assert student_mount["subPath"] == "{username}"
    assert su["extraEnv"]["COURSE_PROGRESS_FILE"] == student_mount["mountPath"] + "/progress.json"
    assert container["image"].split(":")[0] == su["image"]["name"]
