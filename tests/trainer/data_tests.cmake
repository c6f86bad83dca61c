# Tests of trainer/data (skrull_data): torch-free, fast, label unit.
# Included by tests/trainer/CMakeLists.txt.
skrull_test(trainer_data_tokenizer_test
  SOURCES data_sample_test.cc data_byte_tokenizer_test.cc
  DEPS skrull_data)
skrull_test(trainer_data_dataset_test
  SOURCES data_dataset_test.cc data_dataset_limits_test.cc data_jsonl_record_test.cc
  DEPS skrull_data)
# Alpaca, ShareGPT and field-mapped records (docs/job-spec.md, spec.data.format).
skrull_test(trainer_data_record_format_test
  SOURCES data_record_format_test.cc
  DEPS skrull_data)
# Several sources mixed by weight (spec.data.sources).
skrull_test(trainer_data_mixture_test
  SOURCES data_mixture_test.cc
  DEPS skrull_data)
skrull_test(trainer_data_sampler_test
  SOURCES data_sampler_test.cc
  DEPS skrull_data)
skrull_test(trainer_data_make_data_test
  SOURCES data_make_data_test.cc
  DEPS skrull_data)
# The binary's flags and exit codes.
add_dependencies(trainer_data_make_data_test skrull-make-data)
skrull_test(trainer_data_tokenizer_dataset_test
  SOURCES data_tokenizer_dataset_test.cc
  DEPS skrull_data)
skrull_test(trainer_data_tokenize_cli_test
  SOURCES data_tokenize_cli_test.cc
  DEPS skrull_data)
add_dependencies(trainer_data_tokenize_cli_test skrull-tokenize)
