"""The trust split holds in a shard pod: the shard pod's command, run in a container as Kubernetes
would run it from `squeeze k8s`'s manifest (its user, no capabilities, no privilege escalation, a
read-only root, its runtime, its mounts of the results volume, its environment, no network),
never lets a controller read the plan's seeds, the shard's results, another shard's folder or the
signer's process: each grading is walled in bubblewrap, or the pod exits 2 naming the missing
wall and grades nothing.

No registry is reachable here, so the image the manifests assume (plimsoll-ci, bubblewrap, the
job at /job) is the local runtime image with this machine's own interpreter, package and
bubblewrap bind-mounted read-only into it, at the paths they have here.
"""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from kit.cli import run_process
from kit.squeeze import REPO

from plimsoll_ci.sandbox import process

JOB = """\
course: easy
fresh: {count: 2}
loops:
  solo:
    controller: probe.py
    rebuilds: [rebuilds/*.py]
"""

# Looks for what the shard pod's trusted side holds and says what it found in its start-up error
# (the one channel out of a walled grading: the signed record's reason).
PROBE = '''\
import errno, os

def look(path):
    try:
        if os.path.isdir(path):
            os.listdir(path)
        else:
            with open(path, "rb") as fh:
                fh.read(1)
        return "READ"
    except OSError as e:
        return errno.errorcode.get(e.errno, str(e.errno))

seen = [f"uid={os.getuid()}", "plan=" + look("/results/plan/fresh-set.json"),
        "out=" + look("/results/out"), "other=" + look("/results/shards/1/planted"),
        "all=" + look("/results"), "job=" + look("/job/squeeze.yaml")]
signer = "none"
for pid in (os.listdir("/proc") if os.path.isdir("/proc/self") else []):
    if pid.isdigit() and int(pid) != os.getpid():
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as fh:
                if b"squeeze" in fh.read():
                    signer = "SEEN"
        except OSError:
            pass
seen.append("signer=" + signer)
raise RuntimeError("PROBE " + " ".join(seen))
'''


def pod_user(security: dict) -> tuple[int, int]:
    """The pod's uid and gid; when these tests do not run as root (and cannot give the volume's
    files to another uid), this user's own, which is as far from root."""
    if os.geteuid() == 0:
        return security["runAsUser"], security.get("runAsGroup", 0)
    return os.getuid(), os.getgid()


def image_mounts(cache: Path) -> tuple[list[str], dict[str, str]]:
    """The image's contents as read-only binds, and its environment."""
    binds = {"/usr": "/usr", "/bin/sh": shutil.which("sh") or "/bin/sh", str(REPO): str(REPO),
             str(cache): str(cache)}
    for prefix in {sys.prefix, sys.base_prefix}:
        if not prefix.startswith("/usr/"):
            binds[prefix] = prefix
    args = []
    for inside, host in binds.items():
        args += ["-v", f"{os.path.realpath(host)}:{inside}:ro"]
    env = {"PATH": f"{cache.parent / 'bin'}:/usr/bin:/bin", "PYTHONPATH": str(REPO),
           "PLIMSOLL_CACHE": str(cache.parent)}
    return args, env


def _job_key_pem() -> str:
    """A job key's private half (PKCS#8 PEM), as the Secret NAME-job-key would hold it."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    return Ed25519PrivateKey.generate().private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption()).decode()


def container_args(pod: dict, results: Path, tmp: Path) -> list[str]:
    """`docker run` flags for the pod's one container, as Kubernetes would run it (pod index 0)."""
    spec = pod["spec"]
    [c] = spec["containers"]
    security = {**spec.get("securityContext", {}), **c["securityContext"]}
    args = ["--runtime", "runsc" if spec["runtimeClassName"] == "gvisor" else "runc",
            "--user", "{}:{}".format(*pod_user(security)),
            "--network", "none",  # the run's NetworkPolicy: no egress, no ingress
            "--memory", c["resources"]["limits"]["memory"].replace("Gi", "g")]
    if security["capabilities"] == {"drop": ["ALL"]}:
        args += ["--cap-drop", "ALL"]
    if security["allowPrivilegeEscalation"] is False:
        args += ["--security-opt", "no-new-privileges"]
    if security.get("readOnlyRootFilesystem"):
        args.append("--read-only")
    if security.get("seccompProfile", {}).get("type") == "Unconfined":
        args += ["--security-opt", "seccomp=unconfined"]
    if security.get("appArmorProfile", {}).get("type") == "Unconfined":
        args += ["--security-opt", "apparmor=unconfined"]
    if security.get("procMount") == "Unmasked":
        args += ["--security-opt", "systempaths=unconfined"]
    # hostUsers: false is not played here (dockerd's user remapping is daemon-wide): it only
    # changes what the container's ids are on the node, not what a grading sees inside.
    env = {"JOB_COMPLETION_INDEX": "0"}
    for e in c.get("env", []):
        if "secretKeyRef" in e.get("valueFrom", {}):  # the job key's private half
            env[e["name"]] = _job_key_pem()
        else:
            env[e["name"]] = e.get("value", "0")  # the other valueFrom is the completion index
    for m in c["volumeMounts"]:
        if m["name"] == "tmp":
            host = tmp
        else:
            sub = m.get("subPath") or m.get("subPathExpr", "").replace("$(SHARD_INDEX)", "0")
            host = results / sub
            host.mkdir(parents=True, exist_ok=True)
        args += ["-v", f"{host}:{m['mountPath']}{':ro' if m.get('readOnly') else ''}"]
    for name, value in env.items():
        args += ["-e", f"{name}={value}"]
    return args


def shard_pod(tmp_path: Path, *flags: str) -> tuple[dict, Path, Path]:
    """The manifests of a 2-shard run of the probe job, its plan made, the volume given to the
    pod's user; the shard pod template, the volume and the job folder."""
    job = tmp_path / "job"
    job.mkdir()
    (job / "squeeze.yaml").write_text(JOB)
    (job / "probe.py").write_text(PROBE)
    (job / "rebuilds").mkdir()
    (job / "rebuilds" / "probe.py").write_text(PROBE)  # graded by the other shard
    out = tmp_path / "k8s"
    r = run_process("squeeze", "k8s", str(job / "squeeze.yaml"), "--shards", "2", "--image",
                    "local:1", "--out", str(out), *flags, timeout=120)
    assert r.returncode == 0, r.stderr
    [shards] = yaml.safe_load_all((out / "shards.yaml").read_text())
    results = tmp_path / "results"
    r = run_process("squeeze", "plan", str(job / "squeeze.yaml"), "--out", str(results / "plan"),
                    "--provider", "process", timeout=120)
    assert r.returncode == 0, r.stderr
    (results / "shards" / "0").mkdir(parents=True)  # the pod's own folder (kubelet makes it)
    (results / "shards" / "1").mkdir()
    (results / "shards" / "1" / "planted").write_text("another shard's record\n")
    uid, gid = pod_user(shards["spec"]["template"]["spec"]["securityContext"])
    for path in [results, *results.rglob("*")]:
        os.chown(path, uid, gid)
    for path in [job, job / "rebuilds"]:
        os.chmod(path, 0o755)
    return shards["spec"]["template"], results, job


def run_pod(pod: dict, results: Path, job: Path, tmp_path: Path) -> subprocess.CompletedProcess:
    from plimsoll_ci.sandbox import rootfs

    rfs = rootfs.build()
    image = rootfs.docker_import(rfs)
    cache = rfs.path.parent
    wrapper = tmp_path / "bin" / "plimsoll-ci"  # the image's entry point, this interpreter
    wrapper.parent.mkdir()
    wrapper.write_text(f'#!/bin/sh\nexec {sys.executable} -m plimsoll_ci "$@"\n')
    wrapper.chmod(0o755)
    binds, env = image_mounts(cache)
    binds += ["-v", f"{wrapper.parent}:{cache.parent / 'bin'}:ro", "-v", f"{job}:/job:ro"]
    tmp = tmp_path / "pod-tmp"  # the pod's emptyDir /tmp
    tmp.mkdir(mode=0o1777)
    tmp.chmod(0o1777)
    args = container_args(pod, results, tmp)
    for name, value in env.items():
        args += ["-e", f"{name}={value}"]
    [c] = pod["spec"]["containers"]
    return subprocess.run(["docker", "run", "--rm", *args, *binds, image, *c["command"]],
                          capture_output=True, text=True, timeout=600)


def written(results: Path) -> list[Path]:
    """Every file the pod wrote on the results volume (wherever its manifest put it)."""
    given = {results / "shards" / "1" / "planted"}
    return [p for p in sorted(results.rglob("*")) if p.is_file() and p not in given
            and (results / "plan") not in p.parents]


def what_it_saw(results: Path) -> tuple[list[str], list[dict]]:
    """What each probe said, and each grading's sandbox evidence, from the shard's signed
    records (and anything else it wrote)."""
    texts, evidence = [], []
    for path in written(results):
        texts.append(path.read_text(errors="replace"))
        if path.name != "bundle.intoto.jsonl":
            continue
        for line in texts[-1].splitlines():
            doc = json.loads(line)
            if "envelope" in doc:
                statement = json.loads(base64.b64decode(doc["envelope"]["payload"]))
                texts.append(json.dumps(statement))
                if "sandbox" in statement["predicate"]:
                    evidence.append(statement["predicate"]["sandbox"]["evidence"])
    found = [m.group(1) for t in texts for m in re.finditer(r"PROBE ([^\"\\]*)", t)]
    return found, evidence


def assert_walled_or_refused(r: subprocess.CompletedProcess, results: Path) -> str:
    """The invariant: no controller saw the trusted side; 'walled' or 'refused'."""
    found, evidence = what_it_saw(results)
    for line in found:
        assert "READ" not in line and "SEEN" not in line, line
    if r.returncode == 2:
        assert "bubblewrap cannot wall a grading here" in r.stderr, r.stderr
        assert "PLIMSOLL_BWRAP=required" in r.stderr
        assert written(results) == []  # nothing graded, nothing written
        return "refused"
    assert r.returncode == 0, r.stdout + r.stderr
    assert found and all(line.startswith("uid=65534 ") for line in found), found
    walls = {e.get("wall") for e in evidence if e.get("provider") == "process"}
    assert walls == {process.WALLED}, walls
    return "walled"


@pytest.mark.parametrize("runtime_class", ["gvisor", "runc"])
def test_a_shard_pod_never_lets_a_controller_read_the_plan_or_the_results(
        docker_runsc, tmp_path, runtime_class):
    pod, results, job = shard_pod(tmp_path, "--runtime-class", runtime_class)
    r = run_pod(pod, results, job, tmp_path)
    assert_walled_or_refused(r, results)


def test_with_the_bubblewrap_settings_each_grading_is_walled_under_runc(docker_runsc, tmp_path):
    pod, results, job = shard_pod(tmp_path, "--runtime-class", "runc", "--bubblewrap-settings")
    r = run_pod(pod, results, job, tmp_path)
    assert assert_walled_or_refused(r, results) == "walled", r.stderr
    found, _ = what_it_saw(results)
    assert found[0] == ("uid=65534 plan=ENOENT out=ENOENT other=ENOENT all=ENOENT job=ENOENT "
                        "signer=none"), found
