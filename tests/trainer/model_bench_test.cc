// Throughput of a forward + backward over a 4K-token packed stream (the
// numbers quoted in docs). Runs only with SKRULL_MODEL_BENCH=1; each case also
// checks the loss is finite and every trainable parameter got a gradient.
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>

#include "trainer/model/model.h"
#include "trainer/model/torch_compat.h"

namespace skrull::model {
namespace {

scheduler::ModelConfig Qwen05B() {
  scheduler::ModelConfig c;  // Qwen2.5-0.5B's published shape
  c.model_type = "qwen2";
  c.hidden_size = 896;
  c.num_hidden_layers = 24;
  c.num_attention_heads = 14;
  c.num_key_value_heads = 2;
  c.head_dim = 64;
  c.intermediate_size = 4864;
  c.vocab_size = 151936;
  c.max_position_embeddings = 32768;
  c.rope_theta = 1000000.0;
  c.attention_bias = true;
  c.tie_word_embeddings = true;
  return c;
}

scheduler::ModelConfig Tiny() {
  scheduler::ModelConfig c;  // the "tiny" preset's shape
  c.model_type = "qwen2";
  c.hidden_size = 64;
  c.num_hidden_layers = 2;
  c.num_attention_heads = 4;
  c.num_key_value_heads = 2;
  c.head_dim = 16;
  c.intermediate_size = 176;
  c.vocab_size = 256;
  c.max_position_embeddings = 65536;
  c.attention_bias = true;
  c.tie_word_embeddings = true;
  return c;
}

void Bench(const std::string& label, const scheduler::ModelConfig& config,
           const std::vector<int64_t>& lengths, int reps = 2) {
  ModelOptions o;
  auto model = DecoderModel::Create(config, o);
  ASSERT_TRUE(model.ok()) << model.status();
  std::vector<std::vector<int64_t>> seqs;
  int64_t tokens = 0;
  for (int64_t len : lengths) {
    std::vector<int64_t> s(len);
    for (int64_t i = 0; i < len; ++i) s[i] = (i * 7919 + len) % config.vocab_size;
    seqs.push_back(s);
    tokens += len;
  }
  PackedBatch batch = PackSequences(seqs);
  double best = 1e30;
  for (int rep = 0; rep < reps; ++rep) {
    for (const auto& [n, p] : (*model)->NamedParameters()) {
      if (p.grad().defined()) p.mutable_grad().zero_();
    }
    auto t0 = std::chrono::steady_clock::now();
    at::Tensor loss = (*model)->LossSum(batch);
    loss.backward();
    compat::Synchronize(o.device);
    best = std::min(best,
                    std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    ASSERT_TRUE(std::isfinite(loss.item<double>()));
  }
  for (const auto& [n, p] : (*model)->NamedTrainableParameters()) {
    ASSERT_TRUE(p.grad().defined()) << n;
  }
  std::printf(
      "[bench] %-44s %6lld tokens  fwd+bwd %8.3f s  %9.0f tokens/s  (%d threads, libtorch %s)\n",
      label.c_str(), static_cast<long long>(tokens), best, tokens / best, at::get_num_threads(),
      compat::TorchVersion().c_str());
}

TEST(ModelBench, ForwardBackwardTokensPerSecond) {
  const char* on = std::getenv("SKRULL_MODEL_BENCH");
  if (on == nullptr || std::string(on) != "1") GTEST_SKIP() << "set SKRULL_MODEL_BENCH=1";
  Bench("tiny, 1 x 4096", Tiny(), {4096});
  Bench("tiny, 8 x 512", Tiny(), {512, 512, 512, 512, 512, 512, 512, 512});
  auto one_layer = Qwen05B();
  one_layer.num_hidden_layers = 1;
  auto small_vocab = one_layer;
  small_vocab.vocab_size = 256;
  Bench("0.5B-shaped 1 layer, vocab 256, 1 x 4096", small_vocab, {4096});
  Bench("0.5B-shaped 1 layer, vocab 256, 8 x 512", small_vocab,
        {512, 512, 512, 512, 512, 512, 512, 512});
  Bench("0.5B-shaped 1 layer + 151936 LM head, 1 x 4096", one_layer, {4096}, /*reps=*/1);
}

}  // namespace
}  // namespace skrull::model
