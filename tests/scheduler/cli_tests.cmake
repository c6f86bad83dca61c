# Included by tests/scheduler/CMakeLists.txt: the skrull-plan CLI tests.
skrull_test(scheduler_cli_test
  SOURCES cli_test.cc cli_bucket_test.cc
  DEPS skrull_plan_cli skrull_scheduler skrull_common nlohmann_json::nlohmann_json)
