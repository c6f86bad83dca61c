# Tests of trainer/model. Included by tests/trainer/CMakeLists.txt.
# safetensors: torch-free, fast.
skrull_test(trainer_safetensors_test
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/safetensors_format_test.cc
  DEPS skrull_safetensors skrull_common)
# The decoder on libtorch (CPU, tiny configs): one binary to keep link time down.
skrull_test(trainer_model_test
  SOURCES
    ${CMAKE_CURRENT_LIST_DIR}/model_attention_test.cc
    ${CMAKE_CURRENT_LIST_DIR}/model_flash_attention_test.cc
    ${CMAKE_CURRENT_LIST_DIR}/model_rope_test.cc
    ${CMAKE_CURRENT_LIST_DIR}/model_decoder_test.cc
    ${CMAKE_CURRENT_LIST_DIR}/model_weights_test.cc
    ${CMAKE_CURRENT_LIST_DIR}/model_lora_test.cc
  DEPS skrull_model)
# Qwen3 / Mistral / dynamic and yarn RoPE / recompute modes / LoRA merge.
skrull_test(trainer_model_families_test
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/model_families_test.cc
  DEPS skrull_model)
# Throughput numbers; skips unless SKRULL_MODEL_BENCH=1.
skrull_test(trainer_model_bench_test
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/model_bench_test.cc
  DEPS skrull_model
  LABELS slow)
# CUDA paths against the CPU reference; skips without a device.
skrull_test(trainer_model_gpu_test
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/model_gpu_test.cc
  DEPS skrull_model
  LABELS gpu)
# The flash varlen path against the chunked reference on one GPU; skips
# without a device or a flash-capable one.
skrull_test(trainer_model_gpu_attention_test
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/model_gpu_attention_test.cc
  DEPS skrull_model
  LABELS gpu)
# Tokens/s, MFU and peak memory of the flash path and the chunked reference
# on a Qwen2.5-0.5B-shaped model, one SKRULL_GPU_BENCH_CASE per run
# (gpu-bundle/run.sh); skips with no case set or without a device.
skrull_test(trainer_model_gpu_kernel_bench_test
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/model_gpu_kernel_bench_test.cc
  DEPS skrull_model skrull_train
  LABELS gpu)
