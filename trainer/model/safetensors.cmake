# skrull_safetensors: torch-free safetensors reader/writer (raw bytes, dtypes,
# sharded folders). Compiles in seconds and is tested without libtorch.
# Included by trainer/CMakeLists.txt whether or not the trainer is built, so
# torch-free tools (fuzz/) can link it.
skrull_library(skrull_safetensors
  SOURCES
    ${CMAKE_CURRENT_LIST_DIR}/safetensors.cc
    ${CMAKE_CURRENT_LIST_DIR}/safetensors_checkpoint.cc
  DEPS skrull_common nlohmann_json::nlohmann_json)
