// mailsift::engine — how a scan is recorded: its features as
// "feature<TAB>count" lines, and the view and user lines beside them.
// mailsiftd writes them as it scores; corrections by signature read them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "mailsift/features/extractor.hpp"

namespace mailsift::engine {

// "feature<TAB>count" lines: how a scan's features are recorded, and back.
std::string feature_lines(const features::FeatureBag& bag);
// The features of recorded lines; the view line (below) is not one of them.
std::vector<std::pair<std::string, std::uint32_t>> parse_feature_lines(std::string_view lines);
// A scan also records the message's view (features/view.hpp), the text the
// linear scorer's 4-grams were read from, as one more line: "!view:" and the
// view with '\\' as "\\\\", '\n' as "\\n", '\t' as "\\t" and every other
// control byte as "\\xHH", then "<TAB>1" (records before that escaped only
// the first three, and still read). No feature begins with
// '!' (every feature is namespaced), so no message can forge the line. With
// it, a correction by signature (console, daemon, `correct --signature`)
// steps exactly the slots a correction of the delivered copy steps: the ones
// the milter scored.
void append_view_line(std::string_view view, std::string& lines);
// The view recorded in `lines`; nullopt for a scan recorded without one
// (before schema 17's mailsift, or with the naive-Bayes scorer).
std::optional<std::string> recorded_view(std::string_view lines);

// A scan also records the user it was scored for (per_user, issue 44), when
// there was one, as one more line: "!user:" and the user, then "<TAB>1". A
// user is at most 255 bytes, none of them a control byte (valid_user()).
bool valid_user(std::string_view user);
void append_user_line(std::string_view user, std::string& lines);
// The user recorded in `lines`; nullopt for a scan scored for no user.
std::optional<std::string> recorded_user(std::string_view lines);

}  // namespace mailsift::engine
