# skrull_dist_launcher: torch-free; the launcher, the ranks' failure records,
# process spawning, the run summary, the rank layout and the rank's device
# rule. Included by trainer/CMakeLists.txt whether or
# not the trainer is built, so the controller (local runner) can link it
# without libtorch.
skrull_library(skrull_dist_launcher
  SOURCES
    ${CMAKE_CURRENT_LIST_DIR}/process_spawner.cc
    ${CMAKE_CURRENT_LIST_DIR}/launcher.cc
    ${CMAKE_CURRENT_LIST_DIR}/failure_record.cc
    ${CMAKE_CURRENT_LIST_DIR}/run_summary.cc
    ${CMAKE_CURRENT_LIST_DIR}/rank_layout.cc
    ${CMAKE_CURRENT_LIST_DIR}/rank_device.cc
  DEPS skrull_api skrull_common nlohmann_json::nlohmann_json Threads::Threads)
