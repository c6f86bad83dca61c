#!/usr/bin/env python3
"""The Python side of bench/peer_trl.sh (driven by peer_bench.py).

    trl_sft.py init --config CONFIG.json --out DIR --seed S
            transformers draws the random weights of CONFIG (Qwen2ForCausalLM) and
            saves them with save_pretrained: the one model both trainers start from.
    torchrun --nproc_per_node 2 trl_sft.py train --model DIR --data JSONL --out DIR ...
            one epoch of TRL's SFTTrainer on the tokenized JSONL (input_ids and
            labels, used as they are), padding-free BFD packing, DDP over Gloo on
            the CPU. Rank 0 writes OUT/steps.jsonl: per optimizer step the tokens
            of all ranks, its seconds and its loss.
"""

import argparse
import json
import math
import os
import pathlib
import sys
import time


def init(args):
    import torch
    import transformers

    torch.manual_seed(args.seed)
    config = transformers.AutoConfig.from_pretrained(args.config)
    model = transformers.AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    model.save_pretrained(args.out)


def byte_tokenizer(vocab_size):
    """A tokenizer over ids 0..vocab_size-1 (the data is already token ids):
    SFTTrainer needs one for its pad token."""
    import tokenizers
    import transformers

    vocab = {f"<{i}>": i for i in range(vocab_size)}
    tok = tokenizers.Tokenizer(tokenizers.models.WordLevel(vocab=vocab, unk_token="<0>"))
    return transformers.PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<0>", eos_token="<2>",
                                                bos_token="<1>")


class StepLog:
    """A TrainerCallback (built in train(), after the imports) recording each
    optimizer step's tokens, seconds and loss on rank 0."""

    def __init__(self, path):
        self.path = path
        self.rows = []
        self.last_time = None
        self.last_tokens = 0

    def begin(self):
        self.last_time = time.monotonic()

    def step_end(self, state):
        now = time.monotonic()
        self.rows.append({"step": state.global_step, "tokens": state.num_input_tokens_seen - self.last_tokens,
                          "seconds": now - self.last_time, "loss": None})
        self.last_time, self.last_tokens = now, state.num_input_tokens_seen

    def log(self, logs):
        if "loss" in logs and self.rows and self.rows[-1]["loss"] is None:
            self.rows[-1]["loss"] = logs["loss"]

    def write(self):
        with open(self.path, "w") as f:
            for row in self.rows:
                f.write(json.dumps(row) + "\n")


def train(args):
    import datasets
    import torch
    import torch.distributed as dist
    import transformers
    import trl

    records = [json.loads(line) for line in open(args.data)]
    data = datasets.Dataset.from_list([{"input_ids": r["input_ids"], "labels": r["labels"]} for r in records])
    model = transformers.AutoModelForCausalLM.from_pretrained(args.model, dtype=torch.float32,
                                                              attn_implementation="sdpa")
    world = int(os.environ.get("WORLD_SIZE", "1"))
    # Rows hold up to --bucket tokens and come nearly full from BFD: accumulate
    # enough of them to hold about skrull's global batch.
    grad_accum = max(1, round(args.global_tokens / (world * args.bucket)))
    total_tokens = sum(len(r["input_ids"]) for r in records)
    est_steps = max(1, math.ceil(total_tokens / (world * grad_accum * args.bucket)))
    # skrull's warmup W runs at lr x (s + 1) / W at step s, so it reaches the
    # peak at step W - 1; transformers' runs at lr x s / W and reaches it at
    # step W: warmup W - 1 here gives both the same peak step (the driver's
    # W is a tenth of the steps, as here).
    config = trl.SFTConfig(
        output_dir=args.out, use_cpu=True, ddp_backend="gloo", seed=args.seed, data_seed=args.seed,
        packing=True, packing_strategy="bfd", padding_free=True, max_length=args.bucket,
        per_device_train_batch_size=1, gradient_accumulation_steps=grad_accum, num_train_epochs=1,
        learning_rate=args.lr, lr_scheduler_type="cosine_with_min_lr",
        lr_scheduler_kwargs={"min_lr_rate": args.min_lr_ratio}, warmup_steps=max(0, est_steps // 10 - 1),
        adam_beta2=args.adam_beta2, weight_decay=0.0, max_grad_norm=1.0, bf16=False,
        logging_steps=1, save_strategy="no", report_to="none", dataloader_num_workers=0,
        include_num_input_tokens_seen=True, disable_tqdm=True)
    log = StepLog(pathlib.Path(args.out) / "steps.jsonl")

    class Callback(transformers.TrainerCallback):
        def on_train_begin(self, a, state, control, **kw):
            log.begin()

        def on_step_end(self, a, state, control, **kw):
            log.step_end(state)

        def on_log(self, a, state, control, logs=None, **kw):
            log.log(logs or {})

    trainer = trl.SFTTrainer(model=model, args=config, train_dataset=data,
                             processing_class=byte_tokenizer(model.config.vocab_size), callbacks=[Callback()])
    rows = len(trainer.train_dataset)
    if trainer.is_world_process_zero():
        print(f"[trl] {len(records)} sequences packed into {rows} rows of <= {args.bucket} tokens; "
              f"{world} ranks x {grad_accum} rows per step", flush=True)
    trainer.train()
    if trainer.is_world_process_zero():
        log.write()
    if dist.is_initialized():
        dist.destroy_process_group()


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="mode", required=True)
    i = sub.add_parser("init")
    i.add_argument("--config", required=True)
    i.add_argument("--out", required=True)
    i.add_argument("--seed", type=int, default=0)
    t = sub.add_parser("train")
    t.add_argument("--model", required=True)
    t.add_argument("--data", required=True)
    t.add_argument("--out", required=True)
    t.add_argument("--bucket", type=int, required=True)
    t.add_argument("--lr", type=float, required=True)
    t.add_argument("--seed", type=int, default=0)
    t.add_argument("--adam-beta2", type=float, required=True)
    t.add_argument("--min-lr-ratio", type=float, required=True)
    t.add_argument("--global-tokens", type=int, required=True)
    args = p.parse_args(argv)
    init(args) if args.mode == "init" else train(args)


if __name__ == "__main__":
    main(sys.argv[1:])
