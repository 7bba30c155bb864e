"""`squeeze k8s`: the Kubernetes manifests that run a squeeze job as N shards on a cluster.

    plimsoll-ci squeeze k8s squeeze.yaml --shards 8 --image REGISTRY/plimsoll-job:TAG --out k8s/

Four files, applied in order (Kubernetes orders no Jobs; `kubectl wait` does):

- `base.yaml`: the results volume (a ReadWriteMany PersistentVolumeClaim) and a NetworkPolicy
  selecting every pod of the run with no egress rule at all: no pod of it reaches any address
  (graders need no network; the job builds no rebuilds here);
- `plan.yaml`: one pod, `squeeze plan` into the volume's `plan/` (the fresh set drawn and
  committed once);
- `shards.yaml`: an Indexed Job of N pods; the pod of index K grades `--shard K+1/N` of the plan
  into the volume's `shards/K/`. It mounts the plan read-only and only its own folder
  read-write: it never sees another shard's folder;
- `merge.yaml`: one pod, `bundle merge` of every shard into `merged/`, then `squeeze verify`.

Keys: one job key signs the plan, every shard and the merge. It is a Secret made before the run
(`steps` prints how: `plimsoll-ci keygen`, then `kubectl create secret generic NAME-job-key`
with `key.pem` and `key.pub`); each pod reads the private half from the Secret into its
environment (`--signing-key-env`), and the merge pins the public half, mounted from the Secret,
never a `harness.pub` found in a shard's folder (`bundle merge --pub`, `squeeze verify --pub
--shard-pub`).

Every pod runs under the cluster's gVisor RuntimeClass (`runtimeClassName`, GKE Sandbox's or
one registered for `runsc`), with no service account token, as a non-root user without privilege
escalation or capabilities, on a read-only root with an emptyDir /tmp, under CPU and memory
limits. The image must hold plimsoll-ci, bubblewrap and the job's folder (`--workdir`, default
/job): the controllers graded are what the image was built with.

The wall around each grading: the pod's gVisor kernel surrounds the trusted side (the signer, the
plan, the results) as much as the controllers, so it is no wall between them. Each grading runs in
bubblewrap instead (`--provider process` with PLIMSOLL_BWRAP=required): its own user, mount and
pid namespaces, seeing only the read-only runtime and its own files. A shard pod where bubblewrap
cannot make them exits 2 at start-up naming the missing wall, and grades nothing unwalled.
bubblewrap needs mounts inside a user namespace, which some runtimes refuse (docs/scale.md says
which were measured); `bubblewrap_settings` gives the shard pods what it needs under runc:
their own user namespace (hostUsers: false), an unmasked /proc, seccomp and AppArmor unconfined.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, NamedTuple

from plimsoll_ci.errors import BadInput
from plimsoll_ci.sandbox import process

NAME_RE = re.compile(r"[a-z0-9]([-a-z0-9]{0,38}[a-z0-9])?")
RESULTS = "/results"
PLAN = f"{RESULTS}/plan"
OUT = f"{RESULTS}/out"  # a shard pod's own folder, shards/K of the volume
LABEL = "plimsoll-ci/squeeze"
FILES = ("base.yaml", "plan.yaml", "shards.yaml", "merge.yaml")
KEY_ENV = "PLIMSOLL_SQUEEZE_KEY"  # the job key's private half, from the Secret NAME-job-key
KEYS = "/keys"  # the merge pod's read-only mount of the Secret's public half
WALL_NOTE = ("each grading in bubblewrap (PLIMSOLL_BWRAP=required): own user, mount and pid "
             "namespaces; a pod where bubblewrap cannot make them exits 2 and grades nothing")
SETTINGS_NOTE = ("hostUsers false, procMount Unmasked, seccomp and AppArmor Unconfined: what "
                 "bubblewrap needs under runc (docs/scale.md)")


class Cluster(NamedTuple):
    """What the manifests need to know of the cluster and the run."""

    name: str  # the run's name: every object is NAME-something, every pod labelled with it
    shards: int
    image: str
    job: str  # the job file's path inside the image
    namespace: str = "default"
    runtime_class: str = "gvisor"
    cpu: str = "2"  # per pod (limit = request)
    memory: str = "2Gi"
    storage: str = "1Gi"
    storage_class: str | None = None
    jobs_per_pod: int = 0  # squeeze run --jobs (0: the pod's cores)
    bubblewrap_settings: bool = False  # what bubblewrap needs in the shard pods under runc


def check(cluster: Cluster) -> None:
    """BadInput naming the flag that cannot make a valid manifest."""
    if not NAME_RE.fullmatch(cluster.name):
        raise BadInput(f"--name {cluster.name!r}: lower-case letters, digits and '-', at most 40, "
                       "starting and ending with a letter or digit")
    if not 1 <= cluster.shards <= 1000:
        raise BadInput(f"--shards {cluster.shards}: give 1 to 1000")
    if not cluster.image or any(c.isspace() for c in cluster.image):
        raise BadInput("--image: give the image holding plimsoll-ci and the job, e.g. "
                       "registry.example.org/squeeze-job:1")


def _meta(cluster: Cluster, suffix: str) -> dict[str, Any]:
    return {"name": f"{cluster.name}-{suffix}", "namespace": cluster.namespace,
            "labels": {LABEL: cluster.name}}


def _pod(cluster: Cluster, role: str, script: str, mounts: list[dict[str, Any]],
         env: list[dict[str, Any]]) -> dict[str, Any]:
    """The pod template every step shares: gVisor, no token, no root, no capabilities, a
    read-only root with an emptyDir /tmp, limits, and `mounts` of the results volume."""
    resources = {"cpu": cluster.cpu, "memory": cluster.memory}
    security: dict[str, Any] = {"allowPrivilegeEscalation": False, "runAsNonRoot": True,
                                "readOnlyRootFilesystem": True,
                                "capabilities": {"drop": ["ALL"]}}
    container: dict[str, Any] = {
        "name": role,
        "image": cluster.image,
        "command": ["/bin/sh", "-ec", script],
        "env": [{"name": "HOME", "value": "/tmp"}, *env],
        "resources": {"requests": dict(resources), "limits": dict(resources)},
        "securityContext": security,
        "volumeMounts": [*mounts, {"name": "tmp", "mountPath": "/tmp"}],
    }
    if role in ("plan", "shards", "merge"):  # every pod that signs: the job key, never a new one
        container["env"].append({"name": KEY_ENV, "valueFrom": {"secretKeyRef": {
            "name": f"{cluster.name}-job-key", "key": "key.pem"}}})
    spec: dict[str, Any] = {
        "runtimeClassName": cluster.runtime_class,
        "automountServiceAccountToken": False,
        "enableServiceLinks": False,
        "restartPolicy": "Never",
        "securityContext": {"runAsNonRoot": True, "runAsUser": 1000, "runAsGroup": 1000,
                            "fsGroup": 1000, "seccompProfile": {"type": "RuntimeDefault"}},
        "containers": [container],
        "volumes": [{"name": "results",
                     "persistentVolumeClaim": {"claimName": f"{cluster.name}-results"}},
                    {"name": "tmp", "emptyDir": {"sizeLimit": "1Gi"}}],
    }
    meta: dict[str, Any] = {"labels": {LABEL: cluster.name, f"{LABEL}-role": role}}
    if role == "shards":
        meta["annotations"] = {f"{LABEL}-wall": WALL_NOTE}
    if role == "shards" and cluster.bubblewrap_settings:
        # Under runc, bubblewrap's user namespace needs seccomp and AppArmor to allow unshare and
        # mount, and a /proc it may mount again; the pod's own user namespace keeps the
        # container's ids off the node's.
        spec["hostUsers"] = False
        security.update({"procMount": "Unmasked", "seccompProfile": {"type": "Unconfined"},
                         "appArmorProfile": {"type": "Unconfined"}})
        meta["annotations"][f"{LABEL}-settings"] = SETTINGS_NOTE
    return {"metadata": meta, "spec": spec}


def _job(cluster: Cluster, role: str, script: str, mounts: list[dict[str, Any]],
         env: list[dict[str, Any]] | None = None, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": _meta(cluster, role),
            "spec": {"backoffLimit": 0, **spec,
                     "template": _pod(cluster, role, script, mounts, env or [])}}


def manifests(cluster: Cluster) -> dict[str, list[dict[str, Any]]]:
    """Each file's documents (see the module doc)."""
    check(cluster)
    n, job = cluster.shards, cluster.job
    grading = (f"--provider process --jobs {cluster.jobs_per_pod} "
               f"--signing-key-env {KEY_ENV}")
    pvc: dict[str, Any] = {
        "apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": _meta(cluster, "results"),
        "spec": {"accessModes": ["ReadWriteMany"],
                 "resources": {"requests": {"storage": cluster.storage}}}}
    if cluster.storage_class:
        pvc["spec"]["storageClassName"] = cluster.storage_class
    policy = {
        "apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
        "metadata": _meta(cluster, "no-egress"),
        "spec": {"podSelector": {"matchLabels": {LABEL: cluster.name}},
                 "policyTypes": ["Ingress", "Egress"], "ingress": [], "egress": []}}
    plan = _job(cluster, "plan", f"plimsoll-ci squeeze plan {job} --out {PLAN} {grading}",
                [{"name": "results", "mountPath": PLAN, "subPath": "plan"}])
    # The pod of index K: the plan read-only, and only its own folder (shards/K) read-write.
    shards = _job(
        cluster, "shards",
        'i=$((JOB_COMPLETION_INDEX + 1)); '
        f"plimsoll-ci squeeze run {job} --plan {PLAN} --shard \"$i/{n}\" --out {OUT} {grading}",
        [{"name": "results", "mountPath": PLAN, "subPath": "plan", "readOnly": True},
         {"name": "results", "mountPath": OUT, "subPathExpr": "shards/$(SHARD_INDEX)"}],
        [{"name": "SHARD_INDEX", "valueFrom": {"fieldRef": {
            "fieldPath": "metadata.annotations['batch.kubernetes.io/job-completion-index']"}}},
         {"name": process.BWRAP_ENV, "value": process.REQUIRED}],
        completionMode="Indexed", completions=n, parallelism=n)
    # The merge pins the job key's public half, mounted from the Secret: never a key found in a
    # shard's folder, nor the merged folder's own harness.pub.
    pub = f"{KEYS}/job.pub"
    merge = _job(cluster, "merge",
                 f"plimsoll-ci bundle merge {RESULTS}/shards/* --out {RESULTS}/merged "
                 f"--pub {pub} --signing-key-env {KEY_ENV} && "
                 f"plimsoll-ci squeeze verify {RESULTS}/merged --pub {pub} --shard-pub {pub}",
                 [{"name": "results", "mountPath": RESULTS},
                  {"name": "job-key", "mountPath": KEYS, "readOnly": True}])
    merge["spec"]["template"]["spec"]["volumes"].append(
        {"name": "job-key", "secret": {"secretName": f"{cluster.name}-job-key",
                                       "items": [{"key": "key.pub", "path": "job.pub"}]}})
    return {"base.yaml": [pvc, policy], "plan.yaml": [plan], "shards.yaml": [shards],
            "merge.yaml": [merge]}


def steps(cluster: Cluster, folder: str) -> list[str]:
    """The kubectl commands that run the manifests in order."""
    ns = f"-n {cluster.namespace}"
    wait = "kubectl wait {ns} --for=condition=complete --timeout=6h job/{name}"
    return [
        "plimsoll-ci keygen --out job   # once; keep job.key as you keep any signing key",
        f"kubectl create secret generic {ns} {cluster.name}-job-key "
        "--from-file=key.pem=job.key --from-file=key.pub=job.pub",
        f"kubectl apply {ns} -f {folder}/base.yaml",
        f"kubectl apply {ns} -f {folder}/plan.yaml",
        wait.format(ns=ns, name=f"{cluster.name}-plan"),
        f"kubectl apply {ns} -f {folder}/shards.yaml",
        wait.format(ns=ns, name=f"{cluster.name}-shards"),
        f"kubectl apply {ns} -f {folder}/merge.yaml",
        wait.format(ns=ns, name=f"{cluster.name}-merge"),
    ]


def write(cluster: Cluster, out: Path) -> list[Path]:
    """Write the four files into the new or empty folder `out`; their paths."""
    import yaml

    from plimsoll_ci.squeeze import account

    docs = manifests(cluster)
    account.claim_out(out)
    written = []
    for name in FILES:
        path = out / name
        path.write_text(yaml.safe_dump_all(docs[name], sort_keys=False), encoding="utf-8")
        written.append(path)
    return written
