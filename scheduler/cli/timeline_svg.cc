#include "scheduler/cli/timeline_svg.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>

namespace skrull::scheduler::cli {
namespace {

// Colour-blind-safe palette (Tableau 10).
constexpr char kLocalColour[] = "#4C78A8";
constexpr char kDistributedColour[] = "#F58518";
constexpr char kCommColour[] = "#54A24B";
constexpr char kGradientColour[] = "#C9E4C0";

constexpr int kMarginLeft = 124;
constexpr int kMarginRight = 28;
constexpr int kHeaderHeight = 108;  // title, two subtitle lines, legend
constexpr int kGroupHeaderHeight = 18;
constexpr int kRowHeight = 18;
constexpr int kComputeLaneTop = 1;
constexpr int kComputeLaneHeight = 11;
constexpr int kCommLaneTop = 13;
constexpr int kCommLaneHeight = 4;
constexpr int kGroupGap = 10;
constexpr int kAxisHeight = 46;

std::string Fmt(double value, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.*f", decimals, value);
  return buf;
}

std::string Ms(double seconds) {
  double ms = seconds * 1e3;
  if (ms >= 100) return Fmt(ms, 0);
  if (ms >= 10) return Fmt(ms, 1);
  if (ms >= 1) return Fmt(ms, 2);
  return Fmt(ms, 3);
}

// A "nice" tick step (1, 2 or 5 x 10^k) giving about `target` ticks.
double NiceStep(double span, int target) {
  if (span <= 0) return 1;
  double raw = span / target;
  double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    if (m * magnitude >= raw) return m * magnitude;
  }
  return 10 * magnitude;
}

const char* Colour(SpanKind kind) {
  switch (kind) {
    case SpanKind::kLocalCompute:
      return kLocalColour;
    case SpanKind::kDistributedCompute:
      return kDistributedColour;
    case SpanKind::kCommunication:
      return kCommColour;
    case SpanKind::kGradientSync:
      return kGradientColour;
  }
  return "#000000";
}

}  // namespace

std::string XmlEscape(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&apos;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string RenderTimelineSvg(const Timeline& timeline, const SvgOptions& options) {
  const int dp = std::max(1, timeline.topology.dp);
  const int cp = std::max(1, timeline.topology.cp);
  const int shown_dp = std::min(dp, std::max(1, options.max_dp_ranks));
  const int width = std::max(480, options.width_px);
  const double plot_width = width - kMarginLeft - kMarginRight;
  const int group_height = kGroupHeaderHeight + cp * kRowHeight;
  const int plot_top = kHeaderHeight;
  const int plot_height = shown_dp * group_height + (shown_dp - 1) * kGroupGap;
  const int height = plot_top + plot_height + kAxisHeight + (shown_dp < dp ? 16 : 0);

  double end = timeline.end_seconds;
  for (const TimelineSpan& s : timeline.spans) end = std::max(end, s.end_seconds);
  if (end <= 0) end = 1e-3;
  const double step = NiceStep(end * 1e3, 10) / 1e3;  // seconds
  const double axis_end = end * 1.015;                // a little room after the iteration end
  auto x_of = [&](double seconds) { return kMarginLeft + seconds / axis_end * plot_width; };
  auto group_top = [&](int dp_rank) { return plot_top + dp_rank * (group_height + kGroupGap); };
  auto row_top = [&](int dp_rank, int cp_rank) {
    return group_top(dp_rank) + kGroupHeaderHeight + cp_rank * kRowHeight;
  };

  std::ostringstream svg;
  svg << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << width << "\" height=\"" << height
      << "\" viewBox=\"0 0 " << width << " " << height
      << "\" font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\">\n";
  svg << "<rect x=\"0\" y=\"0\" width=\"" << width << "\" height=\"" << height
      << "\" fill=\"#ffffff\"/>\n";

  // Heading and legend.
  svg << "<text x=\"12\" y=\"24\" font-size=\"16\" font-weight=\"bold\" fill=\"#222\">"
      << XmlEscape(timeline.title) << "</text>\n";
  {
    // The subtitle may hold several lines separated by '\n'.
    int y = 44;
    size_t start = 0;
    while (start <= timeline.subtitle.size()) {
      size_t end = timeline.subtitle.find('\n', start);
      if (end == std::string::npos) end = timeline.subtitle.size();
      svg << "<text x=\"12\" y=\"" << y << "\" font-size=\"12\" fill=\"#444\">"
          << XmlEscape(timeline.subtitle.substr(start, end - start)) << "</text>\n";
      y += 16;
      start = end + 1;
    }
  }
  {
    int x = 12;
    const int y = 80;
    auto legend = [&](const char* colour, int box_height, const std::string& text) {
      svg << "<rect x=\"" << x << "\" y=\"" << y + (12 - box_height) / 2
          << "\" width=\"18\" height=\"" << box_height << "\" fill=\"" << colour << "\"/>";
      svg << "<text x=\"" << x + 24 << "\" y=\"" << y + 10 << "\" font-size=\"12\" fill=\"#222\">"
          << XmlEscape(text) << "</text>\n";
      x += 24 + static_cast<int>(text.size() * 6.6) + 20;
    };
    legend(kLocalColour, 11, "local sequence (whole, on one CP rank)");
    legend(kDistributedColour, 11, "distributed sequence (one shard per CP rank)");
    legend(kCommColour, 4, "CP K/V communication");
    legend(kGradientColour, 11, "gradient all-reduce");
    svg << "<line x1=\"" << x << "\" y1=\"" << y << "\" x2=\"" << x << "\" y2=\"" << y + 12
        << "\" stroke=\"#555\" stroke-dasharray=\"3,2\"/>";
    svg << "<text x=\"" << x + 6 << "\" y=\"" << y + 10
        << "\" font-size=\"12\" fill=\"#222\">micro-batch boundary</text>\n";
  }

  // Gridlines behind everything.
  svg << "<g class=\"grid\" stroke=\"#e3e3e3\" stroke-width=\"1\">\n";
  for (double t = 0; t <= axis_end + 1e-12; t += step) {
    svg << "<line x1=\"" << Fmt(x_of(t), 1) << "\" y1=\"" << plot_top << "\" x2=\""
        << Fmt(x_of(t), 1) << "\" y2=\"" << plot_top + plot_height << "\"/>\n";
  }
  svg << "</g>\n";

  // Micro-batch bands (alternating shade) and per-group headers.
  std::map<int, std::vector<const TimelineMicroBatch*>> mbs_by_rank;
  for (const TimelineMicroBatch& mb : timeline.micro_batches) {
    if (mb.dp_rank < shown_dp) mbs_by_rank[mb.dp_rank].push_back(&mb);
  }
  for (int d = 0; d < shown_dp; ++d) {
    const int top = group_top(d);
    double rank_end = 0;
    for (const TimelineMicroBatch* mb : mbs_by_rank[d])
      rank_end = std::max(rank_end, mb->end_seconds);
    svg << "<text x=\"12\" y=\"" << top + 13 << "\" font-size=\"12\" fill=\"#222\">"
        << "<tspan font-weight=\"bold\">DP " << d << "</tspan> \xC2\xB7 " << Ms(rank_end)
        << " ms</text>\n";
    for (const TimelineMicroBatch* mb : mbs_by_rank[d]) {
      const double x0 = x_of(mb->start_seconds);
      const double x1 = x_of(mb->end_seconds);
      const int rows_top = top + kGroupHeaderHeight;
      svg << "<rect x=\"" << Fmt(x0, 1) << "\" y=\"" << rows_top << "\" width=\""
          << Fmt(std::max(0.0, x1 - x0), 1) << "\" height=\"" << cp * kRowHeight << "\" fill=\""
          << (mb->index % 2 == 0 ? "#eef2f7" : "#f9f9f9") << "\"/>\n";
      if (x1 - x0 > 34) {
        svg << "<text x=\"" << Fmt(x0 + 3, 1) << "\" y=\"" << top + 13
            << "\" font-size=\"10\" fill=\"#555\">mb " << mb->index;
        if (x1 - x0 > 90) svg << " \xC2\xB7 " << Ms(mb->end_seconds - mb->start_seconds) << " ms";
        svg << "</text>\n";
      }
    }
    for (const TimelineMicroBatch* mb : mbs_by_rank[d]) {
      if (mb->index == 0) continue;
      const double x = x_of(mb->start_seconds);
      svg << "<line x1=\"" << Fmt(x, 1) << "\" y1=\"" << top + 3 << "\" x2=\"" << Fmt(x, 1)
          << "\" y2=\"" << top + kGroupHeaderHeight + cp * kRowHeight
          << "\" stroke=\"#555\" stroke-width=\"1\" stroke-dasharray=\"3,2\"/>\n";
    }
  }

  // Rank rows.
  std::vector<std::vector<std::vector<const TimelineSpan*>>> spans_by_row(
      shown_dp, std::vector<std::vector<const TimelineSpan*>>(cp));
  for (const TimelineSpan& s : timeline.spans) {
    if (s.dp_rank < 0 || s.dp_rank >= shown_dp || s.cp_rank < 0 || s.cp_rank >= cp) continue;
    spans_by_row[s.dp_rank][s.cp_rank].push_back(&s);
  }
  for (int d = 0; d < shown_dp; ++d) {
    for (int c = 0; c < cp; ++c) {
      const int top = row_top(d, c);
      svg << "<g class=\"rank-row\" data-dp=\"" << d << "\" data-cp=\"" << c << "\">\n";
      svg << "<text x=\"" << kMarginLeft - 6 << "\" y=\"" << top + 12
          << "\" font-size=\"10\" text-anchor=\"end\" fill=\"#333\">dp" << d << " cp" << c
          << "</text>\n";
      for (const TimelineSpan* s : spans_by_row[d][c]) {
        const double x0 = x_of(s->start_seconds);
        const double w = std::max(0.6, x_of(s->end_seconds) - x0);
        const bool comm = s->kind == SpanKind::kCommunication;
        const bool whole_row = s->kind == SpanKind::kGradientSync;
        const int y = top + (comm ? kCommLaneTop : kComputeLaneTop);
        const int h = comm ? kCommLaneHeight
                           : (whole_row ? kCommLaneTop + kCommLaneHeight - kComputeLaneTop
                                        : kComputeLaneHeight);
        svg << "<rect x=\"" << Fmt(x0, 2) << "\" y=\"" << y << "\" width=\"" << Fmt(w, 2)
            << "\" height=\"" << h << "\" fill=\"" << Colour(s->kind) << "\""
            << (comm || whole_row || w < 3 ? "" : " stroke=\"#ffffff\" stroke-width=\"0.5\"")
            << ">";
        if (!s->detail.empty()) svg << "<title>" << XmlEscape(s->detail) << "</title>";
        svg << "</rect>\n";
        // About 5.5 px per character at font-size 9.
        if (!comm && !s->label.empty() && w > 5.5 * s->label.size() + 4) {
          svg << "<text x=\"" << Fmt(x0 + w / 2, 2) << "\" y=\"" << y + 9
              << "\" font-size=\"9\" text-anchor=\"middle\" fill=\""
              << (whole_row ? "#2d5a27" : "#ffffff") << "\">" << XmlEscape(s->label) << "</text>\n";
        }
      }
      svg << "</g>\n";
    }
  }

  // Iteration end marker.
  svg << "<line x1=\"" << Fmt(x_of(end), 1) << "\" y1=\"" << plot_top - 4 << "\" x2=\""
      << Fmt(x_of(end), 1) << "\" y2=\"" << plot_top + plot_height
      << "\" stroke=\"#C0392B\" stroke-width=\"1.5\"/>\n";

  // Time axis in milliseconds.
  const int axis_y = plot_top + plot_height + 6;
  svg << "<g class=\"axis\" font-size=\"11\" fill=\"#333\">\n";
  svg << "<line x1=\"" << kMarginLeft << "\" y1=\"" << axis_y << "\" x2=\"" << width - kMarginRight
      << "\" y2=\"" << axis_y << "\" stroke=\"#333\"/>\n";
  const int step_decimals = step * 1e3 >= 1 ? 0 : (step * 1e3 >= 0.1 ? 1 : 2);
  for (double t = 0; t <= axis_end + 1e-12; t += step) {
    const double x = x_of(t);
    svg << "<line x1=\"" << Fmt(x, 1) << "\" y1=\"" << axis_y << "\" x2=\"" << Fmt(x, 1)
        << "\" y2=\"" << axis_y + 5 << "\" stroke=\"#333\"/>";
    svg << "<text x=\"" << Fmt(x, 1) << "\" y=\"" << axis_y + 18 << "\" text-anchor=\"middle\">"
        << Fmt(t * 1e3, step_decimals) << "</text>\n";
  }
  svg << "<text x=\"" << kMarginLeft + plot_width / 2 << "\" y=\"" << axis_y + 36
      << "\" text-anchor=\"middle\">simulated time (ms); red line = iteration end (" << Ms(end)
      << " ms)</text>\n";
  svg << "</g>\n";
  if (shown_dp < dp) {
    svg << "<text x=\"12\" y=\"" << height - 6 << "\" font-size=\"11\" fill=\"#a00\">showing DP "
        << "ranks 0-" << shown_dp - 1 << " of " << dp << "</text>\n";
  }
  svg << "</svg>\n";
  return svg.str();
}

}  // namespace skrull::scheduler::cli
