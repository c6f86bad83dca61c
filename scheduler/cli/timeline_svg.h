// A per-rank execution timeline of one plan, and its SVG drawing.
//
// Rows are the DP x CP ranks (grouped by DP rank), x is simulated time. Each
// row has a compute lane (one box per local sequence, one per distributed
// shard) and a thin communication lane below it (the K/V exchange of the
// distributed sequences, which overlaps local compute). Micro-batch
// boundaries are dashed lines across a DP group.
#ifndef SKRULL_SCHEDULER_CLI_TIMELINE_SVG_H_
#define SKRULL_SCHEDULER_CLI_TIMELINE_SVG_H_

#include <string>
#include <vector>

#include "scheduler/plan.h"

namespace skrull::scheduler::cli {

enum class SpanKind {
  kLocalCompute,        // a local sequence's compute on its CP rank
  kDistributedCompute,  // one shard of a distributed sequence
  kCommunication,       // the CP K/V exchange of a micro-batch (comm lane)
  kGradientSync,        // the end-of-step gradient all-reduce (whole row)
};

// One box on one rank's row. Times are seconds from the iteration start.
struct TimelineSpan {
  int dp_rank = 0;
  int cp_rank = 0;
  double start_seconds = 0.0;
  double end_seconds = 0.0;
  SpanKind kind = SpanKind::kLocalCompute;
  std::string label;   // drawn inside the box when it fits, e.g. "#12"
  std::string detail;  // hover tooltip, e.g. "seq 12, 30517 tokens, local"
};

// One micro-batch of one DP rank (all its CP ranks start it together).
struct TimelineMicroBatch {
  int dp_rank = 0;
  int index = 0;
  double start_seconds = 0.0;
  double end_seconds = 0.0;
};

struct Timeline {
  Topology topology;
  std::string title;     // first heading line
  std::string subtitle;  // second heading line (settings, totals)
  std::vector<TimelineSpan> spans;
  std::vector<TimelineMicroBatch> micro_batches;
  double end_seconds = 0.0;  // iteration end (the slowest DP rank)
};

struct SvgOptions {
  int width_px = 1280;
  // Larger worlds draw only the first max_dp_ranks DP groups and say so.
  int max_dp_ranks = 16;
};

// Renders `timeline` as a standalone SVG document (starts with "<svg").
// Deterministic: the same timeline gives the same bytes. Rows: one <g
// class="rank-row"> per drawn (dp, cp) rank.
std::string RenderTimelineSvg(const Timeline& timeline, const SvgOptions& options = {});

// Escapes &, <, >, " and ' for SVG text and attributes.
std::string XmlEscape(const std::string& text);

}  // namespace skrull::scheduler::cli

#endif  // SKRULL_SCHEDULER_CLI_TIMELINE_SVG_H_
