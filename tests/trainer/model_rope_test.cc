// RotaryEmbedding against hand-computed references of Hugging Face's
// formulas (default, linear, llama3) and the rotation itself.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <cmath>

#include "trainer/model/rope.h"

namespace skrull::model {
namespace {

scheduler::ModelConfig RopeConfig(int64_t head_dim, double theta) {
  scheduler::ModelConfig c;
  c.head_dim = head_dim;
  c.rope_theta = theta;
  return c;
}

std::vector<double> DefaultInvFreq(int64_t dim, double theta) {
  std::vector<double> out;
  for (int64_t i = 0; i < dim; i += 2) out.push_back(1.0 / std::pow(theta, double(i) / dim));
  return out;
}

void ExpectInvFreq(const RotaryEmbedding& rope, const std::vector<double>& expected) {
  at::Tensor got = rope.inv_freq();
  ASSERT_EQ(got.size(0), static_cast<int64_t>(expected.size()));
  for (size_t i = 0; i < expected.size(); ++i) {
    const double g = got[i].item<double>();
    EXPECT_NEAR(g, expected[i], 2e-6 * expected[i] + 1e-12) << "index " << i;
  }
}

TEST(Rope, DefaultInverseFrequencies) {
  auto rope = RotaryEmbedding::Create(RopeConfig(64, 1000000.0));
  ASSERT_TRUE(rope.ok()) << rope.status();
  ExpectInvFreq(*rope, DefaultInvFreq(64, 1000000.0));
}

TEST(Rope, LinearScalingDividesFrequencies) {
  auto c = RopeConfig(16, 10000.0);
  c.rope_scaling.type = "linear";
  c.rope_scaling.factor = 4.0;
  auto rope = RotaryEmbedding::Create(c);
  ASSERT_TRUE(rope.ok()) << rope.status();
  auto expected = DefaultInvFreq(16, 10000.0);
  for (double& f : expected) f /= 4.0;
  ExpectInvFreq(*rope, expected);
}

TEST(Rope, Llama3ScalingMatchesHuggingFaceFormula) {
  // Llama 3.1's published rope_scaling.
  auto c = RopeConfig(128, 500000.0);
  c.rope_scaling.type = "llama3";
  c.rope_scaling.factor = 8.0;
  c.rope_scaling.low_freq_factor = 1.0;
  c.rope_scaling.high_freq_factor = 4.0;
  c.rope_scaling.original_max_position_embeddings = 8192;
  auto rope = RotaryEmbedding::Create(c);
  ASSERT_TRUE(rope.ok()) << rope.status();
  std::vector<double> expected;
  const double low_wavelen = 8192 / 1.0, high_wavelen = 8192 / 4.0;
  int scaled = 0, kept = 0, smoothed = 0;
  for (double f : DefaultInvFreq(128, 500000.0)) {
    const double wavelen = 2 * M_PI / f;
    if (wavelen < high_wavelen) {
      expected.push_back(f);
      ++kept;
    } else if (wavelen > low_wavelen) {
      expected.push_back(f / 8.0);
      ++scaled;
    } else {
      const double smooth = (8192 / wavelen - 1.0) / (4.0 - 1.0);
      expected.push_back((1 - smooth) * f / 8.0 + smooth * f);
      ++smoothed;
    }
  }
  EXPECT_GT(kept, 0);
  EXPECT_GT(scaled, 0);
  EXPECT_GT(smoothed, 0);
  ExpectInvFreq(*rope, expected);
}

TEST(Rope, UnsupportedScalingIsAnError) {
  for (const char* type : {"longrope", "bogus"}) {
    auto c = RopeConfig(16, 10000.0);
    c.rope_scaling.type = type;
    c.rope_scaling.factor = 2.0;
    auto rope = RotaryEmbedding::Create(c);
    ASSERT_FALSE(rope.ok()) << type;
    EXPECT_NE(rope.status().message().find(std::string("\"") + type + "\""), std::string::npos)
        << rope.status();
  }
  EXPECT_FALSE(RotaryEmbedding::Create(RopeConfig(15, 10000.0)).ok());
}

TEST(Rope, RotationMatchesHandComputation) {
  const int64_t d = 8;
  auto rope = RotaryEmbedding::Create(RopeConfig(d, 10000.0));
  ASSERT_TRUE(rope.ok());
  at::Tensor pos = at::tensor(std::vector<int64_t>{0, 3, 17}, at::kLong);
  at::Tensor x = at::randn({3, 2, d}, at::kFloat);
  auto [cos, sin] = rope->CosSin(pos);
  at::Tensor y = ApplyRotary(x, cos, sin);
  const auto inv = DefaultInvFreq(d, 10000.0);
  for (int t = 0; t < 3; ++t) {
    const double p = pos[t].item<int64_t>();
    for (int h = 0; h < 2; ++h) {
      for (int i = 0; i < d / 2; ++i) {
        const double a = p * inv[i];
        const double x1 = x[t][h][i].item<double>(), x2 = x[t][h][i + d / 2].item<double>();
        EXPECT_NEAR(y[t][h][i].item<double>(), x1 * std::cos(a) - x2 * std::sin(a), 1e-4);
        EXPECT_NEAR(y[t][h][i + d / 2].item<double>(), x2 * std::cos(a) + x1 * std::sin(a), 1e-4);
      }
    }
  }
  // Position 0 is the identity.
  EXPECT_TRUE(at::allclose(y[0], x[0]));
}

TEST(Rope, ScoresDependOnlyOnRelativePosition) {
  const int64_t d = 16;
  auto rope = RotaryEmbedding::Create(RopeConfig(d, 10000.0));
  ASSERT_TRUE(rope.ok());
  at::Tensor q = at::randn({1, 1, d}, at::kDouble).to(at::kFloat);
  at::Tensor k = at::randn({1, 1, d}, at::kDouble).to(at::kFloat);
  auto score = [&](int64_t pq, int64_t pk) {
    auto [cq, sq] = rope->CosSin(at::tensor(std::vector<int64_t>{pq}, at::kLong));
    auto [ck, sk] = rope->CosSin(at::tensor(std::vector<int64_t>{pk}, at::kLong));
    return (ApplyRotary(q, cq, sq) * ApplyRotary(k, ck, sk)).sum().item<double>();
  };
  EXPECT_NEAR(score(10, 3), score(107, 100), 1e-3);
  EXPECT_NEAR(score(5, 5), score(0, 0), 1e-4);
}

}  // namespace
}  // namespace skrull::model
