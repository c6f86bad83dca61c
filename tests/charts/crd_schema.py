"""Offline stand-ins for what a Kubernetes API server does with a CRD.

* load_k8s_yaml: YAML as kubectl/sigs.k8s.io/yaml reads it. PyYAML follows
  YAML 1.1, where `3e-3` (no dot) is a string; Go's reader makes it a float.
* structural_problems: the "structural schema" rules the API server enforces
  on a CRD's openAPIV3Schema (every node typed, int-or-string only as
  anyOf [integer, string], no additionalProperties beside properties, ...).
* SchemaValidator: validates an object against an openAPIV3Schema the way the
  API server does with kubectl's default --validate=strict: type, enum,
  required, minimum/maximum (with OpenAPI 3.0 boolean exclusive*), lengths,
  pattern, items, minItems, x-kubernetes-list-type: set, int-or-string
  (pattern applies to strings, minimum to numbers), preserve-unknown-fields,
  unknown fields as errors. x-kubernetes-validations (CEL) rules are evaluated
  by tests/charts/cel_eval.mjs with the npm package @marcbachmann/cel-js.
"""

import json
import re
import subprocess

import yaml


class K8sYamlLoader(yaml.SafeLoader):
    """SafeLoader plus Go's float spelling: 1e5, 3e-3, .5 are floats."""


K8sYamlLoader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)$"),
    list("-+.0123456789"),
)


def load_k8s_yaml(text):
    return yaml.load(text, Loader=K8sYamlLoader)


def load_k8s_yaml_all(text):
    return [d for d in yaml.load_all(text, Loader=K8sYamlLoader) if d is not None]


def _is_int(v):
    return isinstance(v, int) and not isinstance(v, bool)


def _is_number(v):
    return (isinstance(v, (int, float))) and not isinstance(v, bool)


_TYPE_CHECKS = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "integer": _is_int,
    "number": _is_number,
    "boolean": lambda v: isinstance(v, bool),
}

_ALLOWED_KEYS = {
    "type",
    "description",
    "properties",
    "required",
    "items",
    "enum",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "minLength",
    "maxLength",
    "pattern",
    "minItems",
    "maxItems",
    "format",
    "anyOf",
    "x-kubernetes-int-or-string",
    "x-kubernetes-list-type",
    "x-kubernetes-preserve-unknown-fields",
    "x-kubernetes-validations",
    "default",
    "additionalProperties",
    "nullable",
}


def structural_problems(schema, path="openAPIV3Schema"):
    """Lists violations of the structural-schema rules (empty = structural)."""
    problems = []
    unknown = set(schema) - _ALLOWED_KEYS
    if unknown:
        problems.append(f"{path}: keys this validator does not model: {sorted(unknown)}")
    if schema.get("x-kubernetes-int-or-string"):
        if "type" in schema:
            problems.append(f"{path}: int-or-string must not set type")
        if schema.get("anyOf") != [{"type": "integer"}, {"type": "string"}]:
            problems.append(f"{path}: int-or-string needs anyOf [integer, string] exactly")
    else:
        if schema.get("type") not in _TYPE_CHECKS:
            problems.append(f"{path}: no or unknown type {schema.get('type')!r}")
        if "anyOf" in schema:
            problems.append(f"{path}: anyOf outside int-or-string")
    if "properties" in schema and "additionalProperties" in schema:
        problems.append(f"{path}: properties and additionalProperties are mutually exclusive")
    if "enum" in schema and schema.get("type") in _TYPE_CHECKS:
        bad = [e for e in schema["enum"] if not _TYPE_CHECKS[schema["type"]](e)]
        if bad:
            problems.append(f"{path}: enum values {bad} are not {schema['type']}")
    for name in schema.get("required", []):
        if name not in schema.get("properties", {}):
            problems.append(f"{path}: required field {name} is not a property")
    if schema.get("x-kubernetes-list-type") == "set":
        if schema.get("items", {}).get("type") not in ("string", "integer", "number", "boolean"):
            problems.append(f"{path}: list-type set needs scalar items")
    for rule in schema.get("x-kubernetes-validations", []):
        if set(rule) - {"rule", "message"} or not rule.get("rule") or not rule.get("message"):
            problems.append(f"{path}: x-kubernetes-validations entries need rule and message")
    for name, sub in schema.get("properties", {}).items():
        problems += structural_problems(sub, f"{path}.properties.{name}")
    if "items" in schema:
        problems += structural_problems(schema["items"], f"{path}.items")
    return problems


def to_cel_value(v):
    """JSON value -> the tagged form cel_eval.mjs turns into CEL values."""
    if _is_int(v):
        return {"$int": str(v)}
    if isinstance(v, dict):
        return {k: to_cel_value(x) for k, x in v.items()}
    if isinstance(v, list):
        return [to_cel_value(x) for x in v]
    return v


class SchemaValidator:
    """Validates objects against one openAPIV3Schema; see the module doc."""

    def __init__(self, schema, cel_runner):
        self.schema = schema
        self.cel_runner = cel_runner  # callable([(rule, value)]) -> [(ok, error)]

    def validate(self, obj):
        """Returns the list of error strings, each `<path>: <problem>`."""
        errors, cel = [], []
        self._walk(self.schema, obj, "", errors, cel)
        if not errors and cel:  # the API server runs CEL only on well-typed objects
            results = self.cel_runner([(rule["rule"], value) for rule, value, _ in cel])
            for (rule, _, path), (ok, err) in zip(cel, results):
                if err:
                    errors.append(f"{path or '<root>'}: CEL error in {rule['rule']!r}: {err}")
                elif not ok:
                    errors.append(f"{path or '<root>'}: {rule['message']}")
        return errors

    def _walk(self, s, v, path, errors, cel):
        where = path or "<root>"
        if s.get("x-kubernetes-int-or-string"):
            if not (_is_int(v) or isinstance(v, str)):
                errors.append(f"{where}: must be an integer or a string (got {v!r})")
                return
        elif not _TYPE_CHECKS[s["type"]](v):
            errors.append(f"{where}: must be of type {s['type']} (got {v!r})")
            return
        if "enum" in s and v not in s["enum"]:
            errors.append(f"{where}: Unsupported value {v!r}: supported values: {s['enum']}")
        if _is_number(v):
            self._check_range(s, v, where, errors)
        if isinstance(v, str):
            if "minLength" in s and len(v) < s["minLength"]:
                errors.append(f"{where}: should be at least {s['minLength']} chars long")
            if "maxLength" in s and len(v) > s["maxLength"]:
                errors.append(f"{where}: may not be longer than {s['maxLength']}")
            if "pattern" in s and not re.search(s["pattern"], v):
                errors.append(f"{where}: should match '{s['pattern']}' (got {v!r})")
        if isinstance(v, list):
            if "minItems" in s and len(v) < s["minItems"]:
                errors.append(f"{where}: should have at least {s['minItems']} items")
            if s.get("x-kubernetes-list-type") == "set" and len(set(map(json.dumps, v))) != len(v):
                errors.append(f"{where}: Duplicate value in a list-type set")
            for i, item in enumerate(v):
                self._walk(s["items"], item, f"{path}[{i}]", errors, cel)
        if path == "metadata":
            pass  # ObjectMeta: the API server's own rules, not the CRD schema, apply
        elif isinstance(v, dict) and not s.get("x-kubernetes-preserve-unknown-fields"):
            props = s.get("properties", {})
            for name in s.get("required", []):
                if name not in v:
                    errors.append(f"{self._join(path, name)}: Required value")
            for name, sub in v.items():
                if name not in props:
                    errors.append(f"{self._join(path, name)}: unknown field")
                elif sub is not None:  # the API server prunes nulls of non-nullable fields
                    self._walk(props[name], sub, self._join(path, name), errors, cel)
        for rule in s.get("x-kubernetes-validations", []):
            cel.append((rule, v, path))

    @staticmethod
    def _check_range(s, v, where, errors):
        if "minimum" in s:
            if s.get("exclusiveMinimum") and not v > s["minimum"]:
                errors.append(f"{where}: should be greater than {s['minimum']} (got {v})")
            elif v < s["minimum"]:
                errors.append(
                    f"{where}: should be greater than or equal to {s['minimum']} (got {v})"
                )
        if "maximum" in s:
            if s.get("exclusiveMaximum") and not v < s["maximum"]:
                errors.append(f"{where}: should be less than {s['maximum']} (got {v})")
            elif v > s["maximum"]:
                errors.append(f"{where}: should be less than or equal to {s['maximum']} (got {v})")

    @staticmethod
    def _join(path, name):
        return f"{path}.{name}" if path else name


def node_cel_runner(script, cel_js_dir):
    """A cel_runner that evaluates rules with node + @marcbachmann/cel-js."""

    def run(pairs):
        request = [{"rule": rule, "self": to_cel_value(value)} for rule, value in pairs]
        out = subprocess.run(
            ["node", script, cel_js_dir],
            input=json.dumps(request),
            capture_output=True,
            text=True,
            check=False,
        )
        if out.returncode != 0:
            raise RuntimeError(f"cel_eval.mjs failed ({out.returncode}): {out.stderr.strip()}")
        return [(r.get("ok", False), r.get("error")) for r in json.loads(out.stdout)]

    return run
