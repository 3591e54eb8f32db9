// The settings kept with the model (model_settings.hpp).
#include "mailsift/engine/model_settings.hpp"

#include <algorithm>

#include "setting_values.hpp"

namespace mailsift::engine {

using setting_values::trim;  // the configuration file's, for the same lines

namespace {

bool given_in_file(const Settings& s, std::string_view name) {
    return std::any_of(s.given.begin(), s.given.end(), [&](const auto& g) { return g.first == name; });
}

// Adopts `value` for `name`; a note when the file said otherwise.
void adopt(ModelSettings& out, const Settings& configured, std::string_view name, std::string_view value) {
    Settings trial = out.settings;
    try {
        set_setting(trial, name, value);
    } catch (const ConfigError&) {
        out.notes.push_back("the model's setting '" + std::string(name) + " = " + std::string(value) +
                            "' is not one this mailsift knows; it is left out");
        return;
    }
    const std::string wanted = setting_value(configured, name);
    const std::string kept = setting_value(trial, name);
    out.settings = std::move(trial);
    if (wanted != kept && given_in_file(configured, name)) {
        out.notes.push_back("the configuration sets " + std::string(name) + " = " + wanted +
                            ", but the model in this database was trained with " + kept +
                            "; using " + kept + " (settings kept with the model: mailsift.conf(5))");
    }
}

}  // namespace

bool is_model_setting(std::string_view name) {
    // What the store's counts and weights are made of (features.*: which
    // features are counted; linear_*: the slots, the learner and its regime,
    // the scale of the weights' probability), as settings.cpp declares them.
    // How the exact counts are read (alpha, the length normalisation, the
    // naive-Bayes calibration), which scorer decides and what is learned
    // (train_margin) change nothing stored.
    return setting_kind(name) == SettingKind::model;
}

std::vector<std::string> model_setting_names() {
    std::vector<std::string> out;
    for (auto& name : setting_names()) {
        if (is_model_setting(name)) out.push_back(std::move(name));
    }
    return out;
}

std::string model_settings_text(const Settings& settings) {
    std::string out;
    for (const auto& name : model_setting_names()) out += name + " = " + setting_value(settings, name) + "\n";
    return out;
}

ModelSettings with_model_settings(const Settings& configured, std::string_view recorded, unsigned weight_bits) {
    ModelSettings out;
    out.settings = configured;
    out.recorded = std::string(recorded);
    if (recorded.empty()) {
        // Trained before the settings were recorded: the weights' size is known.
        if (weight_bits != 0) adopt(out, configured, "linear_hash_bits", std::to_string(weight_bits));
        return out;
    }
    while (!recorded.empty()) {
        const std::size_t nl = recorded.find('\n');
        const std::string_view line = trim(recorded.substr(0, nl));
        recorded.remove_prefix(nl == std::string_view::npos ? recorded.size() : nl + 1);
        if (line.empty()) continue;
        const std::size_t eq = line.find('=');
        const std::string_view name = trim(line.substr(0, eq));
        if (eq == std::string_view::npos || !is_model_setting(name)) {
            out.notes.push_back("the model's setting '" + std::string(line) + "' is not one this mailsift knows; it is left out");
            continue;
        }
        adopt(out, configured, name, trim(line.substr(eq + 1)));
    }
    return out;
}

ModelSettings model_settings(store::ModelStore& db, const Settings& configured) {
    std::string recorded = db.model_settings();
    unsigned bits = 0;
    if (recorded.empty()) bits = db.linear_state().hash_bits;
    return with_model_settings(configured, recorded, bits);
}

}  // namespace mailsift::engine
