#!/usr/bin/env python3
"""gpu-bundle/report.py (copied there by scripts/gpu-bundle.sh): gathers what
gpu-bundle/run.sh left in its work folder into one JSON report and prints a
short table of it.

  report.py --bundle DIR --work DIR --mode gpu|cpu --out FILE

The report (docs/gpu-build.md, "The GPU bundle"):
  bundle       commit, torch version the bundle was built for, glibc needed
  machine      torch version, CUDA, device name, capability and memory
  mode         "gpu" or "cpu" (GPU parts skipped)
  steps        every step of run.sh: name, status (passed / failed /
               timeout / skipped), exit code, seconds, note
  tests        per gtest case: test binary, name, result (COMPLETED /
               SKIPPED), failures, skip message
  bench        per kernel-bench case: the [gpu-kernel-bench] line
               (kernel chosen, tokens/s, MFU, peak memory)
  train        the bf16 (or CPU) job's summary.json
  oom          exit code of the job that cannot fit, its oom.json
  verdict      "pass" when no step failed or timed out (the OOM step passes
               only on exit 3 with oom.json), else "fail"
"""
import argparse
import glob
import json
import os
import sys

_BENCH_TAG = "[gpu-kernel-bench] "
_MAX_READ_BYTES = 4 << 20  # every file read is bounded


def read_text(path):
    try:
        with open(path, "r", errors="replace") as f:
            return f.read(_MAX_READ_BYTES)
    except OSError:
        return None


def read_json(path):
    text = read_text(path)
    if text is None:
        return None
    try:
        return json.loads(text)
    except ValueError as e:
        return {"error": f"{path}: not JSON ({e})"}


def machine():
    info = {}
    try:
        import torch
        info["torch"] = torch.__version__
        info["cuda"] = torch.version.cuda
        info["cuda_available"] = torch.cuda.is_available()
        if torch.cuda.is_available():
            p = torch.cuda.get_device_properties(0)
            info["device"] = p.name
            info["capability"] = f"{p.major}.{p.minor}"
            info["total_memory_bytes"] = p.total_memory
            free, total = torch.cuda.mem_get_info(0)
            info["free_memory_bytes_at_report"] = free
            info["cudnn"] = torch.backends.cudnn.version()
            info["nccl"] = ".".join(str(x) for x in torch.cuda.nccl.version())
    except Exception as e:  # the report still gets written
        info["error"] = f"torch: {e}"
    return info


def steps(work):
    out = []
    text = read_text(os.path.join(work, "steps.tsv")) or ""
    for line in text.splitlines():
        parts = line.split("\t")
        if len(parts) != 5:
            continue
        name, status, rc, seconds, note = parts
        out.append({"name": name, "status": status, "rc": None if rc == "-" else int(rc),
                    "seconds": int(seconds), "note": note})
    return out


def skip_message(work, binary, name):
    """The GTEST_SKIP() text of `name` in the binary's log (gtest < 1.13
    leaves it out of the JSON): the lines between "Skipped" and "[  SKIPPED ]"."""
    lines = (read_text(os.path.join(work, binary + ".log")) or "").splitlines()
    try:
        i = lines.index(f"[ RUN      ] {name}")
    except ValueError:
        return ""
    text, inside = [], False
    for line in lines[i + 1:]:
        if line.startswith("[  SKIPPED ]") or line.startswith("[       OK ]"):
            break
        if inside:
            text.append(line)
        elif line.endswith(": Skipped"):
            inside = True
    return "\n".join(text).strip()


def tests(work):
    cases = []
    for path in sorted(glob.glob(os.path.join(work, "*.json"))):
        doc = read_json(path)
        if not isinstance(doc, dict) or "testsuites" not in doc:
            continue
        binary = os.path.basename(path)[:-len(".json")]
        for suite in doc["testsuites"]:
            for case in suite.get("testsuite", []):
                entry = {"binary": binary, "name": f"{suite['name']}.{case['name']}",
                         "result": case.get("result"), "seconds": case.get("time")}
                failures = [f.get("failure", "") for f in case.get("failures", [])]
                if failures:
                    entry["failures"] = failures
                if case.get("result") == "SKIPPED":
                    entry["skip_message"] = skip_message(work, binary, entry["name"])
                cases.append(entry)
    return cases


def bench(work):
    rows = []
    for path in sorted(glob.glob(os.path.join(work, "bench_*.log"))):
        for line in (read_text(path) or "").splitlines():
            if line.startswith(_BENCH_TAG):
                try:
                    rows.append(json.loads(line[len(_BENCH_TAG):]))
                except ValueError:
                    rows.append({"error": f"{path}: unparsable line {line[:200]!r}"})
    return rows


def oom(work, step_list):
    rc = next((s["rc"] for s in step_list if s["name"] == "train_oom"), None)
    record = read_json(os.path.join(work, "oom", "out", "oom.json"))
    return {"rc": rc, "oom_json": record}


def verdict(step_list, oom_result):
    for s in step_list:
        if s["name"] == "train_oom" and s["status"] != "skipped":
            if not (s["rc"] == 3 and isinstance(oom_result["oom_json"], dict)):
                return "fail"
            s["status"] = "passed"  # exit 3 with oom.json is what this step expects
        elif s["status"] in ("failed", "timeout"):
            return "fail"
    return "pass"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bundle", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--mode", required=True, choices=["gpu", "cpu"])
    ap.add_argument("--out", required=True)
    a = ap.parse_args()

    def bundle_file(name):
        return (read_text(os.path.join(a.bundle, name)) or "").strip() or None

    step_list = steps(a.work)
    train_dir = "train"
    report = {
        "bundle": {"commit": bundle_file("COMMIT"), "torch": bundle_file("TORCH_VERSION"),
                   "glibc_min": bundle_file("GLIBC_MIN")},
        "machine": machine(),
        "mode": a.mode,
        "steps": step_list,
        "tests": tests(a.work),
        "bench": bench(a.work),
        "train": read_json(os.path.join(a.work, train_dir, "out", "summary.json")),
        "oom": oom(a.work, step_list) if a.mode == "gpu" else {"skipped": "no CUDA device"},
        "work_dir": a.work,
    }
    report["verdict"] = verdict(step_list, report["oom"]) if a.mode == "gpu" else (
        "pass" if all(s["status"] in ("passed", "skipped") for s in step_list) else "fail")
    tmp = a.out + ".tmp"
    with open(tmp, "w") as f:
        json.dump(report, f, indent=1)
        f.write("\n")
    os.replace(tmp, a.out)

    for s in step_list:
        print(f"{s['name']:40s} {s['status']:8s} {s['seconds']:4d}s  {s['note']}")
    for b in report["bench"]:
        if "kernel" in b:
            print(f"{b['case']:16s} {b['tokens']:7d} tokens  kernel {b['kernel']:13s}"
                  f" {b['tokens_per_second']:12.0f} tokens/s"
                  f"  MFU {100 * b['mfu']:5.1f}%  peak {b['peak_allocated_bytes'] / 2**30:6.2f} GiB")
    print(f"verdict: {report['verdict']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
