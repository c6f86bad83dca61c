// Process groups and C10dCollectives on real Gloo groups (forked ranks on
// loopback).
#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Parallel.h>
#include <c10/util/Exception.h>

#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "trainer/dist/c10d_collectives.h"
#include "trainer/dist/cp_exchange.h"
#include "trainer/dist/process_groups.h"
#include "trainer/dist/rank_layout.h"
#include "trainer/dist/testing/fork_ranks.h"
#include "trainer/train/optimizer.h"
#include "trainer/train/train_step.h"

namespace skrull::dist {
namespace {

std::unique_ptr<ProcessGroups> Connect(int rank, int dp, int cp, int port) {
  at::set_num_threads(1);
  auto layout = testing::OneNodeLayout(rank, dp, cp);
  EXPECT_TRUE(layout.ok()) << layout.status();
  RendezvousOptions o;
  o.master_port = port;
  o.timeout = std::chrono::seconds(60);
  auto groups = ProcessGroups::Create(*layout, o);
  EXPECT_TRUE(groups.ok()) << groups.status();
  return groups.ok() ? std::move(groups).value() : nullptr;
}

int Result() { return ::testing::Test::HasFailure() ? 1 : 0; }

TEST(ProcessGroups, Dp2Cp2GroupsHoldTheRightRanks) {
  Status st = testing::RunForkedRanks(4, [](int rank, int port) {
    auto g = Connect(rank, 2, 2, port);
    if (!g) return 1;
    const int dp_rank = rank / 2, cp_rank = rank % 2;
    EXPECT_EQ(g->world().size, 4);
    EXPECT_EQ(g->world().rank, rank);
    EXPECT_EQ(g->cp().size, 2);
    EXPECT_EQ(g->cp().rank, cp_rank);
    EXPECT_EQ(g->cp().name, "cp[dp=" + std::to_string(dp_rank) + "]");
    EXPECT_EQ(g->dp().size, 2);
    EXPECT_EQ(g->dp().rank, dp_rank);
    // Sum of global ranks over each group identifies its members.
    at::Tensor t = at::full({1}, static_cast<double>(rank), at::kDouble);
    at::Tensor c = t.clone(), d = t.clone(), w = t.clone();
    StartAllReduceSum(g->cp(), c).Wait();
    StartAllReduceSum(g->dp(), d).Wait();
    StartAllReduceSum(g->world(), w).Wait();
    EXPECT_EQ(c.item<double>(), dp_rank * 2 + dp_rank * 2 + 1);  // {2d, 2d+1}
    EXPECT_EQ(d.item<double>(), cp_rank + (2 + cp_rank));        // {c, 2+c}
    EXPECT_EQ(w.item<double>(), 6.0);
    return Result();
  });
  EXPECT_TRUE(st.ok()) << st;
}

TEST(ProcessGroups, Cp8BuildsTheAlignedSubGroupsHoldingEachRank) {
  Status st = testing::RunForkedRanks(8, [](int rank, int port) {
    at::set_num_threads(1);
    auto g = Connect(rank, 1, 8, port);
    if (!g) return 1;
    // Sizes 2 and 4, the group starting at the rank rounded down to the size.
    auto& subs = g->cp_sub_groups();
    EXPECT_EQ(subs.size(), 2u);
    if (subs.size() != 2) return 1;
    for (size_t i = 0; i < subs.size(); ++i) {
      const int size = 2 << i, first = rank / size * size;
      EXPECT_EQ(subs[i].size, size);
      EXPECT_EQ(subs[i].rank, rank - first);
      EXPECT_EQ(subs[i].name,
                "cp[dp=0," + std::to_string(first) + ".." + std::to_string(first + size - 1) + "]");
      // The sum of global ranks identifies the members.
      at::Tensor t = at::full({1}, static_cast<double>(rank), at::kDouble);
      StartAllReduceSum(subs[i], t).Wait();
      EXPECT_EQ(t.item<double>(), size * first + size * (size - 1) / 2);
    }
    return Result();
  });
  EXPECT_TRUE(st.ok()) << st;
}

TEST(ProcessGroups, AllGatherAndReduceScatterMoveRowsByGroupRank) {
  Status st = testing::RunForkedRanks(3, [](int rank, int port) {
    auto g = Connect(rank, 1, 3, port);
    if (!g) return 1;
    at::Tensor in = at::full({2, 2}, static_cast<float>(rank + 1));
    at::Tensor out = at::empty({6, 2});
    StartAllGather(g->cp(), in, out).Wait();
    for (int r = 0; r < 3; ++r) {
      EXPECT_EQ(out[2 * r][0].item<float>(), r + 1.0f);
      EXPECT_EQ(out[2 * r + 1][1].item<float>(), r + 1.0f);
    }
    // Row block b of rank r holds 10*r + b; block `rank` sums to 0+10+20+3*rank.
    at::Tensor rs_in = at::empty({3, 4});
    for (int b = 0; b < 3; ++b) rs_in[b].fill_(10.0f * rank + b);
    at::Tensor rs_out = at::empty({1, 4});
    StartReduceScatterSum(g->cp(), rs_in, rs_out).Wait();
    EXPECT_EQ(rs_out[0][3].item<float>(), 30.0f + 3.0f * rank);
    return Result();
  });
  EXPECT_TRUE(st.ok()) << st;
}

TEST(ProcessGroups, RendezvousTimeoutNamesTheAddress) {
  Status st = testing::RunForkedRanks(1, [](int, int port) {
    auto layout = testing::OneNodeLayout(1, 2, 1);  // rank 1 of 2; nobody serves the store
    RendezvousOptions o;
    o.master_port = port;
    o.timeout = std::chrono::seconds(1);
    auto groups = ProcessGroups::Create(*layout, o);
    EXPECT_FALSE(groups.ok());
    EXPECT_EQ(groups.status().code(), StatusCode::kUnavailable);
    EXPECT_NE(groups.status().message().find("rendezvous at 127.0.0.1:" + std::to_string(port)),
              std::string::npos)
        << groups.status();
    EXPECT_NE(groups.status().message().find("rank 1 (dp 1, cp 0) of 2"), std::string::npos)
        << groups.status();
    return Result();
  });
  EXPECT_TRUE(st.ok()) << st;
}

TEST(C10dCollectives, SumsGradientsInBucketsAndScalars) {
  Status st = testing::RunForkedRanks(3, [](int rank, int port) {
    auto g = Connect(rank, 3, 1, port);
    if (!g) return 1;
    C10dCollectivesOptions o;
    o.bucket_bytes = 64;  // forces several buckets, one tensor alone and in place
    C10dCollectives coll(&g->world(), o);
    EXPECT_EQ(coll.rank(), rank);
    EXPECT_EQ(coll.world_size(), 3);
    const float r = static_cast<float>(rank);
    std::vector<at::Tensor> grads = {
        at::full({3}, r),                                       // 12 bytes
        at::full({2, 2}, 2 * r),                                // 16 bytes
        at::arange(40, at::kFloat) * (r + 1),                   // 160 bytes: alone, in place
        at::full({4, 2}, r).t(),                                // non-contiguous
        at::full({2}, static_cast<double>(rank), at::kDouble),  // another dtype
    };
    at::Tensor big = grads[2];
    // Rank 2 comes late: the others wait for it inside the all-reduce.
    constexpr double kLateSeconds = 0.3;
    const auto t0 = std::chrono::steady_clock::now();
    if (rank == 2) std::this_thread::sleep_for(std::chrono::duration<double>(kLateSeconds));
    EXPECT_TRUE(coll.AllReduceSum(grads).ok());
    EXPECT_TRUE(at::allclose(grads[0], at::full({3}, 3.0f)));
    EXPECT_TRUE(at::allclose(grads[1], at::full({2, 2}, 6.0f)));
    EXPECT_TRUE(at::allclose(grads[2], at::arange(40, at::kFloat) * 6));
    EXPECT_TRUE(grads[2].is_same(big));
    EXPECT_TRUE(at::allclose(grads[3], at::full({2, 4}, 3.0f)));
    EXPECT_TRUE(at::allclose(grads[4], at::full({2}, 3.0, at::kDouble)));
    std::vector<double> scalars = {static_cast<double>(rank), 1.5};
    EXPECT_TRUE(coll.AllReduceSum(&scalars).ok());
    EXPECT_EQ(scalars, (std::vector<double>{3.0, 4.5}));
    EXPECT_TRUE(coll.Barrier().ok());
    const double elapsed =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    DpCommStats s = coll.TakeStats();
    EXPECT_EQ(s.gradient_allreduces, 1);
    EXPECT_EQ(s.buckets, static_cast<int64_t>(PlanBuckets(grads, 64).size()));
    EXPECT_EQ(s.scalar_allreduces, 1);
    // Seconds blocked on peers: at most the calls' own time, and most of rank
    // 2's delay on the ranks that waited for it (half, for a loaded machine).
    EXPECT_LE(s.wait_seconds, elapsed) << "rank " << rank;
    if (rank != 2) {
      EXPECT_GE(s.wait_seconds, 0.5 * kLateSeconds) << "rank " << rank;
    }
    return Result();
  });
  EXPECT_TRUE(st.ok()) << st;
}

// Overlap with backward: 4 buckets in reverse parameter order, {p4} {p3}
// {p2, p1} {p0}. p0 gets its gradient only from the first (unarmed)
// micro-batch and rank 1 never uses p2, so rank 0 launches buckets 0-2 during
// backward and rank 1 buckets 0-1; the rest follow in Finish, in the same
// order on both ranks. The sums must equal each rank's gradients added up.
TEST(C10dCollectives, ReducerLaunchesBucketsDuringBackwardInOrderAndSumsExactly) {
  Status st = testing::RunForkedRanks(2, [](int rank, int port) {
    auto g = Connect(rank, 2, 1, port);
    if (!g) return 1;
    C10dCollectivesOptions o;
    o.bucket_bytes = 64;
    C10dCollectives coll(&g->world(), o);
    auto make_params = [] {
      std::vector<at::Tensor> p = {at::linspace(-1, 1, 16).view({4, 4}), at::linspace(0, 1, 8),
                                   at::linspace(2, 3, 3), at::linspace(-2, 0, 16).view({4, 4}),
                                   at::linspace(1, 5, 5)};
      for (at::Tensor& t : p) t.set_requires_grad(true);
      return p;
    };
    // The loss of rank r's micro-batch mb: sum of coef * p^2 over the
    // parameters it uses.
    auto loss = [](const std::vector<at::Tensor>& p, int r, int mb) {
      const double coef = 0.37 * (r + 1) * (mb + 1);
      at::Tensor l = (p[4] * p[4]).sum() * coef + (p[3] * p[3]).sum() * (coef + 1) +
                     (p[1] * p[1]).sum() * coef;
      if (mb == 0) l = l + (p[0] * p[0] * p[0]).sum() * coef;
      if (r == 0) l = l + (p[2] * p[2]).sum() * coef;
      return l;
    };
    std::vector<at::Tensor> params = make_params();
    std::unique_ptr<train::GradientReducer> reducer = coll.MakeGradientReducer(params);
    EXPECT_NE(reducer, nullptr);
    if (reducer == nullptr) return 1;
    train::GradReadyHooks hooks(params, reducer.get());
    // What each rank's accumulated gradients are, computed here for both ranks.
    std::vector<at::Tensor> want(params.size());
    for (int r = 0; r < 2; ++r) {
      std::vector<at::Tensor> q = make_params();
      loss(q, r, 0).backward();
      loss(q, r, 1).backward();
      for (size_t i = 0; i < q.size(); ++i) {
        at::Tensor gi = q[i].grad().defined() ? q[i].grad() : at::zeros_like(q[i]);
        want[i] = r == 0 ? gi.clone() : want[i] + gi;
      }
    }
    for (int step = 0; step < 2; ++step) {
      loss(params, rank, 0).backward();
      EXPECT_EQ(coll.TakeStats().buckets, 0);  // unarmed: nothing launched
      hooks.set_armed(true);
      loss(params, rank, 1).backward();
      hooks.set_armed(false);
      DpCommStats during = coll.TakeStats();
      EXPECT_EQ(during.buckets_during_backward, rank == 0 ? 3 : 2) << "step " << step;
      EXPECT_TRUE(reducer->Finish().ok());
      DpCommStats after = coll.TakeStats();
      EXPECT_EQ(after.gradient_allreduces, 1);
      EXPECT_EQ(after.buckets, rank == 0 ? 1 : 2);
      for (size_t i = 0; i < params.size(); ++i) {
        EXPECT_TRUE(params[i].grad().defined()) << i;
        if (!params[i].grad().defined()) return 1;
        EXPECT_TRUE(at::equal(params[i].grad(), want[i])) << "step " << step << " param " << i;
        params[i].mutable_grad().zero_();
      }
    }
    return Result();
  });
  EXPECT_TRUE(st.ok()) << st;
}

// bf16 parameters (mixed precision, as on CUDA): the reducer reduces the
// optimizer's float32 master gradients, converted when each bucket is
// launched, and the step is bit-for-bit the one of reducing
// ReducibleGradients() after backward.
TEST(C10dCollectives, ReducerOverMasterGradientsMatchesReducingAfterBackwardForBf16) {
  Status st = testing::RunForkedRanks(2, [](int rank, int port) {
    auto g = Connect(rank, 2, 1, port);
    if (!g) return 1;
    C10dCollectivesOptions o;
    o.bucket_bytes = 64;
    C10dCollectives coll(&g->world(), o);
    auto make_params = [] {
      std::vector<model::NamedTensor> p = {{"a", at::linspace(-1, 1, 16).view({4, 4})},
                                           {"b", at::linspace(0, 1, 8)},
                                           {"c", at::linspace(-2, 0, 16).view({4, 4})}};
      for (auto& [name, t] : p) t = t.to(at::kBFloat16).set_requires_grad(true);
      return p;
    };
    // Rank r's two micro-batches; a (the last bucket) only in the first one.
    auto backward = [rank](const std::vector<model::NamedTensor>& p, int mb) {
      const double coef = 0.5 * (rank + 1) * (mb + 1);
      at::Tensor l = (p[2].second * p[2].second).sum() * coef + (p[1].second * coef).sum();
      if (mb == 0) l = l + (p[0].second * p[0].second * p[0].second).sum();
      l.backward();
    };
    std::vector<model::NamedTensor> overlapped = make_params(), after = make_params();
    train::Optimizer opt_overlapped(overlapped, {}), opt_after(after, {});
    std::unique_ptr<train::GradientReducer> reducer =
        coll.MakeGradientReducer(opt_overlapped.reducible_tensors(),
                                 [&](size_t i) { return opt_overlapped.ReducibleGradient(i); });
    EXPECT_NE(reducer, nullptr);
    if (reducer == nullptr) return 1;
    std::vector<at::Tensor> leaves;
    for (auto& [name, t] : overlapped) leaves.push_back(t);
    train::GradReadyHooks hooks(leaves, reducer.get());
    for (int step = 0; step < 2; ++step) {
      backward(overlapped, 0);
      hooks.set_armed(true);
      backward(overlapped, 1);
      hooks.set_armed(false);
      EXPECT_GT(coll.TakeStats().buckets_during_backward, 0) << "step " << step;
      EXPECT_TRUE(reducer->Finish().ok());
      backward(after, 0);
      backward(after, 1);
      std::vector<at::Tensor> grads = opt_after.ReducibleGradients();
      EXPECT_TRUE(coll.AllReduceSum(grads).ok());
      for (size_t i = 0; i < grads.size(); ++i) {
        EXPECT_EQ(opt_overlapped.reducible_tensors()[i].grad().scalar_type(), at::kFloat);
        EXPECT_TRUE(at::equal(opt_overlapped.reducible_tensors()[i].grad(), grads[i]))
            << "step " << step << " parameter " << i;
      }
      opt_overlapped.Step(0.01);
      opt_after.Step(0.01);
      for (size_t i = 0; i < overlapped.size(); ++i) {
        EXPECT_TRUE(at::equal(overlapped[i].second, after[i].second))
            << "step " << step << " parameter " << i;
      }
    }
    return Result();
  });
  EXPECT_TRUE(st.ok()) << st;
}

// Guards the out-of-memory path inside a gradient hook: rank 1 runs out while
// packing its second bucket (of four) during backward; it still joins every
// all-reduce of the step (with zeros), so rank 0's reduction completes, and
// both then agree on further collectives. Rank 1's Finish says OutOfMemory.
TEST(C10dCollectives, ReducerOutOfMemoryInAHookStillJoinsEveryAllReduce) {
  Status st = testing::RunForkedRanks(2, [](int rank, int port) {
    auto g = Connect(rank, 2, 1, port);
    if (!g) return 1;
    C10dCollectivesOptions o;
    o.bucket_bytes = 64;  // 16 floats: four buckets for the parameters below
    C10dCollectives coll(&g->world(), o);
    std::vector<at::Tensor> params;
    for (int i = 0; i < 4; ++i) params.push_back(at::full({16}, 1.0f + i).set_requires_grad(true));
    std::unique_ptr<train::GradientReducer> reducer = coll.MakeGradientReducer(params);
    if (reducer == nullptr) return 1;
    int packed = 0;
    if (rank == 1) {
      reducer->set_pack_hook_for_testing([&packed] {
        if (++packed == 2) {
          C10_THROW_ERROR(OutOfMemoryError, "CUDA out of memory. Tried to allocate 64 bytes");
        }
      });
    }
    train::GradReadyHooks hooks(params, reducer.get());
    hooks.set_armed(true);
    at::Tensor loss = at::zeros({});
    for (const at::Tensor& p : params) loss = loss + (p * p).sum();
    loss.backward();  // never throws: the reducer keeps the error
    hooks.set_armed(false);
    const Status finished = reducer->Finish();
    if (rank == 1) {
      EXPECT_EQ(finished.code(), StatusCode::kOutOfMemory) << finished;
      EXPECT_NE(finished.message().find("packing a bucket: CUDA out of memory"), std::string::npos)
          << finished;
      EXPECT_EQ(packed, 2) << "no bucket is packed after the failure";
    } else {
      EXPECT_TRUE(finished.ok()) << finished;
      // Rank 1's first bucket (the last parameter) was reduced; the rest got zeros.
      EXPECT_TRUE(at::equal(params[3].grad(), at::full({16}, 16.0f))) << params[3].grad();
      EXPECT_TRUE(at::equal(params[0].grad(), at::full({16}, 2.0f))) << params[0].grad();
    }
    // Still in step: the next collective pairs up.
    std::vector<double> one = {1.0};
    EXPECT_TRUE(coll.AllReduceSum(&one).ok());
    EXPECT_EQ(one[0], 2.0);
    return Result();
  });
  EXPECT_TRUE(st.ok()) << st;
}

// Guards spec.training.collectiveTimeoutSeconds reaching the process groups:
// a collective a peer never joins fails after the collective timeout (3 s),
// not after the 120 s rendezvous deadline; WaitForAllRanks waits on the store
// for longer than that collective timeout, and times out on its own.
TEST(C10dCollectives, CollectivesTimeOutAfterTheCollectiveTimeoutNotTheRendezvousOne) {
  Status st = testing::RunForkedRanks(2, [](int rank, int port) {
    at::set_num_threads(1);
    auto layout = testing::OneNodeLayout(rank, 2, 1);
    RendezvousOptions ro;
    ro.master_port = port;
    ro.timeout = std::chrono::seconds(120);
    // Gloo also connects its groups within this: not shorter on a loaded machine.
    ro.collective_timeout = std::chrono::seconds(3);
    auto g = ProcessGroups::Create(*layout, ro);
    EXPECT_TRUE(g.ok()) << g.status();
    if (!g.ok()) return 1;
    C10dCollectives coll(&(*g)->world(), {}, &(*g)->store());
    // Rank 1 arrives 5 s late: longer than the collective timeout.
    if (rank == 1) std::this_thread::sleep_for(std::chrono::seconds(5));
    EXPECT_TRUE(coll.WaitForAllRanks(std::chrono::seconds(30)).ok());
    std::vector<double> v = {1.0};
    EXPECT_TRUE(coll.AllReduceSum(&v).ok());
    EXPECT_EQ(v[0], 2.0);
    if (rank == 1) {
      // Joins nothing more, but stays until rank 0 is done.
      (*g)->store().wait({"rank0-done"}, std::chrono::seconds(60));
      return Result();
    }
    auto start = std::chrono::steady_clock::now();
    Status waited = coll.WaitForAllRanks(std::chrono::milliseconds(500));
    EXPECT_EQ(waited.code(), StatusCode::kUnavailable) << waited;
    EXPECT_NE(waited.message().find("waiting on the rendezvous store"), std::string::npos)
        << waited;
    start = std::chrono::steady_clock::now();
    Status s = coll.AllReduceSum(&v);
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    EXPECT_EQ(s.code(), StatusCode::kUnavailable) << s;
    EXPECT_LT(seconds, 10.0) << "the collective waited for more than its 3 s timeout";
    (*g)->store().set("rank0-done", std::vector<uint8_t>{1});
    return Result();
  });
  EXPECT_TRUE(st.ok()) << st;
}

// spec.training.gradReduceDtype bf16 on two ranks. Per element, the sum
// reduced in bf16 differs from the float32 one by at most
//   (gamma_W(2^-8) + gamma_(W-1)(2^-24)) x sum over ranks of |x_r|,
// gamma_k(u) = k u / (1 - k u): each addend is rounded to bf16 once (8
// significand bits: relative error <= 2^-8), the W-1 additions of the
// reduction round at most once each in bf16, the float32 reference's W-1
// additions at most 2^-24 each (docs/architecture.md, "Gradient precision").
double Gamma(int k, double unit_roundoff) { return k * unit_roundoff / (1 - k * unit_roundoff); }

// Rank r's float32 gradient: normal values, two decades of scale apart.
at::Tensor RankGradient(int rank, int64_t numel) {
  at::Generator gen = at::detail::createCPUGenerator(101 + rank);
  return at::randn({numel}, gen) * at::exp(at::rand({numel}, gen) * 4.6);
}

// The worst |bf16 - fp32| / sum_r |x_r| over the elements, after checking
// it against the bound and that bf16 really travelled.
double ExpectWithinBf16Bound(const at::Tensor& bf16_sum, const at::Tensor& fp32_sum,
                             const at::Tensor& magnitude, const std::string& what) {
  const double bound = Gamma(2, std::ldexp(1.0, -8)) + Gamma(1, std::ldexp(1.0, -24));
  const at::Tensor ratio =
      (bf16_sum.to(at::kDouble) - fp32_sum.to(at::kDouble)).abs() / magnitude.to(at::kDouble);
  const double worst = ratio.max().item<double>();
  EXPECT_LE(worst, bound) << what;
  // Float32 on the wire would leave 0 (or float32 noise, ~2^-24).
  EXPECT_GT(worst, std::ldexp(1.0, -10)) << what << ": no bf16 rounding seen";
  EXPECT_EQ(bf16_sum.scalar_type(), at::kFloat) << what;
  std::printf("%s: worst |bf16 - fp32| / sum|x| = %.6f (bound %.6f)\n", what.c_str(), worst, bound);
  return worst;
}

TEST(C10dCollectives, Bf16WireStaysWithinTheDocumentedBoundOfFloat32) {
  Status st = testing::RunForkedRanks(2, [](int rank, int port) {
    auto g = Connect(rank, 2, 1, port);
    if (!g) return 1;
    constexpr int64_t kNumel = 4096;
    const at::Tensor magnitude = RankGradient(0, kNumel).abs() + RankGradient(1, kNumel).abs();
    const at::Tensor mine = RankGradient(rank, kNumel);
    C10dCollectivesOptions o;
    o.bucket_bytes = 8192;  // the first two packed, the third alone and in place
    C10dCollectives fp32(&g->world(), o);
    o.gradient_wire_dtype = GradientWireDtype(api::GradReduceDtype::kBf16);
    C10dCollectives bf16(&g->world(), o);
    // Three gradients: packed, non-contiguous, and one reduced in place.
    auto split = [&] {
      return std::vector<at::Tensor>{mine.narrow(0, 0, 96).clone(),
                                     mine.narrow(0, 96, 1000).clone().view({40, 25}).t(),
                                     mine.narrow(0, 1096, 3000).clone()};
    };
    auto joined = [](const std::vector<at::Tensor>& t) {
      return at::cat({t[0], t[1].t().reshape({-1}), t[2]});
    };

    // After backward: AllReduceSum.
    std::vector<at::Tensor> want = split(), got = split();
    EXPECT_TRUE(fp32.AllReduceSum(want).ok());
    Status sent = bf16.AllReduceSum(got);
    EXPECT_TRUE(sent.ok()) << sent;
    ExpectWithinBf16Bound(joined(got), joined(want), magnitude, "all-reduce");
    const int64_t fp32_bytes = fp32.TakeStats().bytes;
    EXPECT_EQ(bf16.TakeStats().bytes * 2, fp32_bytes);

    // Overlapped with backward: the reducer.
    std::vector<at::Tensor> params;
    for (const at::Tensor& t : split()) params.push_back(at::zeros_like(t).requires_grad_());
    std::unique_ptr<train::GradientReducer> reducer = bf16.MakeGradientReducer(params);
    EXPECT_NE(reducer, nullptr);
    if (reducer == nullptr) return 1;
    const std::vector<at::Tensor> parts = split();
    for (size_t i = params.size(); i-- > 0;) {
      params[i].mutable_grad() = parts[i].clone();
      reducer->GradReady(i);
    }
    sent = reducer->Finish();
    EXPECT_TRUE(sent.ok()) << sent;
    std::vector<at::Tensor> reduced;
    for (const at::Tensor& p : params) reduced.push_back(p.grad());
    ExpectWithinBf16Bound(joined(reduced), joined(want), magnitude, "reducer");
    EXPECT_EQ(bf16.TakeStats().bytes * 2, fp32_bytes);

    // ZeRO: the reduce-scatter into this rank's float32 slice.
    const int64_t slice = kNumel / 2;
    at::Tensor out32 = at::empty({slice}), out16 = at::empty({slice});
    EXPECT_TRUE(fp32.StartReduceScatterSum(mine, out32)->Wait().ok());
    sent = bf16.StartReduceScatterSum(mine, out16)->Wait();
    EXPECT_TRUE(sent.ok()) << sent;
    ExpectWithinBf16Bound(out16, out32, magnitude.narrow(0, rank * slice, slice), "reduce-scatter");
    return Result();
  });
  EXPECT_TRUE(st.ok()) << st;
}

TEST(C10dCollectives, APeerThatDiedIsAnErrorNamingTheOperation) {
  Status st = testing::RunForkedRanks(2, [](int rank, int port) {
    auto g = Connect(rank, 2, 1, port);
    if (!g) return 1;
    if (rank == 1) _exit(0);  // leaves without a word
    C10dCollectives coll(&g->world());
    std::vector<at::Tensor> grads = {at::ones({1000})};
    Status s = coll.AllReduceSum(grads);
    EXPECT_FALSE(s.ok());
    EXPECT_EQ(s.code(), StatusCode::kUnavailable);
    EXPECT_NE(s.message().find("c10d allreduce failed on world rank 0/2"), std::string::npos) << s;
    EXPECT_NE(s.message().find("4000 bytes"), std::string::npos) << s;
    return Result();
  });
  EXPECT_TRUE(st.ok()) << st;
}

}  // namespace
}  // namespace skrull::dist
