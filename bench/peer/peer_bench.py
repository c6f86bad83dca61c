#!/usr/bin/env python3
"""A measured peer: skrull-trainer against TRL's SFTTrainer on this machine.

Both train the same random Qwen2-shaped model (bench/peer/config.json, one set
of weights that transformers draws and saves, which skrull-trainer loads) on
the same tokenized JSONL (skrull-make-data) for one epoch, DP=2 on 2 CPU
processes over Gloo, in one run. Printed: tokens/s of each and its ratio to
TRL's, and the loss curves side by side over tenths of the epoch.

TRL runs as its documentation sets up padding-free packing: SFTConfig(
packing=True, packing_strategy="bfd", padding_free=True), rows of --bucket
tokens, one row per micro-step, gradient accumulation to about the tokens
skrull's global batch holds. skrull runs DP=2 x CP=1 with the same bucket
(most tokens per micro-batch) under each of --policies.

Run through bench/peer_trl.sh, which makes the venv. With --dry-run this file
needs only the standard library: it checks the arguments and prints the plan.
"""

import argparse
import json
import math
import os
import pathlib
import re
import shlex
import subprocess
import sys
import time

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent.parent
ADAM_BETA2 = 0.95  # skrull-trainer's default (docs/job-spec.md); TRL is set to it
MIN_LR_RATIO = 0.1  # skrull-trainer's default cosine floor; TRL is set to it


def policy_names():
    """The policy spellings, read from their one source (scheduler/policy_name.h)."""
    header = (ROOT / "scheduler" / "policy_name.h").read_text()
    return re.findall(r'return "([a-z-]+)";', header)


def bounded_int(low, high):
    def parse(text):
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got '{text}'")
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"must be in {low}..{high} (got {value})")
        return value

    return parse


def positive_float(text):
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got '{text}'")
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"must be in (0, 1) (got {value})")
    return value


def policy_list(text):
    names = [p for p in text.split(",") if p]
    known = policy_names()
    bad = [p for p in names if p not in known]
    if not names or bad:
        raise argparse.ArgumentTypeError(f"policies must be a comma list of {', '.join(known)} (got '{text}')")
    return names


def parse_args(argv):
    p = argparse.ArgumentParser(prog="bench/peer_trl.sh", description=__doc__.split("\n\n")[0])
    p.add_argument("--bin", default=str(ROOT / "build" / "bin"),
                   help="folder of skrull-trainer and skrull-make-data (default build/bin)")
    p.add_argument("--out", default="/tmp/skrull-peer", help="work folder, remade (default /tmp/skrull-peer)")
    p.add_argument("--samples", type=bounded_int(16, 100000), default=256,
                   help="sequences in the data set = the epoch (default 256)")
    p.add_argument("--batch", type=bounded_int(1, 1024), default=8,
                   help="skrull batchSize: sequences per DP rank per step (default 8)")
    p.add_argument("--bucket", type=bounded_int(256, 65536), default=2048,
                   help="tokens per micro-batch: skrull bucketSize, TRL max_length; also the longest sample")
    p.add_argument("--lr", type=positive_float, default=3e-3, help="peak learning rate (default 3e-3)")
    p.add_argument("--seed", type=bounded_int(0, 2**31 - 1), default=0, help="data, weights and order")
    p.add_argument("--policies", type=policy_list, default=["skrull", "cp-all"],
                   help="skrull-trainer policies, comma list (default skrull,cp-all)")
    p.add_argument("--port", type=bounded_int(1024, 65000), default=29533,
                   help="torchrun's rendezvous port for TRL (default 29533)")
    p.add_argument("--python", default=sys.executable, help="the venv's python (torch, transformers, trl)")
    p.add_argument("--dry-run", action="store_true", help="check the arguments, print the plan, run nothing")
    return p.parse_args(argv)


def skrull_job(args, policy, warmup):
    out = pathlib.Path(args.out)
    return f"""apiVersion: skrull.io/v1alpha1
kind: SkrullJob
metadata:
  name: peer-{policy}
spec:
  model:
    config: {out / 'model' / 'config.json'}
    weights: {out / 'model'}
  data:
    path: {out / 'data.jsonl'}
    format: tokenized-jsonl
  parallelism: {{nodes: 1, procsPerNode: 2, dataParallel: 2, contextParallel: 1}}
  scheduler:
    policy: {policy}
    bucketSize: {args.bucket}
    batchSize: {args.batch}
    seed: {args.seed}
  training:
    epochs: 1
    learningRate: {args.lr}
    warmupSteps: {warmup}
    schedule: cosine
    minLrRatio: {MIN_LR_RATIO}
    adamBeta2: {ADAM_BETA2}
    precision: fp32
    outputDir: {out / ('skrull-' + policy)}
  resources:
    gpusPerProc: 0
  metrics:
    port: 0
"""


def plan(args):
    """The commands of one run, in order: (name, argv)."""
    out = pathlib.Path(args.out)
    binp = pathlib.Path(args.bin)
    worker = str(HERE / "trl_sft.py")
    steps = [
        ("data", [str(binp / "skrull-make-data"), "--out", str(out / "data.jsonl"), "--n", str(args.samples),
                  "--seed", str(args.seed), "--short-min", "64", "--short-max", "512", "--long-min",
                  str(min(1024, args.bucket // 2)), "--long-max", str(args.bucket), "--long-fraction", "0.1"]),
        ("weights", [args.python, "-B", worker, "init", "--config", str(HERE / "config.json"), "--out",
                     str(out / "model"), "--seed", str(args.seed)]),
    ]
    for policy in args.policies:
        steps.append((f"skrull {policy}", [str(binp / "skrull-trainer"), "--job", str(out / f"skrull-{policy}.yaml")]))
    torchrun = str(pathlib.Path(args.python).with_name("torchrun"))
    steps.append(("TRL SFTTrainer", [torchrun, "--nproc_per_node", "2", "--master_port", str(args.port), worker,
                                     "train", "--model", str(out / "model"), "--data", str(out / "data.jsonl"),
                                     "--out", str(out / "trl"), "--bucket", str(args.bucket), "--lr", str(args.lr),
                                     "--seed", str(args.seed), "--adam-beta2", str(ADAM_BETA2),
                                     "--min-lr-ratio", str(MIN_LR_RATIO), "--global-tokens", "{from data}"]))
    return steps


def data_tokens(path):
    lengths = []
    with open(path) as f:
        for line in f:
            lengths.append(len(json.loads(line)["input_ids"]))
    return lengths


def run(name, argv, log):
    print(f"[peer] {name}: {shlex.join(argv)}", flush=True)
    start = time.monotonic()
    with open(log, "w") as f:
        # OMP_NUM_THREADS=1: one thread per rank on both sides (torchrun sets the
        # same for its workers), so 2 ranks use the 2 cores.
        env = dict(os.environ, OMP_NUM_THREADS="1")
        rc = subprocess.run(argv, stdout=f, stderr=subprocess.STDOUT, env=env).returncode
    seconds = time.monotonic() - start
    if rc != 0:
        tail = pathlib.Path(log).read_text().splitlines()[-30:]
        sys.exit(f"[peer] {name} failed (exit {rc}); last lines of {log}:\n" + "\n".join(tail))
    return seconds


def skrull_steps(outdir):
    """Per step: (tokens of all ranks, slowest rank's step seconds, loss)."""
    by_step = {}
    for path in sorted(pathlib.Path(outdir).glob("metrics*.jsonl")):
        for line in open(path):
            r = json.loads(line)
            s = by_step.setdefault(r["step"], [0, 0.0, None])
            s[0] += r["tokens"]
            s[1] = max(s[1], r["step_seconds"])
            if r["rank"] == 0:
                s[2] = r["loss"]
    return [tuple(by_step[k]) for k in sorted(by_step)]


def trl_steps(outdir):
    return [tuple(json.loads(line)[k] for k in ("tokens", "seconds", "loss"))
            for line in open(pathlib.Path(outdir) / "steps.jsonl")]


def tenths(steps):
    """Mean loss over each tenth of the tokens trained on."""
    total = sum(s[0] for s in steps)
    sums, counts, seen = [0.0] * 10, [0] * 10, 0
    for tokens, _, loss in steps:
        i = min(9, int(10 * seen / total))
        sums[i] += loss
        counts[i] += 1
        seen += tokens
    return [sums[i] / counts[i] if counts[i] else float("nan") for i in range(10)]


def report(results):
    """results: name -> (steps, wall seconds of the whole command)."""
    trl = "TRL SFTTrainer"
    rows = []
    for name, (steps, wall) in results.items():
        tokens = sum(s[0] for s in steps)
        train_seconds = sum(s[1] for s in steps)
        rows.append((name, len(steps), tokens, train_seconds, tokens / train_seconds, wall, tenths(steps)))
    base = next(r for r in rows if r[0] == trl)
    print("\n| run | steps | tokens | train s | tokens/s | vs TRL | whole command s | first loss | last loss |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name, n, tokens, secs, tps, wall, _ in rows:
        steps = results[name][0]
        print(f"| {name} | {n} | {tokens} | {secs:.1f} | {tps:.0f} | {tps / base[4]:.2f}x | {wall:.1f} | "
              f"{steps[0][2]:.3f} | {steps[-1][2]:.3f} |")
    print("\nMean loss per tenth of the epoch's tokens:\n")
    print("| tenth | " + " | ".join(r[0] for r in rows) + " |")
    print("|---" * (len(rows) + 1) + "|")
    for i in range(10):
        print(f"| {i + 1} | " + " | ".join(f"{r[6][i]:.3f}" for r in rows) + " |")


def main(argv):
    args = parse_args(argv)
    commands = plan(args)
    if args.dry_run:
        for policy in args.policies:
            print(f"[peer] job skrull-{policy}.yaml: DP=2 x CP=1, bucket {args.bucket}, batch {args.batch}, 1 epoch")
        for name, cmd in commands:
            print(f"[peer] {name}: {shlex.join(cmd)}")
        return 0
    out = pathlib.Path(args.out)
    if out.exists():
        subprocess.run(["rm", "-rf", str(out)], check=True)
    out.mkdir(parents=True)
    results = {}
    for name, cmd in commands:
        if name == "data":
            run(name, cmd, out / "data.log")
            lengths = data_tokens(out / "data.jsonl")
            # Global batch of skrull in sequences and in tokens; TRL accumulates
            # packed rows until it holds about the same tokens.
            global_tokens = int(2 * args.batch * sum(lengths) / len(lengths))
            skrull_steps_n = math.ceil(len(lengths) / (2 * args.batch))
            warmup = max(1, skrull_steps_n // 10)
            for policy in args.policies:
                (out / f"skrull-{policy}.yaml").write_text(skrull_job(args, policy, warmup))
            print(f"[peer] {len(lengths)} sequences, {sum(lengths)} tokens, mean {sum(lengths) / len(lengths):.0f}, "
                  f"longest {max(lengths)}; skrull: {skrull_steps_n} steps of {2 * args.batch} sequences "
                  f"(~{global_tokens} tokens), warmup {warmup}", flush=True)
            continue
        if name == "TRL SFTTrainer":
            cmd = [str(global_tokens) if c == "{from data}" else c for c in cmd]
        wall = run(name, cmd, out / (name.replace(" ", "-") + ".log"))
        if name.startswith("skrull "):
            results[name] = (skrull_steps(out / ("skrull-" + name.split(" ", 1)[1])), wall)
        elif name == "TRL SFTTrainer":
            results[name] = (trl_steps(out / "trl"), wall)
    report(results)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
