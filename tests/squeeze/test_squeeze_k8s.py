"""`squeeze k8s JOB --shards N`: manifests that validate against Kubernetes' own schemas (strict:
an unknown field fails), every pod under the gVisor RuntimeClass with no service account token,
no egress, resource limits and the results volume; the Indexed Job's N pods grade slices 1..N of
the plan once each, each pod seeing the plan read-only and only its own folder, each grading in
bubblewrap or not at all, and the merge step takes them all."""

from __future__ import annotations

import os
import subprocess

import kubernetes_validate
import pytest
import yaml
from kit.cli import run_cli
from kit.squeeze import EXAMPLE

K8S_VERSION = "1.33.0"  # the oldest release the manifests are checked against here


@pytest.fixture(scope="module")
def written(tmp_path_factory) -> dict[str, list[dict]]:
    out = tmp_path_factory.mktemp("k8s") / "manifests"
    r = run_cli("squeeze", "k8s", str(EXAMPLE / "squeeze.yaml"), "--shards", "3", "--image",
            "registry.example.org/squeeze-job:1", "--out", str(out), "--name", "argon")
    assert r.returncode == 0, r.stderr
    assert f"kubectl apply -n default -f {out}/shards.yaml" in r.stdout
    return {p.name: list(yaml.safe_load_all(p.read_text())) for p in sorted(out.iterdir())}


def _pods(written: dict[str, list[dict]]) -> list[dict]:
    return [d["spec"]["template"] for docs in written.values() for d in docs if d["kind"] == "Job"]


def test_every_manifest_validates_against_the_kubernetes_schemas(written):
    assert sorted(written) == ["base.yaml", "merge.yaml", "plan.yaml", "shards.yaml"]
    for docs in written.values():
        for doc in docs:
            kubernetes_validate.validate(doc, K8S_VERSION, strict=True)


def test_the_validation_is_not_vacuous(written):
    [shards] = written["shards.yaml"]
    bad = yaml.safe_load(yaml.safe_dump(shards))
    bad["spec"]["template"]["spec"]["automountServiceAccountToken"] = "no"
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(bad, K8S_VERSION, strict=True)
    bad = yaml.safe_load(yaml.safe_dump(shards))
    bad["spec"]["template"]["spec"]["runtimeClass"] = "gvisor"  # a misspelt field
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(bad, K8S_VERSION, strict=True)


def test_every_pod_runs_in_gvisor_without_a_token_or_root_under_limits(written):
    pods = _pods(written)
    assert len(pods) == 3
    for pod in pods:
        spec = pod["spec"]
        assert spec["runtimeClassName"] == "gvisor"
        assert spec["automountServiceAccountToken"] is False
        assert spec["securityContext"]["runAsNonRoot"] is True
        [c] = spec["containers"]
        assert c["securityContext"]["allowPrivilegeEscalation"] is False
        assert c["securityContext"]["readOnlyRootFilesystem"] is True
        assert c["securityContext"]["capabilities"] == {"drop": ["ALL"]}
        assert c["resources"]["limits"] == {"cpu": "2", "memory": "2Gi"}
        assert {"name": "tmp", "mountPath": "/tmp"} in c["volumeMounts"]
        assert spec["volumes"][0]["persistentVolumeClaim"]["claimName"] == "argon-results"


def test_a_shard_pod_mounts_the_plan_read_only_and_only_its_own_folder(written):
    [shards] = written["shards.yaml"]
    [c] = shards["spec"]["template"]["spec"]["containers"]
    results = [m for m in c["volumeMounts"] if m["name"] == "results"]
    assert results == [
        {"name": "results", "mountPath": "/results/plan", "subPath": "plan", "readOnly": True},
        {"name": "results", "mountPath": "/results/out", "subPathExpr": "shards/$(SHARD_INDEX)"}]
    index = next(e for e in c["env"] if e["name"] == "SHARD_INDEX")
    assert index["valueFrom"]["fieldRef"]["fieldPath"] == \
        "metadata.annotations['batch.kubernetes.io/job-completion-index']"


def test_every_shard_pod_requires_the_bubblewrap_wall(written):
    [shards] = written["shards.yaml"]
    [c] = shards["spec"]["template"]["spec"]["containers"]
    assert {"name": "PLIMSOLL_BWRAP", "value": "required"} in c["env"]
    assert "--provider process" in c["command"][-1]
    assert "hostUsers" not in shards["spec"]["template"]["spec"]  # no loosening unless asked
    note = shards["spec"]["template"]["metadata"]["annotations"]["plimsoll-ci/squeeze-wall"]
    assert "bubblewrap" in note and "exits 2" in note


def test_bubblewrap_settings_loosen_only_the_shard_pods_and_validate(tmp_path):
    out = tmp_path / "k8s"
    r = run_cli("squeeze", "k8s", str(EXAMPLE / "squeeze.yaml"), "--shards", "2", "--image",
                "img:1",
            "--out", str(out), "--bubblewrap-settings")
    assert r.returncode == 0, r.stderr
    docs = {p.name: list(yaml.safe_load_all(p.read_text())) for p in out.iterdir()}
    for each in docs.values():
        for doc in each:
            kubernetes_validate.validate(doc, K8S_VERSION, strict=True)
    [shards] = docs["shards.yaml"]
    spec = shards["spec"]["template"]["spec"]
    assert spec["hostUsers"] is False
    assert "what bubblewrap needs under runc" in \
        shards["spec"]["template"]["metadata"]["annotations"]["plimsoll-ci/squeeze-settings"]
    security = spec["containers"][0]["securityContext"]
    assert security["procMount"] == "Unmasked"
    assert security["seccompProfile"] == security["appArmorProfile"] == {"type": "Unconfined"}
    assert security["capabilities"] == {"drop": ["ALL"]} and security["runAsNonRoot"] is True
    for name in ("plan.yaml", "merge.yaml"):
        [job] = docs[name]
        assert "hostUsers" not in job["spec"]["template"]["spec"]
        assert "seccompProfile" not in job["spec"]["template"]["spec"]["containers"][0][
            "securityContext"]


def test_a_network_policy_denies_every_pod_all_egress(written):
    pvc, policy = written["base.yaml"]
    assert pvc["kind"] == "PersistentVolumeClaim" and pvc["spec"]["accessModes"] == ["ReadWriteMany"]
    assert policy["kind"] == "NetworkPolicy"
    assert "Egress" in policy["spec"]["policyTypes"] and policy["spec"]["egress"] == []
    selector = policy["spec"]["podSelector"]["matchLabels"]
    for pod in _pods(written):
        assert selector.items() <= pod["metadata"]["labels"].items()


def test_the_indexed_pods_grade_every_slice_once_and_the_merge_takes_them_all(written, tmp_path):
    [shards] = written["shards.yaml"]
    spec = shards["spec"]
    assert (spec["completionMode"], spec["completions"], spec["parallelism"]) == ("Indexed", 3, 3)
    fake = tmp_path / "bin" / "plimsoll-ci"  # the pod's command, run with plimsoll-ci echoing
    fake.parent.mkdir()
    fake.write_text("#!/bin/sh\necho \"$@\"\n")
    fake.chmod(0o755)
    env = {**os.environ, "PATH": f"{fake.parent}:{os.environ['PATH']}"}
    [script] = [c["command"] for c in spec["template"]["spec"]["containers"]]
    said = [subprocess.run(script, env={**env, "JOB_COMPLETION_INDEX": str(i)}, text=True,
                           capture_output=True, check=True).stdout.split() for i in range(3)]
    assert [s[s.index("--shard") + 1] for s in said] == ["1/3", "2/3", "3/3"]
    assert all(s[s.index("--out") + 1] == "/results/out" for s in said)  # shards/K, mounted
    assert all(s[s.index("--plan") + 1] == "/results/plan" for s in said)
    [plan] = written["plan.yaml"]
    assert "squeeze plan /job/squeeze.yaml --out /results/plan" in \
        plan["spec"]["template"]["spec"]["containers"][0]["command"][-1]
    [merge] = written["merge.yaml"]
    command = merge["spec"]["template"]["spec"]["containers"][0]["command"][-1]
    assert "bundle merge /results/shards/* --out /results/merged" in command
    assert "squeeze verify /results/merged" in command


@pytest.mark.parametrize("args, said", [
    (["--shards", "0"], "--shards 0"),
    (["--shards", "2", "--name", "Not_A_Name"], "--name"),
])
def test_bad_input_exits_2_and_writes_nothing(tmp_path, args, said):
    out = tmp_path / "k8s"
    r = run_cli("squeeze", "k8s", str(EXAMPLE / "squeeze.yaml"), "--image", "img:1", "--out",
                str(out), *args)
    assert r.returncode == 2 and said in r.stderr, r.stderr
    assert not out.exists()


def test_a_job_that_builds_through_a_model_is_refused(tmp_path):
    r = run_cli("squeeze", "k8s", str(EXAMPLE / "build.yaml"), "--shards", "2", "--image",
                "img:1", "--out",
            str(tmp_path / "k8s"))
    assert r.returncode == 2 and "needs egress" in r.stderr, r.stderr


def test_every_signing_pod_takes_the_job_key_and_the_merge_pins_its_public_half(written):
    """The merge trusts the job key's public half from the Secret, never a shard's harness.pub
    (issue 28 row 1 on a cluster): every pod signs under the one job key."""
    for name in ("plan.yaml", "shards.yaml", "merge.yaml"):
        [job] = written[name]
        [container] = job["spec"]["template"]["spec"]["containers"]
        refs = [e["valueFrom"]["secretKeyRef"] for e in container["env"]
                if e["name"] == "PLIMSOLL_SQUEEZE_KEY"]
        assert refs == [{"name": "argon-job-key", "key": "key.pem"}], name
        assert "--signing-key-env PLIMSOLL_SQUEEZE_KEY" in container["command"][-1], name
    [merge] = written["merge.yaml"]
    command = merge["spec"]["template"]["spec"]["containers"][0]["command"][-1]
    assert "--pub /keys/job.pub" in command and "--shard-pub /keys/job.pub" in command
    assert "harness.pub" not in command
    volumes = {v["name"]: v for v in merge["spec"]["template"]["spec"]["volumes"]}
    assert volumes["job-key"]["secret"]["items"] == [{"key": "key.pub", "path": "job.pub"}]
