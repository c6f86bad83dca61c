#!/usr/bin/env python3
"""The controller at scale on kwok (scripts/kube-cluster.sh up --nodes N).

Starts `skrull-controller serve` (admin kubeconfig, namespace skrull-scale),
creates JOBS SkrullJobs of MIN..MAX pods each (CPU pods: gpusPerProc 0, so the
fake nodes' 8 GPUs do not cap how many run), waits until every job is Running
and reports:
  create-to-Running per job (job creation -> status.startTime, when the
  controller saw every pod Running), p50 and p99; the same for the scheduler's
  own part (job creation -> the last pod's PodScheduled time); and the
  controller's own share (kwok's Running time of the last pod -> startTime);
  the controller's reconciles (its /metrics) and API writes (the API server's
  apiserver_request_total for the resources only the controller writes),
  per job and per pod; pod watch events per second (the API server's
  apiserver_watch_events_total for pods, all watchers);
  the controller's CPU seconds and peak RSS.

  python3 tests/kube/scale.py --jobs 500 --min-pods 8 --max-pods 64
"""

import argparse
import json
import os
import random
import re
import subprocess
import sys
import time
from datetime import datetime, timezone

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kube_e2e as e2e  # noqa: E402  (the cluster's tools and helpers)

NS = "skrull-scale"
# What only the controller writes: pods, Services and ConfigMaps it creates
# (no subresource: kube-scheduler POSTs pods/binding, kwok PATCHes
# pods/status), SkrullJob status patches. Events are left out: the scheduler
# records one per pod too.
CONTROLLER_WRITES = {("pods", ""), ("services", ""), ("configmaps", ""),
                     ("skrulljobs", "status")}


def api_metrics():
    return e2e.kubectl("get", "--raw", "/metrics", timeout=60).stdout


def writes(metrics):
    total = 0
    for line in metrics.splitlines():
        if not line.startswith("apiserver_request_total{"):
            continue
        labels = dict(re.findall(r'(\w+)="([^"]*)"', line.split("}", 1)[0]))
        if (labels.get("resource"), labels.get("subresource", "")) in CONTROLLER_WRITES and \
                labels.get("verb") in ("POST", "PATCH", "PUT", "DELETE"):
            total += int(float(line.rsplit(" ", 1)[1]))
    return total


def watch_events(metrics):
    total = 0
    for line in metrics.splitlines():
        if line.startswith("apiserver_watch_events_total{") and 'resource="pods"' in line:
            total += int(float(line.rsplit(" ", 1)[1]))
    return total


def ts(s):
    return datetime.strptime(s, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc).timestamp()


def pct(values, p):
    v = sorted(values)
    return v[min(len(v) - 1, int(round(p / 100 * (len(v) - 1))))]


def proc_stat(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    cpu = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    with open(f"/proc/{pid}/status") as f:
        hwm = int(re.search(r"VmHWM:\s+(\d+)", f.read()).group(1))
    return cpu, hwm


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--jobs", type=int, default=500)
    ap.add_argument("--min-pods", type=int, default=8)
    ap.add_argument("--max-pods", type=int, default=64)
    ap.add_argument("--timeout", type=int, default=1800)
    ap.add_argument("--workers", type=int, default=2, help="skrull-controller serve --workers")
    args = ap.parse_args()
    if e2e.kubectl("get", "--raw", "/readyz", timeout=20).returncode != 0:
        sys.exit("the cluster is not up: scripts/kube-cluster.sh up --nodes 200")
    e2e.kubectl("apply", "-f", os.path.join(e2e.ROOT, "charts", "skrull", "files", "crds",
                                            "skrulljobs.skrull.io.yaml"), check_rc=True)
    e2e.kubectl("wait", "--for=condition=Established", "crd/skrulljobs.skrull.io")
    e2e.kubectl("delete", "namespace", NS, "--ignore-not-found", "--wait=true", timeout=600)
    e2e.kubectl("create", "namespace", NS, check_rc=True)
    log = open("/tmp/skrull-scale-controller.log", "w")
    ctl = subprocess.Popen([os.path.join(e2e.BIN, "skrull-controller"), "serve", "--kubeconfig",
                            e2e.KUBECONFIG, "--namespace", NS, "--metrics-port", "18080",
                            "--metrics-address", "127.0.0.1", "--resync-seconds", "60",
                            "--workers", str(args.workers)],
                           stdout=log, stderr=subprocess.STDOUT)
    time.sleep(2)
    before = api_metrics()
    rng = random.Random(1)
    sizes = [rng.randint(args.min_pods, args.max_pods) for _ in range(args.jobs)]
    docs = []
    for i, n in enumerate(sizes):
        docs.append(f"""apiVersion: skrull.io/v1alpha1
kind: SkrullJob
metadata: {{name: job-{i}, namespace: {NS}}}
spec:
  model: {{config: /data/tiny/config.json}}
  data: {{path: /data/train.jsonl}}
  parallelism: {{nodes: {n}, procsPerNode: 1, dataParallel: {n}, contextParallel: 1}}
  scheduler: {{bucketSize: 4K, batchSize: 1}}
  resources: {{gpusPerProc: 0}}
  runPolicy: {{startDeadlineSeconds: 0}}
""")
    start = time.time()
    e2e.kubectl("apply", "-f", "-", input_text="---\n".join(docs), check_rc=True, timeout=600)
    print(f"created {args.jobs} jobs, {sum(sizes)} pods, in {time.time() - start:.1f} s")

    def all_running():
        items = (e2e.get_json("skrulljobs", "-n", NS, timeout=120) or {}).get("items", [])
        running = sum(1 for j in items if j.get("status", {}).get("phase") == "Running")
        print(f"  {time.time() - start:6.0f} s: {running}/{args.jobs} Running", flush=True)
        return items if running == args.jobs else None

    items = e2e.wait_until("every job Running", all_running, args.timeout, interval=15)
    wall = time.time() - start
    after = api_metrics()
    cpu, hwm = proc_stat(ctl.pid)
    metrics = subprocess.run(["curl", "-s", "http://127.0.0.1:18080/metrics"], capture_output=True,
                             text=True).stdout
    reconciles = sum(int(float(m)) for m in re.findall(
        r'skrull_controller_reconcile_total\{result="\w+"\} (\S+)', metrics))
    ctl.terminate()
    ctl.wait(timeout=30)
    if not items:
        sys.exit("not every job reached Running")
    pods = (e2e.get_json("pods", "-n", NS, timeout=300) or {}).get("items", [])
    scheduled, started = {}, {}  # job -> its last pod's bind time / kwok's Running time
    for p in pods:
        job = p["metadata"]["labels"]["skrull.io/job-name"]
        for c in p.get("status", {}).get("conditions", []):
            if c["type"] == "PodScheduled" and c["status"] == "True":
                scheduled[job] = max(scheduled.get(job, 0), ts(c["lastTransitionTime"]))
        for cs in p.get("status", {}).get("containerStatuses", []):
            at = cs.get("state", {}).get("running", {}).get("startedAt")
            if at:
                started[job] = max(started.get(job, 0), ts(at))
    to_running, to_scheduled, lag = [], [], []
    for j in items:
        name = j["metadata"]["name"]
        created = ts(j["metadata"]["creationTimestamp"])
        to_running.append(ts(j["status"]["startTime"]) - created)
        to_scheduled.append(scheduled[name] - created)
        lag.append(ts(j["status"]["startTime"]) - started.get(name, created))
    n_pods = sum(sizes)
    w = writes(after) - writes(before)
    print(json.dumps({
        "jobs": args.jobs, "pods": n_pods, "workers": args.workers, "wall_s": round(wall, 1),
        "create_to_running_s": {"p50": pct(to_running, 50), "p99": pct(to_running, 99)},
        "create_to_scheduled_s": {"p50": pct(to_scheduled, 50), "p99": pct(to_scheduled, 99)},
        # status.startTime after kwok marked the job's last pod Running: the
        # controller's own share (1 s timestamp resolution).
        "last_pod_running_to_job_running_s": {"p50": pct(lag, 50), "p99": pct(lag, 99)},
        "reconciles_per_job": round(reconciles / args.jobs, 1),
        "api_writes_per_job": round(w / args.jobs, 1), "api_writes_per_pod": round(w / n_pods, 2),
        "pod_watch_events_per_s": round((watch_events(after) - watch_events(before)) / wall, 1),
        "controller_cpu_s": round(cpu, 1), "controller_peak_rss_mib": round(hwm / 1024, 1),
    }, indent=1))
    e2e.kubectl("delete", "namespace", NS, "--wait=false")


if __name__ == "__main__":
    main()
