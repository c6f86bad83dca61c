#include "trainer/dist/testing/processes.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

namespace skrull::dist::testing {
namespace {

// /proc/<pid>/stat: "pid (comm) state ppid ...". comm may hold spaces and
// parentheses, so fields are counted after the last ')'. False when gone.
bool ReadStat(pid_t pid, char* state, pid_t* ppid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string text;
  if (!std::getline(in, text)) return false;
  const size_t close = text.rfind(')');
  if (close == std::string::npos || close + 4 >= text.size()) return false;
  *state = text[close + 2];
  *ppid = static_cast<pid_t>(std::strtol(text.c_str() + close + 4, nullptr, 10));
  return true;
}

}  // namespace

bool ProcessIsAlive(pid_t pid) {
  char state = 0;
  pid_t ppid = 0;
  return ReadStat(pid, &state, &ppid) && state != 'Z' && state != 'X';
}

std::vector<pid_t> ChildrenOf(pid_t parent) {
  std::vector<pid_t> children;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    const auto pid = static_cast<pid_t>(std::stol(name));
    char state = 0;
    pid_t ppid = 0;
    if (ReadStat(pid, &state, &ppid) && ppid == parent && state != 'Z' && state != 'X') {
      children.push_back(pid);
    }
  }
  return children;
}

bool WaitUntilGone(const std::vector<pid_t>& pids, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    bool any = false;
    for (pid_t pid : pids) any = any || ProcessIsAlive(pid);
    if (!any) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

}  // namespace skrull::dist::testing
