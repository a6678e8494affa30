"""Deployment files: promtool on the Prometheus config and alert rules (with their unit
tests), and the compose/k8s/Docker files checked for what they must say.

Docker and kubectl cannot run here. PyYAML is not a dependency: when it is importable
every YAML file is parsed, otherwise a few structural rules are checked by hand. The
command lines the files give streameval are parsed by streameval's own CLI parser, so
a misspelt flag fails here rather than in a crash-looping pod.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from streameval.commands.main import build_parser

ROOT = Path(__file__).resolve().parent.parent
DEPLOY = ROOT / "deploy"
PROM = DEPLOY / "prometheus"
K8S = DEPLOY / "k8s"
YAML_FILES = sorted([*DEPLOY.rglob("*.yml"), *DEPLOY.rglob("*.yaml"),
                     *(ROOT / "grafana" / "provisioning").rglob("*.yml")])


def promtool() -> str:
    tool = shutil.which("promtool") or ("/usr/bin/promtool" if Path("/usr/bin/promtool").exists() else None)
    if tool is None:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail("promtool not found, and CI=true: install Debian's prometheus (.ci/run does)")
        pytest.skip("promtool not found (install Debian's prometheus); required when CI=true")
    return tool


def run_promtool(*args: str) -> str:
    proc = subprocess.run([promtool(), *args], cwd=PROM, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, f"promtool {' '.join(args)} failed:\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout + proc.stderr


# ---------------------------------------------------------------------- promtool


def test_prometheus_config_is_valid():
    out = run_promtool("check", "config", "prometheus.yml")
    assert "SUCCESS" in out


def test_federation_example_is_valid():
    assert "SUCCESS" in run_promtool("check", "config", "federate.yml")


def test_alert_rules_are_valid():
    out = run_promtool("check", "rules", "rules.yml")
    assert re.search(r"SUCCESS: \d+ rules found", out)


def test_alert_rules_pass_their_unit_tests():
    assert "SUCCESS" in run_promtool("test", "rules", "rules_test.yml")


def test_every_alert_has_a_unit_test():
    rules = set(re.findall(r"^\s*- alert: (\w+)", (PROM / "rules.yml").read_text(), re.M))
    tested = set(re.findall(r"alertname: (\w+)", (PROM / "rules_test.yml").read_text()))
    assert rules and rules <= tested, f"alerts without a test: {sorted(rules - tested)}"


# ---------------------------------------------------------------------- YAML


@pytest.mark.parametrize("path", YAML_FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_yaml_files_are_well_formed(path):
    text = path.read_text(encoding="utf-8")
    assert "\t" not in text, "tabs are not allowed in YAML indentation"
    try:
        import yaml
    except ImportError:
        for n, line in enumerate(text.splitlines(), 1):
            body = line.split(" #")[0].rstrip()
            if body.strip() and not body.lstrip().startswith("#"):
                indent = len(body) - len(body.lstrip(" "))
                assert indent % 2 == 0, f"{path.name}:{n}: odd indentation"
        return
    docs = [d for d in yaml.safe_load_all(text) if d is not None]
    assert docs and all(isinstance(d, dict) for d in docs)


def k8s_docs() -> list[tuple[Path, str]]:
    out = []
    for p in sorted(K8S.glob("*.yaml")):
        if p.name == "kustomization.yaml":
            continue
        out.extend((p, d) for d in p.read_text().split("\n---\n") if d.strip())
    return out


def test_k8s_objects_have_kind_name_and_namespace():
    kinds = set()
    for path, doc in k8s_docs():
        kind = re.search(r"^kind: (\w+)$", doc, re.M)
        assert kind and re.search(r"^apiVersion: \S+$", doc, re.M), path.name
        assert re.search(r"^  name: [a-z0-9-]+$", doc, re.M), f"{path.name}: metadata.name"
        if kind.group(1) != "Namespace":
            assert re.search(r"^  namespace: streameval$", doc, re.M), f"{path.name}: namespace"
        kinds.add(kind.group(1))
    assert {"DaemonSet", "Service", "PodMonitor", "Job", "ConfigMap"} <= kinds
    listed = re.findall(r"^  - (\S+)$", (K8S / "kustomization.yaml").read_text(), re.M)
    assert all((K8S / f).exists() for f in listed)


def test_daemonset_watches_the_node_trace_dir_and_is_scraped():
    ds = (K8S / "daemonset.yaml").read_text()
    assert "kind: DaemonSet" in ds and "hostPath:" in ds
    assert re.search(r"mountPath: /traces\b", ds) and "containerPort: 9108" in ds
    pm = (K8S / "podmonitor.yaml").read_text()
    assert "apiVersion: monitoring.coreos.com/v1" in pm and "kind: PodMonitor" in pm
    label = re.search(r"app.kubernetes.io/name: (\S+)", ds).group(1)
    assert f"app.kubernetes.io/name: {label}" in pm and "port: metrics" in pm
    svc = (K8S / "service.yaml").read_text()
    assert "clusterIP: None" in svc and f"app.kubernetes.io/name: {label}" in svc


def test_replay_job_is_indexed_and_shards_by_completion_index():
    job = (K8S / "replay-job.yaml").read_text()
    assert "completionMode: Indexed" in job
    completions = int(re.search(r"completions: (\d+)", job).group(1))
    shard = re.search(r"- \$\(JOB_COMPLETION_INDEX\)/(\d+)", job)
    assert shard and int(shard.group(1)) == completions


# ---------------------------------------------------------------------- command lines


def yaml_list(text: str, key: str) -> list[str]:
    """The block list under ``key:`` (plain scalars; comments dropped)."""
    lines = text.splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.strip() == f"{key}:")
    indent = None
    items: list[str] = []
    for ln in lines[start + 1:]:
        s = ln.strip()
        if not s or s.startswith("#"):
            continue
        cur = len(ln) - len(ln.lstrip())
        if not s.startswith("- ") or (indent is not None and cur != indent):
            break
        indent = cur
        items.append(s[2:].split("  #")[0].strip().strip('"'))
    return items


def compose_default(value: str) -> str:
    return re.sub(r"\$\{\w+:-([^}]*)\}", r"\1", value)


def parse_cli(argv: list[str]):
    argv = [a.replace("$(JOB_COMPLETION_INDEX)", "0") for a in argv]
    command = argv[0]
    args = build_parser().parse_args(argv)
    assert args.command == command
    return args


def test_compose_command_parses_and_ports_are_local():
    text = (DEPLOY / "docker-compose.yml").read_text()
    argv = [compose_default(a) for a in yaml_list(text, "command")]
    args = parse_cli(argv)
    assert args.host == "0.0.0.0" and args.port == 9108 and args.repo == "/repos"
    ports = re.findall(r'^\s+- "([^"]+:\d+:\d+)"$', text, re.M)
    assert len(ports) == 3 and all(p.startswith("127.0.0.1:") for p in ports)
    for service in ("streameval:", "prometheus:", "grafana:"):
        assert re.search(rf"^  {service}$", text, re.M)
    assert "./prometheus:/etc/prometheus:ro" in text and "../grafana/provisioning:/etc/grafana/provisioning:ro" in text


@pytest.mark.parametrize("name, key", [("daemonset.yaml", "args"), ("replay-job.yaml", "args")])
def test_k8s_command_lines_parse(name, key):
    argv = yaml_list((K8S / name).read_text(), key)
    args = parse_cli(argv)
    if args.command == "replay":
        assert args.shard == (0, 8)
    else:
        assert args.host == "0.0.0.0" and str(args.dir) == "/traces"


def test_dockerfile_builds_the_package_and_runs_watch():
    text = (ROOT / "Dockerfile").read_text()
    assert re.search(r"^FROM python:3\.11-slim$", text, re.M)
    assert "pip install --no-cache-dir ." in text and "git" in text
    assert re.search(r'^ENTRYPOINT \["streameval"\]$', text, re.M)
    cmd = re.search(r"^CMD (\[.*\])$", text, re.M).group(1)
    import json

    args = parse_cli(json.loads(cmd))
    assert args.command == "watch" and args.host == "0.0.0.0"
    ignore = (ROOT / ".dockerignore").read_text().split()
    assert ".git" in ignore and "tests" in ignore


def test_every_pod_that_binds_beyond_loopback_is_fenced_by_a_network_policy():
    """A watcher serving on 0.0.0.0 in a pod is reachable by every pod of the cluster
    unless a NetworkPolicy says who may scrape it."""
    import yaml

    policies = [yaml.safe_load(doc) for path, doc in k8s_docs()
                if re.search(r"^kind: NetworkPolicy$", doc, re.M)]
    fenced = [p["spec"]["podSelector"]["matchLabels"] for p in policies
              if "Ingress" in p["spec"]["policyTypes"]]
    for path, doc in k8s_docs():
        obj = yaml.safe_load(doc)
        if obj["kind"] not in ("DaemonSet", "Deployment", "StatefulSet"):
            continue
        pod = obj["spec"]["template"]
        args = [a for c in pod["spec"]["containers"] for a in c.get("args", [])]
        if "--host" in args and args[args.index("--host") + 1] not in ("127.0.0.1", "::1"):
            labels = pod["metadata"]["labels"]
            assert any(all(labels.get(k) == v for k, v in sel.items()) for sel in fenced), path.name
    for p in policies:
        assert all(rule.get("from") for rule in p["spec"]["ingress"])
        if p["metadata"]["name"] == "streameval-watch-metrics":
            ports = [port["port"] for rule in p["spec"]["ingress"] for port in rule["ports"]]
            assert ports == [9108]


def test_the_ray_job_runs_replay_on_ray_over_the_data_every_pod_mounts():
    """deploy/k8s/replay-rayjob.yaml: a KubeRay RayJob whose entrypoint is a replay that
    parses with --engine ray; head and workers mount the data where the driver reads it,
    run one image, and only the cluster's own pods may reach them."""
    import shlex

    import yaml

    docs = [yaml.safe_load(d) for d in (K8S / "replay-rayjob.yaml").read_text().split("\n---\n")]
    (job,) = [d for d in docs if d["kind"] == "RayJob"]
    assert job["apiVersion"] == "ray.io/v1" and job["metadata"]["namespace"] == "streameval"
    argv = shlex.split(job["spec"]["entrypoint"])
    assert argv[0] == "streameval"
    args = parse_cli(argv[1:])
    assert args.engine == "ray" and args.ray_address is None      # RAY_ADDRESS in a job
    assert args.out.startswith("/results/") and args.shard is None
    cluster = job["spec"]["rayClusterSpec"]
    pods = [cluster["headGroupSpec"]["template"]] + [g["template"] for g in cluster["workerGroupSpecs"]]
    images = {c["image"] for p in pods for c in p["spec"]["containers"]}
    assert len(images) == 1
    data_paths = [args.inputs[0], args.gold, args.repos]
    for pod in pods:
        mounts = {m["mountPath"]: m for c in pod["spec"]["containers"] for m in c["volumeMounts"]}
        assert mounts["/data"]["readOnly"] is True
        assert all(p.startswith("/data/") for p in data_paths)
    head_mounts = [m["mountPath"] for c in pods[0]["spec"]["containers"] for m in c["volumeMounts"]]
    assert "/results" in head_mounts
    # the Ray version of the cluster is the one the image installs
    dockerfile = (K8S / "ray.Dockerfile").read_text()
    assert f"ray[default]=={cluster['rayVersion']}" in dockerfile
    (policy,) = [d for d in docs if d["kind"] == "NetworkPolicy"]
    label = pods[0]["metadata"]["labels"]["app.kubernetes.io/name"]
    assert policy["spec"]["podSelector"]["matchLabels"] == {"app.kubernetes.io/name": label}
    assert all(p["metadata"]["labels"]["app.kubernetes.io/name"] == label for p in pods)
