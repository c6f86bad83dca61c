"""values.yaml, values.schema.json and their documentation, for check_chart.py.

check_lint: helm lint --strict passes with the default values and with
values-all.yaml; values.schema.json makes lint fail on bad values, each with
the schema's message; kubeVersion refuses Kubernetes 1.26.
check_values_docs: every value is documented (`# --`) and typed, and
docs/deploy.md's values table lists each with values.yaml's default.
"""

import json
import os
import re

from crd_schema import load_k8s_yaml


def check_lint(c, helm, chart, values_all):
    for name, args in [("default values", []), ("values-all.yaml", ["-f", values_all])]:
        out = helm.run("lint", "--strict", chart, *args)
        c.check(
            f"lint --strict passes with {name}",
            out.returncode == 0 and "0 chart(s) failed" in out.stdout,
            out.stdout + out.stderr,
        )
    # values.schema.json: each bad value must fail lint with the schema's message.
    bad = [
        (["--set", "replicaCount=0"], "replicaCount: Must be greater than or equal to 1"),
        (["--set", "replicacount=2"], "Additional property replicacount is not allowed"),
        (
            ["--set", "controller.resyncSeconds=0"],
            "controller.resyncSeconds: Must be greater than or equal to 1",
        ),
        (
            ["--set", "controller.image.pullPolicy=Sometimes"],
            "controller.image.pullPolicy: controller.image.pullPolicy must be one of",
        ),
        (["--set", "watchNamespace=Team_A"], "watchNamespace: Does not match pattern"),
        (
            ["--set", "metrics.podMonitor.maxProcsPerNode=0"],
            "maxProcsPerNode: Must be greater than or equal to 1",
        ),
        (
            ["--set", "metrics.podMonitor.interval=15"],
            "metrics.podMonitor.interval: Invalid type. Expected: string, given: integer",
        ),
        (
            ["--set", "metrics.serviceMonitor.interval=30 seconds"],
            "metrics.serviceMonitor.interval: Does not match pattern",
        ),
        (["--set", "crds.keep=yes"], "crds.keep: Invalid type. Expected: boolean, given: string"),
        (
            ["--set", "controller.metricsPort=70000"],
            "controller.metricsPort: Must be less than or equal to 65535",
        ),
        (
            ["--set", "trainer.serviceAccount.namespaces={a,a}"],
            "trainer.serviceAccount.namespaces: array items[0,1] must be unique",
        ),
        (["--set", "imagePullSecrets[0].nam=regcred"], "imagePullSecrets.0: name is required"),
        (
            ["--set", "controller.extraArgs[0]=1"],
            "controller.extraArgs.0: Invalid type. Expected: string, given: integer",
        ),
        (
            ["--set", "grafanaDashboard.labelValue=not valid"],
            "grafanaDashboard.labelValue: Does not match pattern",
        ),
    ]
    for args, want in bad:
        out = helm.run("lint", "--strict", chart, *args)
        text = out.stdout + out.stderr
        c.check(
            f"lint rejects {' '.join(args[1:])}",
            out.returncode != 0 and want in text,
            f"rc={out.returncode}, wanted {want!r} in:\n{text}",
        )
    for version, ok in [("1.26.9", False), ("1.27.0", True), ("1.32.4", True)]:
        out = helm.run("template", "skrull", chart, "--kube-version", version)
        c.check(
            f"kubeVersion >=1.27: {'renders' if ok else 'refuses'} for {version}",
            (out.returncode == 0) == ok and (ok or "requires kubeVersion" in out.stderr),
            out.stderr,
        )


def documented_values(chart):
    """Dotted keys of values.yaml that carry a `# --` comment (helm-docs)."""
    keys, stack, pending = [], [], False
    with open(os.path.join(chart, "values.yaml")) as f:
        for line in f:
            if re.match(r"\s*# -- ", line):
                pending = True
            m = re.match(r"^( *)([A-Za-z]\w*):", line)
            if m:
                indent = len(m.group(1))
                while stack and stack[-1][0] >= indent:
                    stack.pop()
                stack.append((indent, m.group(2)))
                if pending:
                    keys.append(".".join(k for _, k in stack))
                pending = False
    return keys


def schema_leaves(schema, path=""):
    """Dotted keys of values.schema.json below which no property is declared."""
    for name, sub in schema.get("properties", {}).items():
        key = f"{path}.{name}" if path else name
        if "properties" in sub:
            yield from schema_leaves(sub, key)
        elif key != "global":
            yield key


def check_values_docs(c, chart, root):
    with open(os.path.join(chart, "values.yaml")) as f:
        values = load_k8s_yaml(f.read())
    with open(os.path.join(chart, "values.schema.json")) as f:
        leaves = sorted(schema_leaves(json.load(f)))
    keys = documented_values(chart)
    c.equal(
        "every value is documented with `# --` in values.yaml and typed in values.schema.json",
        sorted(keys),
        leaves,
    )
    with open(os.path.join(root, "docs", "deploy.md")) as f:
        section = f.read().split("\n## Values\n", 1)[-1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| `([\w.]+)` \| `(.*?)` \|", section, re.M)
    c.equal(
        "docs/deploy.md's values table lists every value, in values.yaml's order",
        [k for k, _ in rows],
        keys,
    )
    wrong = []
    for key, default in rows:
        value = values
        for part in key.split("."):
            value = value.get(part) if isinstance(value, dict) else None
        if json.loads(default) != value:
            wrong.append(f"{key}: table {default}, values.yaml {json.dumps(value)}")
    c.check("docs/deploy.md's values table shows values.yaml's defaults", not wrong, wrong)
