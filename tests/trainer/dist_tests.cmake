# Tests of trainer/dist (owned by the dist area). Multi-process tests fork
# ranks on loopback with Gloo and carry the label `integration` (or `slow`).
skrull_test(dist_launcher_test
  SOURCES dist_launcher_test.cc
  DEPS skrull_dist_launcher skrull_dist_testing
  LABELS unit)

# The ranks' failure records and the launcher's choice of the rank to blame
# (torch-free).
skrull_test(dist_failure_record_test
  SOURCES dist_failure_record_test.cc
  DEPS skrull_dist_launcher
  LABELS unit)

# The one rank-layout type (torch-free): DP x CP and node x local arithmetic.
skrull_test(dist_rank_layout_test
  SOURCES dist_rank_layout_test.cc
  DEPS skrull_dist_launcher skrull_dist_testing
  LABELS unit)

# The rank's device rule (torch-free): one GPU per rank of a node, or refused.
skrull_test(dist_rank_device_test
  SOURCES dist_rank_device_test.cc
  DEPS skrull_dist_launcher
  LABELS unit)

skrull_test(dist_span_attention_test
  SOURCES dist_span_attention_test.cc
  DEPS skrull_dist
  LABELS unit)

skrull_test(dist_cp_attention_test
  SOURCES dist_cp_attention_test.cc
  DEPS skrull_dist skrull_dist_testing
  LABELS integration
  TIMEOUT 300)

# RendezvousOptionsFor and TrainingBackend (process_groups.h).
skrull_test(dist_rendezvous_options_test
  SOURCES dist_rendezvous_options_test.cc
  DEPS skrull_dist
  LABELS unit)

skrull_test(dist_groups_unit_test
  SOURCES dist_groups_unit_test.cc
  DEPS skrull_dist skrull_dist_testing
  LABELS unit)

skrull_test(dist_collectives_test
  SOURCES dist_collectives_test.cc
  DEPS skrull_dist skrull_dist_testing
  LABELS integration
  TIMEOUT 300)

# The issue's equivalence test: skrull / cp-all / sorted on DP x CP layouts
# against one process (10 short training runs in forked processes).
skrull_test(dist_equivalence_test
  SOURCES dist_equivalence_test.cc
  DEPS skrull_dist skrull_dist_testing skrull_safetensors skrull_api
  LABELS slow
  TIMEOUT 600)

# Validation loss (spec.data.eval) on the same layouts and policies against
# one process.
skrull_test(dist_eval_test
  SOURCES dist_eval_test.cc
  DEPS skrull_dist skrull_dist_testing skrull_safetensors skrull_api
  LABELS slow
  TIMEOUT 600)

# ZeRO stages 1 and 2 against stage 0 on DP x CP layouts, sharded
# checkpoints, resume and re-sharding (short runs in forked processes).
skrull_test(dist_zero_test
  SOURCES dist_zero_test.cc
  DEPS skrull_dist skrull_dist_testing skrull_safetensors skrull_api
  LABELS slow
  TIMEOUT 600)

# Per-step phase seconds (cp/dp waits) and the gradient all-reduce
# overlapped with backward, on 2-process runs.
skrull_test(dist_step_phases_test
  SOURCES dist_step_phases_test.cc
  DEPS skrull_dist skrull_dist_testing skrull_metrics skrull_safetensors skrull_api
  LABELS integration
  TIMEOUT 300)

# `skrull-trainer --job` / `--profile` end to end (the test binary doubles as
# the trainer).
skrull_test(dist_trainer_main_test
  SOURCES dist_trainer_main_test.cc
  DEPS skrull_dist skrull_dist_testing skrull_scheduler
  LABELS integration
  TIMEOUT 300)

# The equivalence test on NCCL, one GPU per rank (>= 2 GPUs; skips without).
skrull_test(dist_gpu_nccl_equivalence_test
  SOURCES dist_gpu_nccl_equivalence_test.cc
  DEPS skrull_dist skrull_dist_testing skrull_safetensors skrull_api
  LABELS gpu
  TIMEOUT 600)

# skrull-trainer (1 rank, and 2 ranks through the launcher) on hostile model
# folders (tests/tokenizer/hostile.py's cases, read from fuzz/corpus): each an
# error naming the file, not a signal, under 5 s and 1 GiB; at 2 ranks the
# launcher names the failing rank and shows its log tail. Then resumes from
# damaged checkpoints (a bad rng_state_hex, a LoRA checkpoint without its
# adapter) and a 2-rank resume where rank 1 fails as on a full disk: the
# launcher must blame rank 1 (tests/trainer/trainer_failures.py).
find_package(Python3 COMPONENTS Interpreter)
if(Python3_FOUND)
  add_test(NAME trainer_hostile_test
    COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/trainer_failures.py hostile
            --bin ${CMAKE_BINARY_DIR}/bin --corpus ${PROJECT_SOURCE_DIR}/fuzz/corpus)
  add_test(NAME trainer_resume_failures_test
    COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/trainer_failures.py resume
            --bin ${CMAKE_BINARY_DIR}/bin)
  set_tests_properties(trainer_hostile_test trainer_resume_failures_test
    PROPERTIES LABELS "integration" TIMEOUT 300)
endif()
