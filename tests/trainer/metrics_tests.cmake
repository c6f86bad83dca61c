# Tests of trainer/metrics (skrull_metrics). Included by tests/trainer/CMakeLists.txt.
#   metrics_unit_test        unit: families, labels, counters, histograms, escaping,
#                            metrics.jsonl, concurrency, Pushgateway (fake, loopback),
#                            process memory, dashboard <-> exporter <-> recording rules
#   metrics_promtool_test    integration: promtool check metrics on a loopback scrape,
#                            promtool check rules on the recording rules
#   metrics_prometheus_test  integration: a real Prometheus scrapes two ranks and
#                            evaluates every dashboard panel and recording rule
#   metrics_live_job_test    integration: the same against a real 2-rank skrull-trainer job
set(_metrics_tests_dir ${CMAKE_CURRENT_LIST_DIR})

skrull_library(skrull_prometheus_harness
  SOURCES ${_metrics_tests_dir}/prometheus_harness.cc
  DEPS skrull_common nlohmann_json::nlohmann_json)

skrull_library(skrull_metrics_testing
  SOURCES ${_metrics_tests_dir}/metrics_testing.cc ${_metrics_tests_dir}/metrics_dashboard_util.cc
  DEPS skrull_metrics skrull_prometheus_harness)

# TensorBoard event files, read back by TensorBoard's own reader from the
# environment scripts/get-tensorboard.sh makes (skipped without it).
skrull_test(metrics_tensorboard_test
  SOURCES ${_metrics_tests_dir}/metrics_tensorboard_test.cc
  DEPS skrull_metrics)
skrull_test(metrics_unit_test
  SOURCES
    ${_metrics_tests_dir}/metrics_exporter_test.cc
    ${_metrics_tests_dir}/metrics_step_record_test.cc
    ${_metrics_tests_dir}/metrics_concurrency_test.cc
    ${_metrics_tests_dir}/metrics_push_test.cc
    ${_metrics_tests_dir}/metrics_process_memory_test.cc
    ${_metrics_tests_dir}/metrics_oom_record_test.cc
    ${_metrics_tests_dir}/metrics_dashboard_test.cc
  DEPS skrull_metrics_testing)

skrull_test(metrics_promtool_test
  SOURCES ${_metrics_tests_dir}/metrics_promtool_test.cc
  DEPS skrull_metrics_testing
  LABELS integration
  TIMEOUT 120)

skrull_test(metrics_prometheus_test
  SOURCES ${_metrics_tests_dir}/metrics_prometheus_test.cc
  DEPS skrull_metrics_testing
  LABELS integration
  TIMEOUT 120)

# The dashboard against a real job: skrull-trainer --job launches a 2-rank
# DP1 x CP2 CPU job, promtool checks each rank's live /metrics, a real
# Prometheus scrapes both, and every panel query and recording rule must
# return data over the run. Runs the trainer binary, so only with the trainer.
if(SKRULL_BUILD_TRAINER)
  skrull_test(metrics_live_job_test
    SOURCES ${_metrics_tests_dir}/metrics_live_job_test.cc
    DEPS skrull_metrics_testing
    LABELS integration
    TIMEOUT 600)
  add_dependencies(metrics_live_job_test skrull-trainer skrull-make-data)
endif()
