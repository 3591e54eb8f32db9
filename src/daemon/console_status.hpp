// The console's status figures (console/app.hpp Services::status) from the
// daemon's Metrics: the same reading /metrics renders, as JSON, with the
// messages per minute over the last hour and per ten minutes over the last day.
#pragma once

#include <nlohmann/json.hpp>

#include "metrics.hpp"

namespace mailsift::daemon {

nlohmann::json console_status(const Metrics& metrics);

}  // namespace mailsift::daemon
