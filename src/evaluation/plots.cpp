// SVG plots, written by hand: a fixed 640×480 canvas, a plot area with axes,
// ticks and labels, and one element per data series.
#include "mailsift/evaluation/plots.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace mailsift::evaluation {

namespace {

constexpr double width = 640, height = 480;
constexpr double left = 70, right = 20, top = 40, bottom = 60;
constexpr double plot_w = width - left - right, plot_h = height - top - bottom;

std::string fmt(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.2f", v);
    return buf;
}

std::string label(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", v);
    return buf;
}

class Svg {
public:
    explicit Svg(const std::string& title) {
        out_ = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
               "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"640\" height=\"480\" viewBox=\"0 0 640 480\" "
               "font-family=\"sans-serif\" font-size=\"12\">\n"
               "<rect width=\"640\" height=\"480\" fill=\"white\"/>\n"
               "<text x=\"320\" y=\"24\" text-anchor=\"middle\" font-size=\"15\">" + title + "</text>\n"
               "<rect x=\"" + fmt(left) + "\" y=\"" + fmt(top) + "\" width=\"" + fmt(plot_w) + "\" height=\"" +
               fmt(plot_h) + "\" fill=\"none\" stroke=\"black\"/>\n";
    }
    void text(double x, double y, const std::string& s, const char* anchor = "middle", const char* extra = "") {
        out_ += "<text x=\"" + fmt(x) + "\" y=\"" + fmt(y) + "\" text-anchor=\"" + anchor + "\"" + extra + ">" + s +
                "</text>\n";
    }
    void x_tick(double x, const std::string& s) {
        out_ += "<line x1=\"" + fmt(x) + "\" y1=\"" + fmt(top + plot_h) + "\" x2=\"" + fmt(x) + "\" y2=\"" +
                fmt(top + plot_h + 5) + "\" stroke=\"black\"/>\n";
        text(x, top + plot_h + 18, s);
    }
    void y_tick(double y, const std::string& s) {
        out_ += "<line x1=\"" + fmt(left - 5) + "\" y1=\"" + fmt(y) + "\" x2=\"" + fmt(left) + "\" y2=\"" + fmt(y) +
                "\" stroke=\"black\"/>\n";
        text(left - 8, y + 4, s, "end");
    }
    void axis_labels(const std::string& x, const std::string& y) {
        text(left + plot_w / 2, height - 15, x);
        text(18, top + plot_h / 2, y, "middle",
             (" transform=\"rotate(-90 18 " + fmt(top + plot_h / 2) + ")\"").c_str());
    }
    void raw(const std::string& s) { out_ += s; }
    std::string finish() { return out_ + "</svg>\n"; }

private:
    std::string out_;
};

double px(double fraction) { return left + fraction * plot_w; }
double py(double fraction) { return top + (1 - fraction) * plot_h; }

}  // namespace

std::string roc_svg(const Report& r) {
    // FPR on a log scale from 1e-4 to 1: the region that matters for mail.
    static constexpr double min_fpr = 1e-4;
    auto x_of = [](double fpr) {
        const double f = std::max(fpr, min_fpr);
        return px((std::log10(f) - std::log10(min_fpr)) / -std::log10(min_fpr));
    };
    char roca[32];
    std::snprintf(roca, sizeof roca, "%.4f", r.one_minus_roca_percent);
    Svg svg(std::string("ROC curve (1-ROCA% ") + roca + ")");
    for (double f : {1e-4, 1e-3, 1e-2, 1e-1, 1.0}) svg.x_tick(x_of(f), label(f * 100) + "%");
    for (double t : {0.0, 0.25, 0.5, 0.75, 1.0}) svg.y_tick(py(t), label(t * 100) + "%");
    svg.axis_labels("false positive rate (log scale)", "spam caught (true positive rate)");
    std::string points;
    for (const auto& p : r.roc) points += fmt(x_of(p.fpr)) + "," + fmt(py(p.tpr)) + " ";
    svg.raw("<polyline id=\"roc-curve\" fill=\"none\" stroke=\"#c0392b\" stroke-width=\"2\" points=\"" + points +
            "\"/>\n");
    return svg.finish();
}

std::string histogram_svg(const Report& r) {
    Svg svg("Log-odds by class");
    if (r.histogram.empty()) return svg.finish();
    std::size_t most = 1;
    for (const auto& b : r.histogram) most = std::max({most, b.spam, b.ham});
    const double lo = r.histogram.front().low, hi = r.histogram.back().high;
    const double bar_w = plot_w / static_cast<double>(r.histogram.size());
    for (int i = 0; i <= 4; ++i) svg.x_tick(px(i / 4.0), label(std::round(lo + (hi - lo) * i / 4.0)));
    for (int i = 0; i <= 4; ++i) svg.y_tick(py(i / 4.0), label(std::round(static_cast<double>(most) * i / 4.0)));
    svg.axis_labels("log-odds (higher is spammier)", "messages");
    // Each bin holds a ham bar (left half) and a spam bar (right half).
    std::string spam = "<g id=\"spam-bars\" fill=\"#c0392b\">\n", ham = "<g id=\"ham-bars\" fill=\"#2980b9\">\n";
    for (std::size_t i = 0; i < r.histogram.size(); ++i) {
        const auto& b = r.histogram[i];
        const double x = left + bar_w * static_cast<double>(i);
        auto bar = [&](std::size_t n, double offset) {
            const double h = plot_h * static_cast<double>(n) / static_cast<double>(most);
            return "<rect x=\"" + fmt(x + offset) + "\" y=\"" + fmt(top + plot_h - h) + "\" width=\"" +
                   fmt(bar_w / 2 - 1) + "\" height=\"" + fmt(h) + "\"><title>" + std::to_string(n) + "</title></rect>\n";
        };
        ham += bar(b.ham, 0);
        spam += bar(b.spam, bar_w / 2);
    }
    svg.raw(ham + "</g>\n" + spam + "</g>\n");
    svg.text(left + plot_w - 10, top + 18, "ham", "end", " fill=\"#2980b9\"");
    svg.text(left + plot_w - 10, top + 34, "spam", "end", " fill=\"#c0392b\"");
    return svg.finish();
}

std::string reliability_svg(const Report& r) {
    Svg svg("Reliability: predicted P(spam) vs observed spam");
    for (double t : {0.0, 0.25, 0.5, 0.75, 1.0}) {
        svg.x_tick(px(t), label(t));
        svg.y_tick(py(t), label(t));
    }
    svg.axis_labels("predicted P(spam)", "observed share of spam");
    svg.raw("<line id=\"diagonal\" x1=\"" + fmt(px(0)) + "\" y1=\"" + fmt(py(0)) + "\" x2=\"" + fmt(px(1)) + "\" y2=\"" +
            fmt(py(1)) + "\" stroke=\"#999\" stroke-dasharray=\"4 4\"/>\n");
    std::string points = "<g id=\"reliability-points\" fill=\"#8e44ad\">\n";
    for (const auto& b : r.reliability) {
        if (b.messages == 0) continue;
        // Area grows with the number of messages in the bin.
        const double radius = 3 + 2 * std::log10(1 + static_cast<double>(b.messages));
        points += "<circle cx=\"" + fmt(px(b.mean_predicted)) + "\" cy=\"" + fmt(py(b.observed_spam)) + "\" r=\"" +
                  fmt(radius) + "\"><title>" + std::to_string(b.messages) + " messages</title></circle>\n";
    }
    svg.raw(points + "</g>\n");
    return svg.finish();
}

}  // namespace mailsift::evaluation
