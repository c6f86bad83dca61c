#!/usr/bin/env python3
"""skrull-trainer's failures as a user meets them, through the real binary and,
at 2 ranks, the real launcher (CPU, Gloo on loopback):

  trainer_failures.py hostile --bin BUILD/bin [--corpus fuzz/corpus]
      hostile model folders (the cases of tests/tokenizer/hostile.py, read
      from the fuzz corpora) as spec.data.tokenizer of a text-jsonl job, a
      handful at 2 ranks and more at 1 rank. Each must end with an error that
      names the file (and the field or limit), an exit status in 1..127 (not a
      signal), under --cpu-seconds of CPU time (wait4's ru_utime + ru_stime:
      the launcher and its ranks together, so a loaded machine does not fail
      it), under --wall-seconds of wall time (a hang) and under --mib of peak
      RSS (wait4's ru_maxrss: the largest of the launcher and its ranks); at 2
      ranks the launcher names the failing rank and prints the last lines of
      its log.
  trainer_failures.py resume --bin BUILD/bin
      a real checkpoint, damaged: a bad rng_state_hex in trainer_state.json,
      and a LoRA checkpoint without its adapter file; each resume must fail
      with a message naming the file and the fix. Then a 2-rank resume where
      rank 1 fails as on a full disk (SKRULL_TEST_DISK_FULL_ON_RESUME_RANK),
      several times: the launcher must blame rank 1, never rank 0, whose
      collective failed only because rank 1 was gone.

Prints one line per case, then "N passed, M failed"; exits 1 on a failure.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.join(HERE, "..", "tokenizer"))
import hostile  # noqa: E402  (the cases and their model folders)

CORPUS = os.path.join(HERE, "..", "..", "fuzz", "corpus")

# A 2-layer Llama; 512 ids hold the cases' 256-id byte-level vocabulary and
# its added tokens.
TINY_CONFIG = {
    "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 32,
    "intermediate_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
    "num_key_value_heads": 2, "vocab_size": 512, "max_position_embeddings": 4096,
    "rope_theta": 10000.0, "rms_norm_eps": 1e-6, "tie_word_embeddings": False,
    "torch_dtype": "float32"}


def write_job(work, data, ranks, steps=2, data_format="text-jsonl", tokenizer=None,
              lora=False, checkpoint_every=0):
    """Writes config.json and job.yaml into `work`; returns the job path."""
    with open(os.path.join(work, "config.json"), "w") as f:
        json.dump(TINY_CONFIG, f)
    lines = ["apiVersion: skrull.io/v1alpha1", "kind: SkrullJob", "metadata:",
             "  name: failures", "spec:", "  model:", "    config: config.json", "    seed: 3"]
    if lora:
        lines.append("    lora: {}")
    lines += ["  data:", f"    path: {data}", f"    format: {data_format}"]
    if tokenizer:
        lines.append(f"    tokenizer: {tokenizer}")
    lines += ["  parallelism:", "    nodes: 1", f"    procsPerNode: {ranks}",
              "    dataParallel: 1", f"    contextParallel: {ranks}",
              "  scheduler:", "    policy: skrull", "    bucketSize: 256", "    batchSize: 2",
              "    seed: 1",
              "  training:", f"    steps: {steps}", "    learningRate: 0.01",
              "    warmupSteps: 1", "    outputDir: out", f"    checkpointEvery: {checkpoint_every}",
              "    resumeFrom: latest",
              "  resources:", "    gpusPerProc: 0", "  metrics:", "    port: 0"]
    path = os.path.join(work, "job.yaml")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    return path


class Outcome:
    def __init__(self, code, out, seconds, usage):
        self.code = code  # as os.waitstatus_to_exitcode gives it
        self.out = out  # stdout and stderr
        self.seconds = seconds  # wall time
        self.cpu_seconds = usage.ru_utime + usage.ru_stime
        self.mib = usage.ru_maxrss / 1024.0  # peak RSS

    def figures(self):
        return (f"exit {self.code}, {self.seconds:.2f} s wall, {self.cpu_seconds:.2f} s CPU, "
                f"{self.mib:.0f} MiB")


def run_trainer(args, job, extra=(), env=None, kill=60.0):
    """Runs skrull-trainer on `job`; its Outcome (resources of it and its ranks)."""
    cmd = [os.path.join(args.bin, "skrull-trainer"), "--job", job, "--no-metrics-server",
           *extra]
    full_env = dict(os.environ, OMP_NUM_THREADS="1", **(env or {}))
    start = time.monotonic()
    with tempfile.TemporaryFile() as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=full_env)
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if time.monotonic() - start > kill:
                proc.kill()
                pid, status, usage = os.wait4(proc.pid, 0)
                break
            time.sleep(0.01)
        seconds = time.monotonic() - start
        out.seek(0)
        text = out.read().decode("utf-8", "replace")
    return Outcome(os.waitstatus_to_exitcode(status), text, seconds, usage)


class Report:
    def __init__(self):
        self.passed = self.failed = 0

    def add(self, name, problems, detail=""):
        ok = not problems
        self.passed += ok
        self.failed += not ok
        print(f"{'ok  ' if ok else 'FAIL'} {name}: {detail}" +
              ("" if ok else " -- " + "; ".join(problems)), flush=True)

    def finish(self):
        print(f"{self.passed} passed, {self.failed} failed")
        return 1 if self.failed else 0


# Cases that must be refused, by corpus folder: one of each kind of failure
# (wrong type, bad id, nesting, truncation, regex time; integer trap,
# nesting, size, memory, work) at 1 rank, and at 2 ranks three that killed the
# trainer with a signal or reached libtorch before.
ONE_RANK = {
    "tokenizer_json": ["invert-string", "template-id-negative", "vocab-id-2-30",
                       "normalizer-nested-20000", "truncated", "slow-regex"],
    "chat_template": ["int-min-floordiv-minus-1", "parentheses-100000", "indent-huge-width",
                      "concat-doubling", "loop-nested-1e8"],
}
TWO_RANKS = {
    "tokenizer_json": ["normalizer-nested-20000", "template-id-negative"],
    "chat_template": ["parentheses-100000"],
}


def hostile_case(args, report, sub, name, ranks):
    expected = (hostile.tokenizer_cases() if sub == "tokenizer_json"
                else hostile.template_cases())[name][2]
    with open(os.path.join(args.corpus, sub, "hostile-" + name), "rb") as f:
        raw = f.read()
    with tempfile.TemporaryDirectory() as work:
        folder = os.path.join(work, "model")
        os.makedirs(folder)
        line, origin = hostile.write_case_folder(folder, sub, raw)
        with open(os.path.join(work, "data.jsonl"), "w", encoding="utf-8") as f:
            f.write(line + "\n")
        job = write_job(work, "data.jsonl", ranks, tokenizer="model")
        o = run_trainer(args, job, kill=args.wall_seconds + 5)
    out = o.out
    problems = []
    if not 0 < o.code < 128:
        problems.append(f"exit status {o.code} (want 1..127: an error, not a signal)")
    if origin not in out:
        problems.append(f"output does not name {origin}")
    if expected and expected not in out:
        problems.append(f"output lacks {expected!r}")
    if o.cpu_seconds > args.cpu_seconds:
        problems.append(f"used {o.cpu_seconds:.2f} s of CPU (over {args.cpu_seconds} s)")
    if o.seconds > args.wall_seconds:
        problems.append(f"took {o.seconds:.2f} s (over {args.wall_seconds} s)")
    if o.mib > args.mib:
        problems.append(f"peak RSS {o.mib:.0f} MiB (over {args.mib} MiB)")
    if ranks > 1:
        blame = re.search(r"skrull launcher: rank (\d) \(local rank \d, pid \d+\) failed first, "
                          r"with exit code (\d+)", out)
        tail = re.search(r"--- last lines of \S+/logs/rank-(\d)\.log ---\n(.*?)\n---", out, re.S)
        if not blame:
            problems.append("the launcher does not name the failing rank")
        if not tail or (blame and tail.group(1) != blame.group(1)):
            problems.append("the launcher does not show the failing rank's last log lines")
        elif origin not in tail.group(2):
            problems.append(f"the log tail the launcher shows does not name {origin}")
    if problems:
        problems.append("output tail: " + out[-600:].replace("\n", " | "))
    report.add(f"{ranks} rank(s) {sub}/{name}", problems, o.figures())


def hostile_command(args):
    report = Report()
    for ranks, cases in ((1, ONE_RANK), (2, TWO_RANKS)):
        for sub, names in cases.items():
            for name in names:
                hostile_case(args, report, sub, name, ranks)
    return report.finish()


def learnable_lines(n=16):
    return "".join(json.dumps({"input_ids": [3 + (i + p) % 60 for p in range(8 + i % 20)]}) +
                   "\n" for i in range(n))


def checkpointed_job(args, work, ranks, lora=False):
    """A job that trained 2 steps and checkpointed; returns (job, checkpoint dir)."""
    with open(os.path.join(work, "data.jsonl"), "w") as f:
        f.write(learnable_lines())
    job = write_job(work, "data.jsonl", ranks, data_format="tokenized-jsonl", lora=lora)
    o = run_trainer(args, job)
    if o.code != 0:
        raise RuntimeError(f"the first run failed (exit {o.code}): {o.out[-2000:]}")
    root = os.path.join(work, "out", "checkpoints")
    return job, os.path.join(root, sorted(os.listdir(root))[-1])


def expect_resume_error(args, report, name, job, parts, ranks=1, env=None):
    o = run_trainer(args, job, ["--steps", "4"], env=env)
    problems = [] if 0 < o.code < 128 else [f"exit status {o.code} (want an error)"]
    problems += [f"output lacks {p!r}" for p in parts if p not in o.out]
    if problems:
        problems.append("output tail: " + o.out[-800:].replace("\n", " | "))
    report.add(name, problems, o.figures())
    return o.out


def resume_command(args):
    report = Report()
    with tempfile.TemporaryDirectory() as work:
        job, ckpt = checkpointed_job(args, work, 1)
        state_path = os.path.join(ckpt, "trainer_state.json")
        with open(state_path) as f:
            state = json.load(f)
        state["rng_state_hex"] = "zz" + state["rng_state_hex"][2:]
        with open(state_path, "w") as f:
            json.dump(state, f)
        expect_resume_error(args, report, "bad rng_state_hex", job,
                            [state_path + ": rng_state_hex: character 0 is not a hex digit",
                             "resume from an earlier checkpoint"])
    with tempfile.TemporaryDirectory() as work:
        job, ckpt = checkpointed_job(args, work, 1, lora=True)
        adapter = os.path.join(ckpt, "adapter_model.safetensors")
        os.remove(adapter)
        expect_resume_error(args, report, "LoRA checkpoint without its adapter", job,
                            [adapter, "resuming from " + ckpt,
                             "spec.model.lora is set, so the checkpoint must hold its LoRA "
                             "adapter (adapter_model.safetensors)",
                             "set spec.training.resumeFrom to a step-<N> folder this LoRA job "
                             "wrote, or remove spec.model.lora"])
    with tempfile.TemporaryDirectory() as work:
        job, ckpt = checkpointed_job(args, work, 2)
        for attempt in range(args.blame_runs):
            out = expect_resume_error(
                args, report, f"disk full on rank 1's resume, run {attempt + 1}", job,
                ["No space left on device",
                 "skrull launcher: rank 1 (local rank 1, pid",
                 "--- last lines of " + os.path.join(work, "out", "logs", "rank-1.log")],
                ranks=2, env={"SKRULL_TEST_DISK_FULL_ON_RESUME_RANK": "1"})
            blamed = re.search(r"skrull launcher: rank (\d)", out)
            if blamed and blamed.group(1) != "1":
                report.add(f"blame run {attempt + 1}", [f"blamed rank {blamed.group(1)}"])
    return report.finish()


def main():
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="command", required=True)
    h = sub.add_parser("hostile")
    h.add_argument("--bin", required=True)
    h.add_argument("--corpus", default=CORPUS)
    h.add_argument("--cpu-seconds", type=float, default=5.0)
    h.add_argument("--wall-seconds", type=float, default=30.0)
    h.add_argument("--mib", type=float, default=1024.0)
    r = sub.add_parser("resume")
    r.add_argument("--bin", required=True)
    r.add_argument("--blame-runs", type=int, default=4)
    args = parser.parse_args()
    return hostile_command(args) if args.command == "hostile" else resume_command(args)


if __name__ == "__main__":
    sys.exit(main())
