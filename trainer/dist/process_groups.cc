#include "trainer/dist/process_groups.h"

#include <ATen/ATen.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#ifdef SKRULL_WITH_CUDA
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

#include <chrono>
#include <csignal>
#include <sstream>

#include "trainer/model/torch_compat.h"

namespace skrull::dist {

const char* CommBackendName(CommBackend backend) {
  return backend == CommBackend::kNccl ? "nccl" : "gloo";
}

bool NcclAvailable() {
#ifdef SKRULL_WITH_CUDA
  return true;
#else
  return false;
#endif
}

RendezvousOptions RendezvousOptionsFor(const RankEnv& env, CommBackend backend,
                                       const api::JobSpec& job) {
  RendezvousOptions ro;
  ro.master_addr = env.master_addr;
  ro.master_port = env.master_port;
  ro.timeout = std::chrono::seconds(env.rendezvous_timeout_seconds);
  ro.collective_timeout = std::chrono::seconds(job.training.collective_timeout_seconds);
  ro.gloo_interface = env.gloo_interface;
  ro.backend = backend;
  return ro;
}

CommBackend TrainingBackend(const RankDevice& device) {
  return NcclAvailable() && device.cuda ? CommBackend::kNccl : CommBackend::kGloo;
}

std::string Group::Describe() const {
  return name + " rank " + std::to_string(rank) + "/" + std::to_string(size) + " (global rank " +
         std::to_string(global_rank) + ", " + CommBackendName(backend) + ")";
}

namespace internal {

void ThrowCollectiveError(const char* op, const Group& group, int64_t bytes, const char* file,
                          int line, const char* what) {
  std::string base = file;
  if (auto slash = base.rfind('/'); slash != std::string::npos) base = base.substr(slash + 1);
  std::ostringstream os;
  os << "c10d " << op << " failed on " << group.Describe() << ", " << bytes << " bytes, at " << base
     << ":" << line << ": " << what;
  throw CollectiveError(os.str());
}

}  // namespace internal

int64_t TensorBytes(const at::Tensor& t) {
  return t.defined() ? t.numel() * static_cast<int64_t>(t.element_size()) : 0;
}

namespace {

// PyTorch >= 2.4 defaults TCPStoreOptions::useLibUV to true, and a build
// without libuv (Debian's 2.6 is one) then fails every rendezvous with "use_libuv
// was requested but PyTorch was build without libuv support". The classic
// store exists in every version we build against; 1.13 has no such field.
template <typename Options>
auto UseClassicTcpStore(Options* o, int) -> decltype(o->useLibUV = false, void()) {
  o->useLibUV = false;
}
template <typename Options>
void UseClassicTcpStore(Options*, long) {}

// c10d::Backend::Options has group_name and global_ranks_in_group in 2.x
// (NCCL's flight recorder, logs and watchdog messages name the group by
// them); 1.13's options have neither.
template <typename Options>
auto NameGroup(Options* o, const std::string& name, const std::vector<int>& members, int)
    -> decltype(o->group_name = name, void()) {
  o->group_name = name;
  o->global_ranks_in_group.assign(members.begin(), members.end());
}
template <typename Options>
void NameGroup(Options*, const std::string&, const std::vector<int>&, long) {}

bool IsLoopback(const std::string& addr) {
  return addr == "localhost" || addr.rfind("127.", 0) == 0 || addr == "::1";
}

c10::intrusive_ptr<CommGroup> MakeProcessGroup(const RendezvousOptions& options,
                                               const c10::intrusive_ptr<c10d::Store>& store,
                                               const std::string& name,
                                               const std::vector<int>& members, int rank) {
  const int size = static_cast<int>(members.size());
  if (options.backend == CommBackend::kNccl) {
#ifdef SKRULL_WITH_CUDA
    auto opts = c10d::ProcessGroupNCCL::Options::create();
    opts->timeout = options.collective_timeout;
    NameGroup(opts.get(), name, members, 0);
    return c10::make_intrusive<c10d::ProcessGroupNCCL>(store, rank, size, opts);
#else
    throw std::runtime_error(
        "NCCL requested but this build has no CUDA (configure with -DSKRULL_WITH_CUDA=ON "
        "against a CUDA libtorch)");
#endif
  }
  auto opts = c10d::ProcessGroupGloo::Options::create(options.collective_timeout);
  NameGroup(opts.get(), name, members, 0);
  if (!options.gloo_interface.empty()) {
    opts->devices.push_back(
        c10d::ProcessGroupGloo::createDeviceForInterface(options.gloo_interface));
  } else if (IsLoopback(options.master_addr)) {
    opts->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1"));
  } else {
    opts->devices.push_back(c10d::ProcessGroupGloo::createDefaultDevice());
  }
  return c10::make_intrusive<c10d::ProcessGroupGloo>(store, rank, size, opts);
}

StatusOr<Group> MakeGroup(const std::string& name, const std::vector<int>& members,
                          const RankLayout& layout, const RendezvousOptions& options,
                          const c10::intrusive_ptr<c10d::Store>& store, c10::Device device) {
  Group g;
  g.name = name;
  g.device = device;
  g.backend = options.backend;
  g.size = static_cast<int>(members.size());
  g.global_rank = layout.rank();
  g.rank = -1;
  for (int i = 0; i < g.size; ++i) {
    if (members[i] == layout.rank()) g.rank = i;
  }
  SKRULL_CHECK(g.rank >= 0) << layout.Describe() << " is not in group " << name;
  try {
    auto prefixed = c10::make_intrusive<c10d::PrefixStore>(name, store);
    g.pg = MakeProcessGroup(options, prefixed, name, members, g.rank);
  } catch (const std::exception& e) {
    return UnavailableError("creating process group " + g.Describe() + ": " + e.what());
  }
  return g;
}

}  // namespace

StatusOr<std::unique_ptr<ProcessGroups>> ProcessGroups::Create(const RankLayout& layout,
                                                               const RendezvousOptions& options) {
  // A peer that dies closes its sockets; writing to them must surface as a
  // c10d error naming the operation, not kill this rank with SIGPIPE.
  std::signal(SIGPIPE, SIG_IGN);
  const std::string where = options.master_addr + ":" + std::to_string(options.master_port);
  const double seconds = std::chrono::duration<double>(options.timeout).count();
  if (options.master_port <= 0 || options.master_port > 65535) {
    return InvalidArgumentError("rendezvous: master port must be in 1..65535 (got " +
                                std::to_string(options.master_port) + "); set SKRULL_MASTER_PORT");
  }
  c10::intrusive_ptr<c10d::Store> store;
  try {
    c10d::TCPStoreOptions o;
    o.port = static_cast<uint16_t>(options.master_port);
    o.isServer = layout.rank() == 0;
    o.numWorkers = layout.world_size();
    o.waitWorkers = true;
    o.timeout = options.timeout;
    UseClassicTcpStore(&o, 0);
    store = c10::make_intrusive<c10d::TCPStore>(options.master_addr, o);
  } catch (const std::exception& e) {
    std::string msg = e.what();
    if (auto nl = msg.find("\nException raised from"); nl != std::string::npos) msg.resize(nl);
    return UnavailableError(
        "rendezvous at " + where + " failed for " + layout.Describe() + " of " +
        std::to_string(layout.world_size()) + " within " + std::to_string(seconds) + " s" +
        (layout.rank() == 0 ? " (serving the TCPStore; did every rank start?)"
                            : " (is rank 0 running and is SKRULL_MASTER_ADDR:SKRULL_MASTER_PORT "
                              "reachable from here?)") +
        ": " + msg);
  }
  return CreateWithStore(std::move(store), layout, options);
}

StatusOr<std::unique_ptr<ProcessGroups>> ProcessGroups::CreateWithStore(
    c10::intrusive_ptr<c10d::Store> store, const RankLayout& layout,
    const RendezvousOptions& options) {
  c10::Device device(c10::kCPU);
  if (options.backend == CommBackend::kNccl) {
    const int64_t gpus = model::compat::CudaDeviceCount();
    if (gpus < 1) {
      return FailedPreconditionError(layout.Describe() +
                                     ": NCCL needs a GPU and none is visible (check "
                                     "resources.gpusPerProc and CUDA_VISIBLE_DEVICES)");
    }
    if (options.cuda_device < 0 || options.cuda_device >= gpus) {
      return FailedPreconditionError(layout.Describe() +
                                     ": NCCL on cuda:" + std::to_string(options.cuda_device) +
                                     " but " + std::to_string(gpus) + " GPU(s) are visible");
    }
    device = c10::Device(c10::kCUDA, static_cast<c10::DeviceIndex>(options.cuda_device));
    // c10d binds a rank's NCCL communicators to the current device.
    c10::impl::getDeviceGuardImpl(c10::kCUDA)->setDevice(device);
  }
  std::unique_ptr<ProcessGroups> groups(new ProcessGroups());
  groups->layout_ = layout;
  groups->store_ = store;
  std::vector<int> all(layout.world_size());
  for (int r = 0; r < layout.world_size(); ++r) all[r] = r;
  SKRULL_ASSIGN_OR_RETURN(groups->world_, MakeGroup("world", all, layout, options, store, device));
  SKRULL_ASSIGN_OR_RETURN(groups->cp_, MakeGroup("cp[dp=" + std::to_string(layout.dp_rank()) + "]",
                                                 layout.CpGroup(), layout, options, store, device));
  SKRULL_ASSIGN_OR_RETURN(groups->dp_, MakeGroup("dp[cp=" + std::to_string(layout.cp_rank()) + "]",
                                                 layout.DpGroup(), layout, options, store, device));
  const std::vector<int> cp_members = layout.CpGroup();
  for (int size = 2; size < layout.cp(); size *= 2) {
    const int first = layout.cp_rank() / size * size;
    if (first + size > layout.cp()) continue;
    const std::vector<int> members(cp_members.begin() + first, cp_members.begin() + first + size);
    const std::string name = "cp[dp=" + std::to_string(layout.dp_rank()) + "," +
                             std::to_string(first) + ".." + std::to_string(first + size - 1) + "]";
    SKRULL_ASSIGN_OR_RETURN(Group g, MakeGroup(name, members, layout, options, store, device));
    groups->cp_sub_groups_.push_back(std::move(g));
  }
  return groups;
}

// ---------------------------------------------------------------------------

PendingCollective::PendingCollective(const Group* group, const char* op, int64_t bytes,
                                     c10::intrusive_ptr<c10d::Work> work,
                                     std::function<void()> finish)
    : group_(group), op_(op), bytes_(bytes), work_(std::move(work)), finish_(std::move(finish)) {}

double PendingCollective::Wait() {
  if (!work_) return 0.0;
  const auto start = std::chrono::steady_clock::now();
  auto work = std::move(work_);
  work_.reset();
  SKRULL_C10D_CHECK(*group_, op_, bytes_, work->wait());
  if (finish_) {
    finish_();
    finish_ = nullptr;
  }
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

PendingCollective StartAllReduceSum(Group& group, const at::Tensor& tensor) {
  const int64_t bytes = TensorBytes(tensor);
  if (group.size == 1) return PendingCollective();
  std::vector<at::Tensor> tensors = {tensor};
  auto work = SKRULL_C10D_CHECK(group, "allreduce", bytes, group.pg->allreduce(tensors));
  return PendingCollective(&group, "allreduce", bytes, std::move(work));
}

}  // namespace skrull::dist
