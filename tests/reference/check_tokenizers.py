#!/usr/bin/env python3
"""skrull's tokenizer and chat templates against Hugging Face's own Python
libraries (docs/reference.md, "Tokenizers"), offline:

  check_tokenizers.py --bin BUILD/bin --refs DIR

--refs is what scripts/get-tokenizer-refs.sh prints (the real Qwen3, Llama-3
and Llama-3.1 tokenizer folders, and real Qwen2.5 / Mistral chat templates).
Run with the reference venv's python (scripts/check-reference.sh does).

1. text: every line of tests/tokenizer/data/tokenizer_corpus.jsonl through
   `skrull-tokenize` and through the Python `tokenizers` library's
   Tokenizer.from_file(tokenizer.json).encode(text) (special tokens added, as
   skrull adds them for plain text).
2. chats: every chat of tests/tokenizer/data/chat_corpus.jsonl that has an
   assistant turn through `skrull-tokenize --chat` and through transformers'
   AutoTokenizer.from_pretrained(folder).apply_chat_template(messages,
   tokenize=True), with the folder's own template (Qwen3, Llama-3, Llama-3.1)
   or a real Qwen2.5 / Mistral template passed as chat_template (the pairs of
   tests/tokenizer/check_tokenizer.py). The token ids must be identical; a chat the template refuses must be refused by both.
Prints "N passed, M failed"; exits 1 on any mismatch.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import tokenizers
import transformers

HERE = os.path.dirname(os.path.abspath(__file__))
TOKENIZER_TESTS = os.path.join(HERE, "..", "tokenizer")
sys.path.insert(0, TOKENIZER_TESTS)
# The tokenizers, the (tokenizer, template) pairs, the corpora and the tally
# are tests/tokenizer/check_tokenizer.py's, so both comparisons cover the same.
from check_tokenizer import CHAT_PAIRS, DATA, TOKENIZERS, Tally, lines  # noqa: E402


def skrull_tokenize(bin_dir, args, refused_ok=False):
    """skrull-tokenize's output lines; None where it refused the input (exit 1)
    and `refused_ok`."""
    proc = subprocess.run([os.path.join(bin_dir, "skrull-tokenize")] + args,
                          capture_output=True, text=True)
    if proc.returncode == 1 and refused_ok:
        return None
    if proc.returncode != 0:
        raise RuntimeError(f"skrull-tokenize {' '.join(args)}: {proc.stderr.strip()[:500]}")
    return lines(proc.stdout)


def check_text(args, tally):
    corpus = os.path.join(DATA, "tokenizer_corpus.jsonl")
    texts = [r["text"] for r in lines(open(corpus, encoding="utf-8").read())]
    for name in TOKENIZERS:
        path = os.path.join(args.refs, name, "models", "tokenizer.json")
        ref = tokenizers.Tokenizer.from_file(path)
        mine = skrull_tokenize(args.bin, ["--tokenizer", path, "--input", corpus])
        tally.check(len(mine) == len(texts), f"{name}: {len(mine)} lines for {len(texts)} texts")
        same = 0
        for i, (text, m) in enumerate(zip(texts, mine)):
            ok = m["input_ids"] == ref.encode(text).ids
            same += ok
            tally.check(ok, f"{name} text line {i + 1}: {text[:60]!r}")
        print(f"text  {name}: {same}/{len(texts)} lines identical to tokenizers "
              f"{tokenizers.__version__}")


def load_templates(refs, tmp):
    out = os.path.join(tmp, "templates.json")
    collect = os.path.join(TOKENIZER_TESTS, "reference", "collect_templates.py")
    with open(out, "w", encoding="utf-8") as f:
        f.write(subprocess.run([sys.executable, collect, refs], check=True, capture_output=True,
                               text=True).stdout)
    return json.load(open(out, encoding="utf-8"))


def reference_ids(tok, messages, template):
    """transformers' ids for one chat, or None where the template refuses it."""
    try:
        ids = tok.apply_chat_template(messages, tokenize=True, chat_template=template)
    except Exception:  # the template's raise_exception, or a Jinja error
        return None
    if isinstance(ids, dict) or hasattr(ids, "keys"):  # BatchEncoding in some versions
        ids = ids["input_ids"]
    return list(ids)


def check_chats(args, tally):
    chats_file = os.path.join(DATA, "chat_corpus.jsonl")
    chats = lines(open(chats_file, encoding="utf-8").read())
    with_assistant = [i for i, c in enumerate(chats)
                      if any(m.get("role") == "assistant" for m in c["messages"])]
    with tempfile.TemporaryDirectory() as tmp:
        templates = load_templates(args.refs, tmp)
        for tok_dir, name, explicit in CHAT_PAIRS:
            folder = os.path.join(args.refs, tok_dir, "models")
            tok = transformers.AutoTokenizer.from_pretrained(folder)
            template = templates[name]["template"] if explicit else None
            ref = {i: reference_ids(tok, chats[i]["messages"], template) for i in with_assistant}
            cmd = ["--tokenizer", folder, "--chat"]
            if template is not None:
                template_file = os.path.join(tmp, "template.jinja")
                open(template_file, "w", encoding="utf-8").write(template)
                cmd += ["--chat-template", template_file]
            same = refused = 0
            for i in with_assistant:
                one = os.path.join(tmp, "chat.jsonl")
                with open(one, "w", encoding="utf-8") as f:
                    f.write(json.dumps(chats[i], ensure_ascii=False) + "\n")
                mine = skrull_tokenize(args.bin, cmd + ["--input", one], refused_ok=True)
                mine_ids = mine[0]["input_ids"] if mine else None
                ok = mine_ids == ref[i]
                same += ok
                refused += ok and ref[i] is None
                tally.check(ok, f"{tok_dir} + {name} chat {i}: skrull "
                                f"{'refused' if mine_ids is None else len(mine_ids)} vs "
                                f"transformers {'refused' if ref[i] is None else len(ref[i])}")
            print(f"chats {tok_dir} + {name}: {same}/{len(with_assistant)} identical to "
                  f"transformers {transformers.__version__} apply_chat_template ({refused} of "
                  f"them refused by the template on both sides)")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bin", required=True)
    parser.add_argument("--refs", required=True)
    args = parser.parse_args()
    tally = Tally()
    check_text(args, tally)
    check_chats(args, tally)
    print(f"{tally.passed} passed, {tally.failed} failed")
    return 1 if tally.failed else 0


if __name__ == "__main__":
    sys.exit(main())
