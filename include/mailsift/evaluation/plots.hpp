// mailsift::evaluation plots — hand-written SVG of an evaluation Report:
// the ROC curve (false-positive rate on a log scale), the log-odds histogram
// by class, and the reliability diagram. Pure: strings out, no I/O.
// Each data series is an element with an id (roc-curve, spam-bars, ham-bars,
// reliability-points, diagonal) so tests and stylesheets can find it.
#pragma once

#include <string>

#include "mailsift/evaluation/metrics.hpp"

namespace mailsift::evaluation {

std::string roc_svg(const Report& r);
std::string histogram_svg(const Report& r);
std::string reliability_svg(const Report& r);

}  // namespace mailsift::evaluation
