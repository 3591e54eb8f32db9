// The console's JSON of a score taken apart: a scan's explanation (computed
// now) and a history line's (as mailsiftd kept it when it scored the message),
// in one shape, so that the page shows both alike.
#pragma once

#include <nlohmann/json.hpp>

#include "mailsift/engine/explain.hpp"

namespace mailsift::console {

nlohmann::json explanation_json(const engine::Explanation& e);
nlohmann::json recorded_json(const engine::ScoreParts& p);

}  // namespace mailsift::console
