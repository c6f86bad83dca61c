#!/usr/bin/env python3
"""Offline test of charts/skrull with a real helm (run by scripts/check-chart.sh).

  check_chart.py --helm PATH --cel-js DIR

Lints and renders the chart in several configurations and checks the output;
checks that values.schema.json rejects bad values; checks the SkrullJob CRD
(structural, mirrors api/ and docs/job-spec.md) and validates example jobs
against it, including jobs that must be rejected (check_values.py and
check_crd.py hold those parts). Prints one line per check and ends with
"N passed, M failed"; exits 1 on any failure.
"""

import argparse
import copy
import json
import os
import subprocess
import sys
import tarfile
import tempfile

from check_crd import check_crd_definition, check_jobs
from check_images import check_image_defaults
from check_values import check_lint, check_values_docs
from crd_schema import SchemaValidator, load_k8s_yaml, load_k8s_yaml_all, node_cel_runner

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
CHART = os.path.join(ROOT, "charts", "skrull")
HERE = os.path.dirname(os.path.abspath(__file__))
VALUES_ALL = os.path.join(HERE, "values-all.yaml")
CRD_FILE = os.path.join(CHART, "files", "crds", "skrulljobs.skrull.io.yaml")
MONITORING_APIS = [
    "monitoring.coreos.com/v1/PodMonitor",
    "monitoring.coreos.com/v1/ServiceMonitor",
    "monitoring.coreos.com/v1/PrometheusRule",
]
TRAINER_POD_LABELS = {  # what the controller puts on trainer pods (docs/deploy.md)
    "app.kubernetes.io/name": "skrull",
    "app.kubernetes.io/component": "trainer",
    "app.kubernetes.io/managed-by": "skrull-controller",
    "skrull.io/job-name": "demo",
    "skrull.io/node-rank": "0",
}
CONTROLLER_RULES = [  # docs/deploy.md, "RBAC": only the verbs the controller uses
    (("skrull.io",), ("skrulljobs",), ("get", "list", "watch", "delete")),
    (("skrull.io",), ("skrulljobs/status",), ("get", "patch")),
    (("skrull.io",), ("skrulljobs/finalizers",), ("update",)),
    (("",), ("pods",), ("get", "list", "watch", "create", "delete")),
    (("",), ("services",), ("get", "list", "watch", "create")),
    (("",), ("configmaps",), ("get", "list", "watch", "create", "update")),
    (("",), ("events",), ("create",)),
]
LEASE_RULES = [(("coordination.k8s.io",), ("leases",), ("get", "create", "update"))]


class Checks:
    def __init__(self):
        self.passed = 0
        self.failed = 0

    def check(self, name, ok, detail=""):
        if ok:
            self.passed += 1
            print(f"ok    {name}")
        else:
            self.failed += 1
            print(f"FAIL  {name}" + (f": {detail}" if detail else ""))
        return ok

    def equal(self, name, got, want):
        return self.check(name, got == want, f"got {got!r}, want {want!r}")


class Helm:
    def __init__(self, path):
        self.path = path

    def run(self, *args):
        return subprocess.run([self.path, *args], capture_output=True, text=True, check=False)

    def render(self, *args, release="skrull", namespace="skrull-system", chart=CHART):
        out = self.run("template", release, chart, "-n", namespace, *args)
        if out.returncode != 0:
            raise RuntimeError(f"helm template {' '.join(args)} failed:\n{out.stderr}")
        return load_k8s_yaml_all(out.stdout)


def api_flags(apis=MONITORING_APIS):
    return [flag for api in apis for flag in ("--api-versions", api)]


def by_kind(docs, kind):
    return [d for d in docs if d["kind"] == kind]


def one(docs, kind, name=None):
    found = [d for d in by_kind(docs, kind) if name is None or d["metadata"]["name"] == name]
    if len(found) != 1:
        raise AssertionError(f"expected one {kind} {name or ''}, found {len(found)}")
    return found[0]


def rules_of(role):
    return [
        (tuple(r["apiGroups"]), tuple(r["resources"]), tuple(r["verbs"])) for r in role["rules"]
    ]


def container(docs):
    return one(docs, "Deployment")["spec"]["template"]["spec"]["containers"][0]


# -------------------------------------------------------- rendered objects


def check_common_metadata(c, docs, label, release):
    bad_labels = [
        f"{d['kind']}/{d['metadata']['name']}"
        for d in docs
        if d["metadata"].get("labels", {}).get("app.kubernetes.io/instance") != release
        or d["metadata"]["labels"].get("helm.sh/chart") != "skrull-0.1.0"
        or d["metadata"]["labels"].get("app.kubernetes.io/managed-by") != "Helm"
    ]
    c.check(f"{label}: every object has the chart's standard labels", not bad_labels, bad_labels)
    cluster_scoped = {"CustomResourceDefinition", "ClusterRole", "ClusterRoleBinding"}
    bad_ns = [
        f"{d['kind']}/{d['metadata']['name']}"
        for d in docs
        if (d["kind"] in cluster_scoped) == ("namespace" in d["metadata"])
    ]
    c.check(f"{label}: namespaced objects (only) carry metadata.namespace", not bad_ns, bad_ns)
    names = [(d["kind"], d["metadata"].get("namespace"), d["metadata"]["name"]) for d in docs]
    c.check(
        f"{label}: no two objects share kind, namespace and name", len(set(names)) == len(names)
    )
    long_names = [n for _, _, n in names if len(n) > 63]
    c.check(f"{label}: object names fit 63 characters", not long_names, long_names)


def check_controller_pod(c, docs, label, selector_want):
    dep = one(docs, "Deployment")
    selector = dep["spec"]["selector"]["matchLabels"]
    pod_labels = dep["spec"]["template"]["metadata"]["labels"]
    c.equal(f"{label}: Deployment selector is name + instance + component", selector, selector_want)
    c.check(
        f"{label}: pod template carries the selector labels",
        all(pod_labels.get(k) == v for k, v in selector.items()),
    )
    c.check(
        f"{label}: Deployment selector never matches trainer pods",
        not all(TRAINER_POD_LABELS.get(k) == v for k, v in selector.items()),
    )
    svc = one(docs, "Service")
    c.equal(f"{label}: Service selects the controller pods", svc["spec"]["selector"], selector)
    c.equal(
        f"{label}: Service port is named metrics -> targetPort metrics",
        [(p["name"], p["targetPort"]) for p in svc["spec"]["ports"]],
        [("metrics", "metrics")],
    )
    ctr = container(docs)
    env = {
        e["name"]: e.get("valueFrom", {}).get("fieldRef", {}).get("fieldPath") for e in ctr["env"]
    }
    c.check(
        f"{label}: POD_NAMESPACE and POD_NAME come from the downward API",
        env.get("POD_NAMESPACE") == "metadata.namespace" and env.get("POD_NAME") == "metadata.name",
        env,
    )
    for probe in ("livenessProbe", "readinessProbe"):
        c.equal(
            f"{label}: {probe} is GET /healthz on port metrics",
            ctr[probe]["httpGet"],
            {"path": "/healthz", "port": "metrics"},
        )
    sc = ctr["securityContext"]
    pod_sc = dep["spec"]["template"]["spec"]["securityContext"]
    c.check(
        f"{label}: non-root, read-only root filesystem, no capabilities, no privilege escalation",
        sc.get("runAsNonRoot")
        and pod_sc.get("runAsNonRoot")
        and sc.get("readOnlyRootFilesystem")
        and sc.get("capabilities", {}).get("drop") == ["ALL"]
        and sc.get("allowPrivilegeEscalation") is False,
        sc,
    )
    return ctr


def check_controller_rbac(c, docs, label, kind, namespace, prefix, account, release_ns):
    """The controller's (Cluster)Role and binding, and its lease Role."""
    role = one(docs, kind, f"{prefix}-controller")
    c.equal(
        f"{label}: controller {kind} (namespace {namespace}) has the rules of docs/deploy.md",
        (role["metadata"].get("namespace"), rules_of(role)),
        (namespace, CONTROLLER_RULES),
    )
    binding = one(docs, f"{kind}Binding", f"{prefix}-controller")
    c.equal(
        f"{label}: {kind}Binding binds the controller ServiceAccount of {release_ns}",
        (binding["metadata"].get("namespace"), binding["roleRef"], binding["subjects"]),
        (
            namespace,
            {"apiGroup": "rbac.authorization.k8s.io", "kind": kind, "name": f"{prefix}-controller"},
            [{"kind": "ServiceAccount", "name": account, "namespace": release_ns}],
        ),
    )
    lease = one(docs, "Role", f"{prefix}-leader-election")
    c.equal(
        f"{label}: leases: a Role in the release namespace",
        (lease["metadata"]["namespace"], rules_of(lease)),
        (release_ns, LEASE_RULES),
    )


def check_defaults(c, helm):
    docs = helm.render()
    label = "defaults"
    kinds = sorted(d["kind"] for d in docs)
    c.equal(
        f"{label}: rendered kinds",
        kinds,
        sorted(
            [
                "ClusterRole",
                "ClusterRole",
                "ConfigMap",
                "CustomResourceDefinition",
                "Deployment",
                "Role",
                "Role",
                "RoleBinding",
                "RoleBinding",
                "Service",
                "ServiceAccount",
                "ServiceAccount",
            ]
        ),
    )
    check_common_metadata(c, docs, label, "skrull")
    check_no_cluster_wide_writes(c, docs, label)
    ctr = check_controller_pod(
        c,
        docs,
        label,
        {
            "app.kubernetes.io/name": "skrull",
            "app.kubernetes.io/instance": "skrull",
            "app.kubernetes.io/component": "controller",
        },
    )
    c.equal(
        f"{label}: controller image is <repository>:<appVersion>",
        ctr["image"],
        "ghcr.io/skrull/controller:0.1.0",
    )
    c.equal(
        f"{label}: controller args",
        ctr["args"],
        [
            "serve",
            "--metrics-port",
            "8080",
            "--leader-elect",
            "--namespace",
            "skrull-system",
            "--trainer-image",
            "ghcr.io/skrull/trainer:0.1.0",
            "--trainer-service-account",
            "skrull-trainer",
            "--resync-seconds",
            "60",
            "--max-world-size",
            "65536",
        ],
    )
    c.equal(
        f"{label}: container port metrics 8080",
        [(p["name"], p["containerPort"]) for p in ctr["ports"]],
        [("metrics", 8080)],
    )
    c.equal(f"{label}: 1 replica", one(docs, "Deployment")["spec"]["replicas"], 1)
    check_controller_rbac(
        c, docs, label, "Role", "skrull-system", "skrull", "skrull-controller", "skrull-system"
    )
    trainer_sa = one(docs, "ServiceAccount", "skrull-trainer")
    c.check(
        f"{label}: trainer ServiceAccount mounts no token and has no RBAC",
        trainer_sa.get("automountServiceAccountToken") is False
        and not any(
            s.get("name") == "skrull-trainer"
            for b in by_kind(docs, "RoleBinding") + by_kind(docs, "ClusterRoleBinding")
            for s in b["subjects"]
        ),
    )
    edit = one(docs, "ClusterRole", "skrull-edit")
    c.check(
        f"{label}: SkrullJobs aggregate into the admin/edit/view roles",
        edit["metadata"]["labels"].get("rbac.authorization.k8s.io/aggregate-to-edit") == "true"
        and one(docs, "ClusterRole", "skrull-view")["metadata"]["labels"].get(
            "rbac.authorization.k8s.io/aggregate-to-view"
        )
        == "true",
    )
    check_dashboard(c, docs, label, "grafana_dashboard", "1", "skrull-system")
    crd = one(docs, "CustomResourceDefinition")
    c.equal(
        f"{label}: CRD keeps on uninstall",
        crd["metadata"].get("annotations"),
        {"helm.sh/resource-policy": "keep"},
    )
    with open(CRD_FILE) as f:
        file_crd = load_k8s_yaml(f.read())
    rendered = copy.deepcopy(crd)
    for key in ("labels", "annotations"):
        rendered["metadata"].pop(key, None)
    c.check(
        f"{label}: rendered CRD equals files/crds/skrulljobs.skrull.io.yaml", rendered == file_crd
    )
    docs_apis = helm.render("-f", VALUES_ALL, *api_flags([]))
    c.check(
        "values-all.yaml without monitoring APIs: no PodMonitor, ServiceMonitor or PrometheusRule",
        not [
            d for d in docs_apis if d["kind"] in ("PodMonitor", "ServiceMonitor", "PrometheusRule")
        ],
    )
    for api in MONITORING_APIS:
        kind = api.rsplit("/", 1)[1]
        only = helm.render("-f", VALUES_ALL, *api_flags([api]))
        c.equal(
            f"values-all.yaml with only {kind} served: renders exactly that monitoring kind",
            sorted({d["kind"] for d in only} & {"PodMonitor", "ServiceMonitor", "PrometheusRule"}),
            [kind],
        )
    off = helm.render(*api_flags())
    c.check(
        "defaults with monitoring APIs served: monitors stay off",
        not [d for d in off if d["kind"] in ("PodMonitor", "ServiceMonitor", "PrometheusRule")],
    )
    pm = one(helm.render("--set", "metrics.podMonitor.enabled=true", *api_flags()), "PodMonitor")
    c.check(
        "defaults: the PodMonitor looks in the release namespace, metrics-0..metrics-7",
        pm["spec"]["namespaceSelector"] == {"matchNames": ["skrull-system"]}
        and [e["port"] for e in pm["spec"]["podMetricsEndpoints"]]
        == [f"metrics-{i}" for i in range(8)],
        pm["spec"],
    )


CORE_WRITES = {"create", "update", "patch", "delete", "deletecollection", "*"}


def check_no_cluster_wide_writes(c, docs, label):
    """No ClusterRole the chart binds lets anyone write pods, Services or ConfigMaps."""
    bound = {b["roleRef"]["name"] for b in by_kind(docs, "ClusterRoleBinding")}
    wide = [
        f"{r['metadata']['name']}: {rule}"
        for r in by_kind(docs, "ClusterRole")
        for rule in r["rules"]
        if (r["metadata"]["name"] in bound or not r["metadata"].get("labels", {}))
        and "" in rule["apiGroups"]
        and set(rule["resources"]) & {"pods", "services", "configmaps", "*"}
        and set(rule["verbs"]) & CORE_WRITES
    ]
    c.check(
        f"{label}: no cluster-wide write access to pods, services or configmaps",
        not wide and not by_kind(docs, "ClusterRoleBinding"),
        wide,
    )


def check_cluster_wide(c, helm):
    """rbac.clusterWide: the one mode with a ClusterRole, and every namespace watched."""
    label = "rbac.clusterWide=true"
    docs = helm.render("--set", "rbac.clusterWide=true", "--set", "metrics.podMonitor.enabled=true",
                       *api_flags())
    check_common_metadata(c, docs, label, "skrull")
    check_controller_rbac(
        c, docs, label, "ClusterRole", None, "skrull", "skrull-controller", "skrull-system"
    )
    c.check(
        f"{label}: no --namespace (every namespace is watched)",
        "--namespace" not in container(docs)["args"],
        container(docs)["args"],
    )
    c.equal(
        f"{label}: the PodMonitor looks in every namespace",
        one(docs, "PodMonitor")["spec"]["namespaceSelector"],
        {"any": True},
    )
    docs = helm.render("--set", "rbac.clusterWide=true", "--set", "watchNamespace=team-a")
    c.check(
        f"{label} with watchNamespace: a ClusterRole, one watched namespace",
        len([r for r in by_kind(docs, "ClusterRole") if r["metadata"]["name"] == "skrull-controller"])
        == 1
        and container(docs)["args"][4:6] == ["--namespace", "team-a"],
        container(docs)["args"],
    )


def check_dashboard(c, docs, label, key, value, namespace):
    cms = [d for d in by_kind(docs, "ConfigMap") if d["metadata"]["labels"].get(key) == value]
    if not c.check(f"{label}: one dashboard ConfigMap labelled {key}={value}", len(cms) == 1):
        return
    c.equal(f"{label}: dashboard ConfigMap namespace", cms[0]["metadata"]["namespace"], namespace)
    with open(os.path.join(CHART, "dashboards", "skrull.json")) as f:
        want = json.load(f)
    try:
        got = json.loads(cms[0]["data"]["skrull.json"])
    except (KeyError, ValueError) as e:
        c.check(f"{label}: dashboard ConfigMap holds valid JSON", False, str(e))
        return
    c.check(f"{label}: dashboard JSON equals dashboards/skrull.json", got == want)


def check_all_values(c, helm):
    docs = helm.render("-f", VALUES_ALL, *api_flags(), release="r", namespace="ops")
    label = "values-all"
    kinds = sorted(d["kind"] for d in docs)
    c.equal(
        f"{label}: rendered kinds (single namespace, monitors on)",
        kinds,
        sorted(
            [
                "ConfigMap",
                "CustomResourceDefinition",
                "Deployment",
                "PodMonitor",
                "PrometheusRule",
                "Role",
                "Role",
                "RoleBinding",
                "RoleBinding",
                "Service",
                "ServiceAccount",
                "ServiceAccount",
                "ServiceAccount",
                "ServiceMonitor",
            ]
        ),
    )
    check_common_metadata(c, docs, label, "r")
    selector = {
        "app.kubernetes.io/name": "sk",
        "app.kubernetes.io/instance": "r",
        "app.kubernetes.io/component": "controller",
    }
    ctr = check_controller_pod(c, docs, label, selector)
    c.equal(
        f"{label}: controller args",
        ctr["args"],
        [
            "serve",
            "--metrics-port",
            "9090",
            "--leader-elect",
            "--namespace",
            "team-a",
            "--trainer-image",
            "registry.example.com:5000/ml/skrull-trainer:0.1.0-cu124",
            "--trainer-service-account",
            "skrull-trainer",
            "--trainer-ipc-lock",
            "--trainer-shared-memory",
            "--resync-seconds",
            "120",
            "--max-world-size",
            "4096",
            "--prometheus-url",
            "http://prometheus-operated.monitoring:9090",
            "--workers=4",
        ],
    )
    c.equal(
        f"{label}: controller image and pull policy",
        (ctr["image"], ctr["imagePullPolicy"]),
        ("registry.example.com:5000/ml/skrull-controller:0.1.0-rc1", "Always"),
    )
    c.check(
        f"{label}: extraEnv appended after the downward-API variables",
        [e["name"] for e in ctr["env"]] == ["POD_NAMESPACE", "POD_NAME", "SKRULL_LOG_FORMAT"],
    )
    pod = one(docs, "Deployment")["spec"]["template"]
    spec = pod["spec"]
    c.check(
        f"{label}: pod settings (replicas, pull secrets, SA, scheduling, annotations, labels)",
        one(docs, "Deployment")["spec"]["replicas"] == 2
        and spec["imagePullSecrets"] == [{"name": "regcred"}]
        and spec["serviceAccountName"] == "skrull-operator"
        and spec["nodeSelector"] == {"kubernetes.io/os": "linux"}
        and spec["tolerations"][0]["key"] == "dedicated"
        and "nodeAffinity" in spec["affinity"]
        and spec["priorityClassName"] == "system-cluster-critical"
        and spec["securityContext"]["runAsUser"] == 10001
        and pod["metadata"]["annotations"] == {"example.com/audit": "true"}
        and pod["metadata"]["labels"].get("team") == "ml-platform",
    )
    check_no_cluster_wide_writes(c, docs, label)
    c.check(
        f"{label}: no ClusterRole or ClusterRoleBinding in single-namespace mode "
        "(aggregateToDefaultRoles off)",
        not by_kind(docs, "ClusterRole") and not by_kind(docs, "ClusterRoleBinding"),
    )
    check_controller_rbac(c, docs, label, "Role", "team-a", "ml-skrull", "skrull-operator", "ops")
    trainers = [
        d for d in by_kind(docs, "ServiceAccount") if d["metadata"]["name"] == "skrull-trainer"
    ]
    c.check(
        f"{label}: trainer ServiceAccount in each listed namespace, annotated, with pull secrets",
        sorted(d["metadata"]["namespace"] for d in trainers) == ["team-a", "team-b"]
        and all(
            d["metadata"]["annotations"] and d["imagePullSecrets"] == [{"name": "regcred"}]
            for d in trainers
        ),
    )
    crd = one(docs, "CustomResourceDefinition")
    c.check(
        f"{label}: crds.keep=false drops the keep annotation",
        "helm.sh/resource-policy" not in crd["metadata"].get("annotations", {}),
    )
    check_dashboard(c, docs, label, "grafana.example.com/dashboard", "skrull", "monitoring")
    check_monitors(c, docs, label, selector)


def check_monitors(c, docs, label, controller_selector):
    pm = one(docs, "PodMonitor")
    selector = pm["spec"]["selector"]["matchLabels"]
    c.check(
        f"{label}: PodMonitor selects trainer pods by the controller's labels",
        all(TRAINER_POD_LABELS.get(k) == v for k, v in selector.items())
        and selector.get("app.kubernetes.io/component") == "trainer",
        selector,
    )
    c.check(
        f"{label}: PodMonitor never selects the controller pod",
        not all(controller_selector.get(k) == v for k, v in selector.items()),
    )
    c.equal(
        f"{label}: PodMonitor namespaceSelector is watchNamespace",
        pm["spec"]["namespaceSelector"],
        {"matchNames": ["team-a"]},
    )
    endpoints = pm["spec"]["podMetricsEndpoints"]
    c.equal(
        f"{label}: one PodMonitor endpoint per local rank, metrics-0..metrics-3",
        [e["port"] for e in endpoints],
        [f"metrics-{i}" for i in range(4)],
    )
    c.check(
        f"{label}: PodMonitor endpoints honor the trainers' labels, path, interval, timeout",
        all(
            e["honorLabels"] is True
            and e["path"] == "/metrics"
            and e["interval"] == "10s"
            and e["scrapeTimeout"] == "5s"
            for e in endpoints
        ),
    )
    for kind in ("PodMonitor", "ServiceMonitor", "PrometheusRule"):
        c.equal(
            f"{label}: {kind} carries additionalLabels (release: prometheus)",
            one(docs, kind)["metadata"]["labels"].get("release"),
            "prometheus",
        )
    sm = one(docs, "ServiceMonitor")
    svc = one(docs, "Service")
    c.check(
        f"{label}: ServiceMonitor selects the controller Service",
        all(
            svc["metadata"]["labels"].get(k) == v
            for k, v in sm["spec"]["selector"]["matchLabels"].items()
        )
        and sm["spec"]["namespaceSelector"] == {"matchNames": ["ops"]},
    )
    c.equal(
        f"{label}: ServiceMonitor endpoint",
        sm["spec"]["endpoints"],
        [{"port": "metrics", "path": "/metrics", "interval": "1m", "scrapeTimeout": "10s"}],
    )
    with open(os.path.join(CHART, "dashboards", "recording-rules.yaml")) as f:
        recording = load_k8s_yaml(f.read())["groups"]
    groups = one(docs, "PrometheusRule")["spec"]["groups"]
    c.check(
        f"{label}: PrometheusRule embeds dashboards/recording-rules.yaml unchanged",
        groups[: len(recording)] == recording,
    )
    alerts = {r["alert"]: r for g in groups[len(recording) :] for r in g["rules"]}
    c.equal(
        f"{label}: PrometheusRule alerts",
        sorted(alerts),
        ["SkrullBucketSizeExceeded", "SkrullJobStalled"],
    )
    c.check(
        f"{label}: stalledAfterSeconds reaches the alert and $labels survive templating",
        alerts["SkrullJobStalled"]["expr"].endswith("> 600")
        and "{{ $labels.job }}" in alerts["SkrullJobStalled"]["annotations"]["summary"],
    )


def check_toggles(c, helm):
    docs = helm.render(
        "--set",
        "crds.install=false",
        "--set",
        "leaderElection.enabled=false",
        "--set",
        "grafanaDashboard.enabled=false",
        "--set",
        "rbac.create=false",
        "--set",
        "serviceAccount.create=false",
        "--set",
        "trainer.serviceAccount.create=false",
    )
    kinds = sorted(d["kind"] for d in docs)
    c.equal(
        "everything optional off: only the Deployment and Service", kinds, ["Deployment", "Service"]
    )
    ctr = container(docs)
    c.equal(
        "everything optional off: no --leader-elect, no --trainer-service-account",
        ctr["args"],
        [
            "serve",
            "--metrics-port",
            "8080",
            "--namespace",
            "skrull-system",
            "--trainer-image",
            "ghcr.io/skrull/trainer:0.1.0",
            "--resync-seconds",
            "60",
            "--max-world-size",
            "65536",
        ],
    )
    c.equal(
        "serviceAccount.create=false: pod runs as the namespace's default SA",
        one(docs, "Deployment")["spec"]["template"]["spec"]["serviceAccountName"],
        "default",
    )
    docs = helm.render(release="r" * 53)  # helm's longest release name
    c.check(
        "with a 53-character release name every object name fits 63 characters",
        all(
            len(d["metadata"]["name"]) <= 63 and not d["metadata"]["name"].endswith("-")
            for d in docs
        ),
    )
    docs = helm.render(release="prod")
    c.equal(
        "release name without the chart name prefixes objects with <release>-skrull",
        one(docs, "Deployment")["metadata"]["name"],
        "prod-skrull-controller",
    )


def check_notes(c, helm):
    """helm template does not print NOTES.txt: render it through a probe template."""
    with tempfile.TemporaryDirectory() as tmp:
        chart = os.path.join(tmp, "skrull")
        subprocess.run(["cp", "-r", CHART, chart], check=True)
        os.rename(os.path.join(chart, "templates", "NOTES.txt"), os.path.join(chart, "notes.txt"))
        with open(os.path.join(chart, "templates", "notes-probe.yaml"), "w") as f:
            f.write(
                "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: notes}\n"
                'data:\n  notes: {{ tpl (.Files.Get "notes.txt") . | toJson }}\n'
            )
        for label, args, wants in [
            (
                "defaults",
                [],
                [
                    "kubectl apply -n skrull-system -f charts/skrull/examples/skrulljob.yaml",
                    "kubectl -n skrull-system get sj -w",
                    "ConfigMap skrull-system/skrull-dashboard",
                    "set metrics.podMonitor.enabled=true",
                ],
            ),
            (
                "values-all without monitoring APIs",
                ["-f", VALUES_ALL],
                [
                    'watches SkrullJobs in namespace "team-a" only',
                    "kubectl apply -n team-a",
                    "does not serve monitoring.coreos.com/v1 PodMonitor",
                ],
            ),
            (
                "values-all",
                ["-f", VALUES_ALL, *api_flags()],
                ["PodMonitor ml-skrull-trainer scrapes every trainer rank"],
            ),
        ]:
            docs = helm.render(*args, "--show-only", "templates/notes-probe.yaml", chart=chart)
            notes = docs[0]["data"]["notes"]
            missing = [w for w in wants if w not in notes]
            c.check(
                f"NOTES.txt ({label}) says how to submit, watch and find metrics",
                not missing,
                f"missing {missing} in:\n{notes}",
            )
        docs = helm.render(
            "-f", VALUES_ALL, *api_flags(), "--show-only", "templates/notes-probe.yaml", chart=chart
        )
        c.check(
            "NOTES.txt has no warning when every monitoring API is served",
            "WARNING" not in docs[0]["data"]["notes"],
        )


def check_package(c, helm):
    with tempfile.TemporaryDirectory() as tmp:
        out = helm.run("package", CHART, "-d", tmp)
        if not c.check("helm package", out.returncode == 0, out.stderr):
            return
        tgz = os.path.join(tmp, "skrull-0.1.0.tgz")
        with tarfile.open(tgz) as t:
            names = set(t.getnames())
        want = {
            "skrull/files/crds/skrulljobs.skrull.io.yaml",
            "skrull/dashboards/skrull.json",
            "skrull/dashboards/recording-rules.yaml",
            "skrull/examples/skrulljob.yaml",
            "skrull/values.schema.json",
            "skrull/templates/NOTES.txt",
        }
        c.check(
            "packaged chart holds the CRD, dashboards, example and schema",
            want <= names,
            sorted(want - names),
        )
        c.check(
            "the packaged chart renders the same as the directory",
            helm.render(chart=tgz) == helm.render(),
        )


def chart_app_version():
    with open(os.path.join(CHART, "Chart.yaml")) as f:
        return load_k8s_yaml(f.read())["appVersion"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--helm", required=True)
    parser.add_argument("--cel-js", required=True, help="directory of @marcbachmann/cel-js")
    args = parser.parse_args()
    c = Checks()
    helm = Helm(args.helm)
    version = helm.run("version", "--short").stdout.strip()
    print(f"helm {version}; chart {os.path.relpath(CHART, ROOT)}")
    check_lint(c, helm, CHART, VALUES_ALL)
    check_defaults(c, helm)
    check_image_defaults(c, helm.render(), ROOT, chart_app_version())
    check_all_values(c, helm)
    check_cluster_wide(c, helm)
    check_toggles(c, helm)
    check_notes(c, helm)
    check_package(c, helm)
    check_values_docs(c, CHART, ROOT)
    with open(CRD_FILE) as f:
        crd = load_k8s_yaml(f.read())
    check_crd_definition(c, crd)
    schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    runner = node_cel_runner(os.path.join(HERE, "cel_eval.mjs"), args.cel_js)
    check_jobs(c, SchemaValidator(schema, runner))
    print(f"{c.passed} passed, {c.failed} failed")
    return 1 if c.failed else 0


if __name__ == "__main__":
    sys.exit(main())
