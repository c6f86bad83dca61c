"""The SkrullJob CRD's checks for check_chart.py.

check_crd_definition: the CRD is structural, names and printer columns are
right, and its spec schema mirrors api/ (the fields api/parse.cc reads, the
enum tables) and docs/job-spec.md (fields, types, enums).
check_jobs: example jobs validate against the schema; the documented mistakes
of examples/errors/ and single-field mutations are rejected with the expected
message, and valid variants accepted.
"""

import copy
import json
import os
import re

from crd_schema import load_k8s_yaml, structural_problems

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def schema_nodes(schema, path):
    """(dotted path, schema) for every property below `schema`; arrays add []."""
    for name, sub in schema.get("properties", {}).items():
        p = f"{path}.{name}"
        yield p, sub
        yield from schema_nodes(sub, p)
        if "items" in sub:
            yield p + "[]", sub["items"]
            yield from schema_nodes(sub["items"], p + "[]")


def kind_of(s):
    return "int-or-string" if s.get("x-kubernetes-int-or-string") else s["type"]


def doc_fields(path):
    """{field path: (type cell, allowed cell)} from the tables of docs/job-spec.md."""
    fields, prefix, columns = {}, None, None
    with open(path) as f:
        for line in f:
            if line.startswith("## "):
                sections = re.findall(r"\bspec\.\w+", line)
                prefix = None if not sections else sections[0] if len(sections) == 1 else "spec"
                columns = None
            elif prefix and line.startswith("| Field"):
                columns = [cell.strip() for cell in line.strip().strip("|").split("|")]
            elif not line.startswith("|"):
                columns = None  # a table ends at the first line that is not a row
            elif prefix and columns and line.startswith("| `"):
                cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
                row = dict(zip(columns, cells))
                fields[f"{prefix}.{row['Field'].strip('`')}"] = (
                    row["Type"],
                    row.get("Allowed", ""),
                )
    return fields


DOC_TYPES = {
    "integer": "integer",
    "number": "number",
    "boolean": "boolean",
    "enum": "string",
    "path": "string",
    "string": "string",
    "URL": "string",
    "path or `latest`": "string",
    "token count": "int-or-string",
    "token count or `auto`": "int-or-string",
    "Kubernetes quantity": "int-or-string",
    "mapping": "object",
    "list of strings": "array",
    "map string -> string": "object",
    "map string -> quantity": "object",
    "Affinity": "object",
    "list of Toleration": "array",
    "list of EnvVar": "array",
    "list of Volume": "array",
    "list of VolumeMount": "array",
    "list of `{name}`": "array",
    "list of mappings": "array",
}


def api_fields():
    """Field paths api/parse.cc accepts under spec (what a local job file may hold)."""
    with open(os.path.join(ROOT, "api", "parse.cc")) as f:
        src = f.read()
    sections = dict(
        (fn, sec) for sec, fn in re.findall(r'ParseSection\(spec, "(\w+)", (\w+),', src)
    )
    fields = set()
    for fn, body in re.findall(r"\nvoid (Parse\w+)\(MapReader& m, [^)]*\) \{(.*?)\n\}", src, re.S):
        if fn not in sections:
            continue
        for var, name in re.findall(r'(\w+)\.(?:Read\w*|Child|Has)\("(\w+)"', body):
            # A list item's reader is named <list>_item: its fields are <list>[].<name>.
            var = var[: -len("_item")] + "[]" if var.endswith("_item") else var
            base = f"spec.{sections[fn]}" + ("" if var == "m" else f".{var}")
            fields.add(f"{base}.{name}")
    return fields


def api_enums():
    """{table name: [spellings]} from api/enum_names.h and api/job_spec.h.

    The policies a job may name are kJobPolicies (scheduler::Policy values),
    spelled by scheduler::PolicyName in scheduler/policy_name.h."""
    with open(os.path.join(ROOT, "scheduler", "policy_name.h")) as f:
        policy_names = dict(re.findall(r'case Policy::(k\w+):\s*return "([^"]+)";', f.read()))
    tables = {}
    for header in ("enum_names.h", "job_spec.h"):
        with open(os.path.join(ROOT, "api", header)) as f:
            src = f.read()
        for name, body in re.findall(
            r"inline constexpr [^\n=]*?\b(k\w+)\[\] = \{(.*?)\};", src, re.S
        ):
            if name == "kJobPolicies":
                tables[name] = [policy_names[p] for p in re.findall(r"Policy::(k\w+)", body)]
            elif name != "kSchedulerPolicyNames":  # kJobPolicies by PolicyName
                tables[name] = re.findall(r'"([^"]+)"', body)
    return tables


ENUM_FIELDS = {
    "kJobPolicies": "spec.scheduler.policy",
    "kDataFormatNames": "spec.data.format",
    "kOverLengthPolicyNames": "spec.data.onOverLength",
    "kMalformedPolicyNames": "spec.data.onMalformed",
    "kLrScheduleNames": "spec.training.schedule",
    "kPrecisionNames": "spec.training.precision",
    "kRecomputeNames": "spec.training.recompute",
    "kGradReduceDtypeNames": "spec.training.gradReduceDtype",
    "kCleanPodPolicyNames": "spec.runPolicy.cleanPodPolicy",
    "kPullPolicies": "spec.image.pullPolicy",
    "kLoraTargetModules": "spec.model.lora.targetModules[]",
}


def check_crd_definition(c, crd):
    version = crd["spec"]["versions"][0]
    names = crd["spec"]["names"]
    c.check(
        "CRD: skrulljobs.skrull.io, kind SkrullJob, short name sj, namespaced, one version",
        crd["metadata"]["name"] == "skrulljobs.skrull.io"
        and crd["spec"]["group"] == "skrull.io"
        and names["kind"] == "SkrullJob"
        and names["plural"] == "skrulljobs"
        and names["singular"] == "skrulljob"
        and names["shortNames"] == ["sj"]
        and crd["spec"]["scope"] == "Namespaced"
        and len(crd["spec"]["versions"]) == 1,
    )
    c.check(
        "CRD: v1alpha1 served, storage, with the status subresource",
        version["name"] == "v1alpha1"
        and version["served"]
        and version["storage"]
        and version["subresources"] == {"status": {}},
    )
    c.equal(
        "CRD: printer columns",
        [(col["name"], col["jsonPath"]) for col in version["additionalPrinterColumns"]],
        [
            ("Phase", ".status.phase"),
            ("Step", ".status.progress.step"),
            ("Loss", ".status.progress.loss"),
            ("BucketSize", ".status.bucketSizeTokens"),
            ("Age", ".metadata.creationTimestamp"),
        ],
    )
    schema = version["schema"]["openAPIV3Schema"]
    problems = structural_problems(schema)
    c.check("CRD: openAPIV3Schema is structural", not problems, "\n".join(problems))
    c.check(
        "CRD: status preserves unknown fields",
        schema["properties"]["status"].get("x-kubernetes-preserve-unknown-fields") is True,
    )
    nodes = dict(schema_nodes(schema["properties"]["spec"], "spec"))
    # Inside spec.pod's list items are Kubernetes' own objects (tolerations,
    # env, ...): api/parse.cc keeps those as written. Other lists' items
    # (spec.data.sources) are parsed field by field.
    crd_fields = {p for p in nodes if p.count(".") >= 2 and not p.endswith("[]") and
                  not ("[]" in p and p.startswith("spec.pod."))}

    parsed = api_fields()
    c.equal(
        "CRD spec fields equal the fields api/parse.cc accepts", sorted(crd_fields), sorted(parsed)
    )
    documented = doc_fields(os.path.join(ROOT, "docs", "job-spec.md"))
    missing = sorted(set(documented) - set(nodes))
    c.check("every field of docs/job-spec.md is in the CRD", not missing, missing)
    wrong = [
        f"{p}: docs say {t}, CRD has {kind_of(nodes[p])}"
        for p, (t, _) in documented.items()
        if p in nodes and DOC_TYPES.get(t) != kind_of(nodes[p])
    ]
    c.check("CRD types match docs/job-spec.md", not wrong, wrong)
    enum_docs = {
        p: re.findall(r"`([^`]+)`", allowed)
        for p, (t, allowed) in documented.items()
        if t == "enum"
    }
    wrong = [
        f"{p}: docs {v}, CRD {nodes[p].get('enum')}"
        for p, v in enum_docs.items()
        if p in nodes and nodes[p].get("enum") != v
    ]
    c.check("CRD enums match docs/job-spec.md", not wrong, wrong)
    tables = api_enums()
    unmapped = sorted(set(tables) - set(ENUM_FIELDS))
    c.check("every enum table of api/ is mapped to a CRD field", not unmapped, unmapped)
    wrong = [
        f"{nodes[field].get('enum')} != {tables.get(table)} ({table})"
        for table, field in ENUM_FIELDS.items()
        if nodes[field].get("enum") != tables.get(table)
    ]
    c.check("CRD enums equal api/'s spellings", not wrong, wrong)


# ------------------------------------------------------ jobs against the CRD

DELETE = object()


def mutated(obj, path, value):
    out = copy.deepcopy(obj)
    *parents, leaf = path.split(".")
    node = out
    for p in parents:
        node = node.setdefault(p, {})
    if value is DELETE:
        node.pop(leaf, None)
    else:
        node[leaf] = value
    return out


def check_jobs(c, validator):
    def load(path):
        with open(os.path.join(ROOT, path)) as f:
            return load_k8s_yaml(f.read())

    example = load("charts/skrull/examples/skrulljob.yaml")
    for path in (
        "charts/skrull/examples/skrulljob.yaml",
        "examples/quickstart.yaml",
        "examples/quickstart-tokenizer.yaml",
    ):
        errors = validator.validate(load(path))
        c.check(f"{path} is a valid SkrullJob", not errors, errors)
    # The documented mistakes of examples/errors/ are caught by the API server
    # too, for the same reason (several-errors.yaml: for most of its twelve).
    expected = {
        "bad-bucket-size.yaml": ["spec.scheduler.bucketSize: should match"],
        "unknown-field.yaml": ["spec.parallelism.contextParalel: unknown field"],
        "world-size-mismatch.yaml": ["dataParallel x contextParallel must equal"],
        "zero-context-parallel.yaml": ["spec.parallelism.contextParallel: should be greater"],
        "several-errors.yaml": [
            "spec.model.config: Required",
            "spec.model.lora.rank",
            "targetModules[1]",
            "spec.data.format",
            "spec.scheduler.policy",
            "spec.training.steps",
            "spec.training.learningRate",
            "spec.training.adamBeta2",
            "spec.metrics.port",
            "spec.metrics.pushgateway",
        ],
    }
    errors_dir = os.path.join(ROOT, "examples", "errors")
    for name in sorted(f for f in os.listdir(errors_dir) if f.endswith(".yaml")):
        errors = validator.validate(load(os.path.join("examples", "errors", name)))
        missing = [w for w in expected.get(name, []) if not any(w in e for e in errors)]
        c.check(
            f"examples/errors/{name} is rejected by the CRD for its mistakes",
            bool(errors) and not missing,
            f"missing {missing} in {errors}",
        )
    accepted = [
        ("spec.scheduler.bucketSize", "auto"),
        ("spec.scheduler.bucketSize", 4096),
        ("spec.scheduler.bucketSize", "26K"),
        ("spec.scheduler.bucketSize", "1M"),
        ("spec.data.maxLength", 0),
        ("spec.data.maxLength", "128K"),
        ("spec.resources.cpu", "500m"),
        ("spec.resources.cpu", 8),
        ("spec.resources.memory", "1e9"),
        ("spec.model.lora", {}),
        ("spec.model.lora", {"rank": 8, "alpha": 16.5, "targetModules": ["q_proj", "down_proj"]}),
        ("spec.runPolicy.cleanPodPolicy", "All"),
        ("spec.runPolicy.suspend", True),
        ("spec.runPolicy.activeDeadlineSeconds", 0),
        ("spec.metrics.port", 0),
        ("spec.metrics.address", "0.0.0.0"),
        ("spec.metrics.address", "::1"),
        ("spec.data.maxLineBytes", 1024),
        ("spec.data.maxLineBytes", 4294967295),
        ("spec.scheduler.batchSize", 65536),
        ("spec.scheduler.bucketSize", 1073741824),
        ("spec.metrics.pushgateway", "http://pushgateway.monitoring:9091"),
        (
            "spec.image",
            {"repository": "registry.local:5000/ml/trainer", "tag": "1.10", "pullPolicy": "Always"},
        ),
        ("spec.training.learningRate", 1),
        ("spec.parallelism", {}),
        ("spec.metrics.port", 65528),
        ("metadata.name", "a" * 63),
        ("spec.storage", {"claimName": "skrull-data", "mountPath": "/mnt/data", "readOnly": True}),
        ("spec.storage", {}),
        (
            "spec.data",
            {"path": "/data/chat.jsonl", "format": "text-jsonl", "tokenizer": "/data/models/qwen",
             "chatTemplate": "{% for m in messages %}{{ m.content }}{% endfor %}"},
        ),
    ]
    for path, value in accepted:
        errors = validator.validate(mutated(example, path, value))
        c.check(f"CRD accepts {path}: {json.dumps(value)}", not errors, errors)
    rejected = [
        ("spec.parallelism.nodes", "two", "spec.parallelism.nodes: must be of type integer"),
        ("spec.parallelism.nodes", 2.5, "spec.parallelism.nodes: must be of type integer"),
        (
            "spec.parallelism.contextParallel",
            0,
            "contextParallel: should be greater than or equal to 1",
        ),
        ("spec.parallelism.contextParalel", 4, "spec.parallelism.contextParalel: unknown field"),
        (
            "spec.parallelism.dataParallel",
            2,
            "dataParallel x contextParallel must equal nodes x procsPerNode",
        ),
        ("spec.model.config", DELETE, "spec.model.config: Required value"),
        ("spec.data", DELETE, "spec.data: Required value"),
        (
            "spec.model.lora",
            {"targetModules": ["q_proj", "q_proj"]},
            "Duplicate value in a list-type set",
        ),
        ("spec.model.lora", {"targetModules": []}, "should have at least 1 items"),
        ("spec.model.lora", {"targetModules": ["qproj"]}, "Unsupported value 'qproj'"),
        ("spec.model.lora", {"alpha": 0}, "spec.model.lora.alpha: should be greater than 0"),
        ("spec.data.format", "jsonl", "spec.data.format: Unsupported value 'jsonl'"),
        ("spec.data.tokenizer", "/data/models/qwen", "tokenizer: only used with format text-jsonl"),
        (
            "spec.data",
            {"path": "/data/chat.jsonl", "format": "text-jsonl", "chatTemplate": "x"},
            "chatTemplate: needs tokenizer",
        ),
        (
            "spec.data",
            {"path": "/data/chat.jsonl", "format": "text-jsonl"},
            "data.tokenizer: required for text-jsonl with model.weights",
        ),
        ("spec.data.maxLength", -1, "spec.data.maxLength: should be greater than or equal to 0"),
        ("spec.scheduler.bucketSize", "26KB", "spec.scheduler.bucketSize: should match"),
        ("spec.scheduler.bucketSize", "2.5K", "spec.scheduler.bucketSize: should match"),
        (
            "spec.scheduler.bucketSize",
            0,
            "spec.scheduler.bucketSize: should be greater than or equal to 1",
        ),
        ("spec.scheduler.bucketSize", "0", "spec.scheduler.bucketSize: should match"),
        (
            "spec.scheduler.bucketSize",
            1.5,
            "spec.scheduler.bucketSize: must be an integer or a string",
        ),
        ("spec.scheduler.policy", "skrul", "spec.scheduler.policy: Unsupported value 'skrul'"),
        ("spec.training.learningRate", 0, "spec.training.learningRate: should be greater than 0"),
        ("spec.training.adamBeta2", 1, "spec.training.adamBeta2: should be less than 1"),
        (
            "spec.training.minLrRatio",
            1.5,
            "spec.training.minLrRatio: should be less than or equal to 1",
        ),
        ("spec.training.warmupSteps", 2000, "warmupSteps must be < steps"),
        ("spec.training.steps", "ten", "spec.training.steps: must be of type integer"),
        ("spec.metrics.port", 70000, "spec.metrics.port: should be less than or equal to 65535"),
        ("spec.metrics.port", 65530, "port + parallelism.procsPerNode - 1 must be <= 65535"),
        ("spec.metrics.pushgateway", "pushgateway:9091", "spec.metrics.pushgateway: should match"),
        ("spec.metrics.address", "localhost", "spec.metrics.address: should match"),
        (
            "spec.data.maxLineBytes",
            1023,
            "spec.data.maxLineBytes: should be greater than or equal to 1024",
        ),
        (
            "spec.data.maxLineBytes",
            4294967296,
            "spec.data.maxLineBytes: should be less than or equal to 4294967295",
        ),
        (
            "spec.scheduler.batchSize",
            2147483647,
            "spec.scheduler.batchSize: should be less than or equal to 65536",
        ),
        (
            "spec.scheduler.bucketSize",
            9223372036854775807,
            "spec.scheduler.bucketSize: should be less than or equal to 1073741824",
        ),
        (
            "spec.parallelism.procsPerNode",
            2147483647,
            "spec.parallelism.procsPerNode: should be less than or equal to 1024",
        ),
        (
            "spec.parallelism",
            {"nodes": 128, "procsPerNode": 1024, "dataParallel": 65536, "contextParallel": 2},
            "the world size, nodes x procsPerNode, must be <= 65536",
        ),
        ("spec.resources.memory", "-1Gi", "spec.resources.memory: should match"),
        ("spec.resources.cpu", 0.5, "spec.resources.cpu: must be an integer or a string"),
        ("spec.resources.gpusPerProc", -1, "gpusPerProc: should be greater than or equal to 0"),
        (
            "spec.image.repository",
            "ghcr.io/skrull/trainer:1.0",
            "spec.image.repository: should match",
        ),
        ("spec.image.tag", "-bad", "spec.image.tag: should match"),
        ("spec.image.pullPolicy", "Sometimes", "spec.image.pullPolicy: Unsupported value"),
        ("spec.tuning.targetMemoryFraction", 0, "targetMemoryFraction: should be greater than 0"),
        ("spec.tuning.minBucketSizeTokens", "0K", "spec.tuning.minBucketSizeTokens: should match"),
        ("spec.tuning.enabled", "yes please", "spec.tuning.enabled: must be of type boolean"),
        (
            "spec.runPolicy.cleanPodPolicy",
            "Sometimes",
            "spec.runPolicy.cleanPodPolicy: Unsupported value",
        ),
        ("spec.runPolicy.backoffLimit", -1, "backoffLimit: should be greater than or equal to 0"),
        (
            "spec.runPolicy.startDeadlineSeconds",
            "10m",
            "startDeadlineSeconds: must be of type integer",
        ),
        ("spec.runPolicy.restartPolicy", "Never", "spec.runPolicy.restartPolicy: unknown field"),
        ("spec.storage.claimName", "Skrull_Data", "spec.storage.claimName: should match"),
        ("spec.storage.mountPath", "data", "spec.storage.mountPath: should match"),
        ("spec.storage.readOnly", "false", "spec.storage.readOnly: must be of type boolean"),
        ("metadata.name", "Bad_Name", "metadata.name must be a DNS-1123 label"),
        ("metadata.name", "a" * 64, "metadata.name must be a DNS-1123 label"),
    ]
    for path, value, want in rejected:
        errors = validator.validate(mutated(example, path, value))
        shown = "<deleted>" if value is DELETE else json.dumps(value)
        c.check(
            f"CRD rejects {path}: {shown}",
            any(want in e for e in errors),
            f"wanted {want!r}, got {errors}",
        )
    # The global batch, dataParallel x batchSize, needs two fields changed.
    parallelism = {"nodes": 4, "procsPerNode": 8, "dataParallel": 32, "contextParallel": 1}
    big_batch = mutated(mutated(example, "spec.parallelism", parallelism),
                        "spec.scheduler.batchSize", 65536)
    errors = validator.validate(big_batch)
    want = "the global batch, batchSize x parallelism.dataParallel, must be <= 1048576"
    c.check("CRD rejects a global batch over 1048576", any(want in e for e in errors), errors)
    # microBatchSize: deepspeed only, at most batchSize (api/validate.cc says the same).
    micro = mutated(example, "spec.scheduler.microBatchSize", 2)
    want = "microBatchSize: only policy deepspeed reads it"
    errors = validator.validate(mutated(micro, "spec.scheduler.policy", "skrull"))
    c.check("CRD rejects microBatchSize with policy skrull", any(want in e for e in errors), errors)
    deepspeed = mutated(micro, "spec.scheduler.policy", "deepspeed")
    c.check("CRD accepts microBatchSize with policy deepspeed",
            not validator.validate(mutated(deepspeed, "spec.scheduler.batchSize", 2)),
            validator.validate(mutated(deepspeed, "spec.scheduler.batchSize", 2)))
    errors = validator.validate(mutated(deepspeed, "spec.scheduler.batchSize", 1))
    c.check("CRD rejects microBatchSize over batchSize",
            any("microBatchSize: must be <= batchSize" in e for e in errors), errors)
