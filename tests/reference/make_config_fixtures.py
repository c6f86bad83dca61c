"""Writes config.json files as transformers 4.x and 5.x save them, one per
family and RoPE scaling type, into tests/scheduler/data/hf_configs/tf{4,5}/
(model_config_layouts_test.cc reads them). Run by scripts/check-reference.sh
--fixtures; the files are committed so the unit tests need no Python.

    python make_config_fixtures.py OUT_DIR            # with transformers 5.x
    PYTHONPATH=TF4 python make_config_fixtures.py OUT_DIR   # with 4.x
"""
import json
import os
import sys
import tempfile

import transformers

# name -> (config class, kwargs). Sizes are tiny; what matters is RoPE.
CASES = {
    "qwen2": ("Qwen2Config", dict(rope_theta=1000000.0)),
    "qwen3-yarn": ("Qwen3Config", dict(
        head_dim=32, rope_theta=1000000.0,
        rope_scaling={"rope_type": "yarn", "factor": 4.0,
                      "original_max_position_embeddings": 64})),
    "llama-llama3": ("LlamaConfig", dict(
        rope_theta=500000.0,
        rope_scaling={"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                      "high_freq_factor": 4.0, "original_max_position_embeddings": 64})),
    "llama-linear": ("LlamaConfig", dict(
        rope_theta=10000.0, rope_scaling={"rope_type": "linear", "factor": 2.0})),
    "mistral-dynamic": ("MistralConfig", dict(
        rope_theta=1000000.0, sliding_window=None,
        rope_scaling={"rope_type": "dynamic", "factor": 2.0})),
}

COMMON = dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
              intermediate_size=96, vocab_size=300, max_position_embeddings=256)


def main():
    out = sys.argv[1]
    major = transformers.__version__.split(".")[0]
    folder = os.path.join(out, "tf" + major)
    os.makedirs(folder, exist_ok=True)
    for name, (cls_name, kwargs) in CASES.items():
        kw = dict(COMMON, **kwargs)
        if major != "4":
            # 5.x takes the RoPE settings as rope_parameters.
            params = dict(kw.pop("rope_scaling", None) or {"rope_type": "default"})
            params["rope_theta"] = kw.pop("rope_theta")
            kw["rope_parameters"] = params
        config = getattr(transformers, cls_name)(**kw)
        with tempfile.TemporaryDirectory() as tmp:
            config.save_pretrained(tmp)
            with open(os.path.join(tmp, "config.json")) as f:
                text = json.load(f)
        text.pop("transformers_version", None)  # keeps the fixtures stable across patch releases
        with open(os.path.join(folder, name + ".json"), "w") as f:
            json.dump(text, f, indent=2, sort_keys=True)
            f.write("\n")
    print(f"wrote {len(CASES)} configs with transformers {transformers.__version__} to {folder}")


if __name__ == "__main__":
    main()
