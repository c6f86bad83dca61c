# Tests of trainer/train (included from tests/trainer/CMakeLists.txt).
# Torch-free units first; the model-backed ones use a 2-layer tiny config and
# run in seconds on CPU.
skrull_test(train_unit_test
  SOURCES train_lr_schedule_test.cc train_checkpoint_dir_test.cc train_summary_test.cc
  DEPS skrull_train)
skrull_test(train_step_test
  SOURCES train_step_test.cc train_optimizer_test.cc
  DEPS skrull_train)
# keepLast, serving files, skrull-export.
skrull_test(train_serving_test
  SOURCES train_serving_test.cc
  DEPS skrull_train)
skrull_test(train_zero_test
  SOURCES train_zero_test.cc
  DEPS skrull_train
  LABELS unit)
# bf16 gradients summed over micro-batches in float32 at ZeRO stages 0-2.
skrull_test(train_grad_precision_test
  SOURCES train_grad_precision_test.cc
  DEPS skrull_train
  LABELS unit)

# What SFT users expect from other trainers (docs/job-spec.md): epochs,
# weighted sources, record formats, validation loss, TensorBoard.
skrull_test(train_sft_test
  SOURCES train_epochs_test.cc train_sources_test.cc train_eval_test.cc
  DEPS skrull_train
  TIMEOUT 600)
skrull_test(train_trainer_test
  SOURCES train_trainer_test.cc
  DEPS skrull_train
  TIMEOUT 600)
# Device memory and the out-of-memory path on CPU (a fake allocator, the hook).
skrull_test(train_device_memory_test
  SOURCES train_device_memory_test.cc
  DEPS skrull_train)
skrull_test(train_cli_test
  SOURCES train_cli_test.cc
  DEPS skrull_train
  LABELS integration
  TIMEOUT 600)
# The CLI test runs the binary.
add_dependencies(train_cli_test skrull-trainer)
# spec.scheduler.hardwareProfile: profiles a tiny job (trainer/dist/profile.h)
# and trains with bucketSize: auto from it.
skrull_test(train_profile_test
  SOURCES train_profile_test.cc
  DEPS skrull_dist skrull_train
  TIMEOUT 600)

# The tokens/s + MFU report on one GPU (skips without).
skrull_test(train_gpu_throughput_test
  SOURCES train_gpu_throughput_test.cc
  DEPS skrull_train
  LABELS gpu
  TIMEOUT 600)

# examples/quickstart-sft.yaml end to end: weighted sources, an eval set, its
# eval loss in summary.json and in TensorBoard's reader.
add_test(NAME sft_quickstart_test COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/sft_quickstart_check.sh)
set_tests_properties(sft_quickstart_test PROPERTIES LABELS "integration" TIMEOUT 600
  ENVIRONMENT "SKRULL_SOURCE_DIR=${PROJECT_SOURCE_DIR};SKRULL_BIN_DIR=${CMAKE_BINARY_DIR}/bin")
