// stats --user and forget-user: what a user's layer (per_user) holds, and
// taking it back.
#include <cstdio>
#include <ctime>
#include <iostream>
#include <memory>
#include <string>

#include "command.hpp"
#include "mailsift/engine/trainer.hpp"
#include "mailsift/engine/user_layers.hpp"

namespace mailsift::cli {
namespace {

const char* const forget_user_help = R"(usage: mailsift forget-user [--json] USER

Take back everything USER's layer learned (per_user, mailsift.conf(5)): the
step each of their corrections that stands took in it, for each sender. USER
is an address (per_user = recipient) or a domain (per_user = domain), as
'mailsift stats --user' names it. Their corrections stay in the history, and
what the site's model learned from them stays: an undo of one of them later
takes back the site's step alone. Prints how many corrections and senders
were forgotten; forgetting again finds nothing. Exit status 0, also when
there was nothing to forget.
)";

// The layer's key for USER as the command line gives it (engine::layer_key).
std::string layer_key(const Context& ctx, const std::string& command, const std::string& name) {
    if (auto key = engine::layer_key(ctx.settings.per_user, name)) return *key;
    usage_error(command + ": " + printable(name) + ": neither an address (user@domain) nor a domain");
}

std::string utc(std::int64_t at) {
    char when[32] = "";
    const auto t = static_cast<std::time_t>(at);
    std::tm tm{};
    gmtime_r(&t, &tm);
    std::strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return when;
}

Json senders_json(const engine::UserLayer& layer) {
    Json senders = Json::array();
    for (const auto& s : layer.senders) {
        senders.push_back({{"sender", s.address},
                           {"log_odds", json_number(s.log_odds)},
                           {"corrections", s.corrections},
                           {"last_at", s.last_at}});
    }
    return senders;
}

int forget_user(const Context& ctx, const std::string& name, bool json) {
    const std::string user = layer_key(ctx, "forget-user", name);
    require_database(ctx);
    const auto opened = store::open(ctx.db_path.string(), store::Database::Mode::read_write);
    engine::Trainer trainer(*opened, ctx.settings);
    const auto forgotten = trainer.forget_user(user);
    trainer.commit();
    const engine::UserLayer layer = engine::user_layer(forgotten);
    if (json) {
        std::cout << json_line({{"user", user},
                                {"corrections", forgotten.size()},
                                {"senders", senders_json(layer)}});
        return exit_ok;
    }
    std::printf("forgot %s's layer: %zu corrections (%zu to spam, %zu to ham), %zu senders\n", printable(user).c_str(),
                forgotten.size(), layer.to_spam, layer.to_ham, layer.senders.size());
    for (const auto& s : layer.senders) {
        std::printf("  %+8.2f log-odds taken back  %s\n", -s.log_odds, printable(s.address).c_str());
    }
    return exit_ok;
}

}  // namespace

int user_stats(const Context& ctx, const std::string& name, bool json) {
    const std::string user = layer_key(ctx, "stats", name);
    const auto opened = store::open(ctx.db_path.string(), store::Database::Mode::read_only);
    const auto corrections = opened->layer_corrections(user);
    const engine::UserLayer layer = engine::user_layer(corrections);
    const engine::UserErrors errors = engine::user_errors(*opened, user, corrections);
    if (json) {
        std::cout << json_line({{"user", user},
                                {"per_user", engine::setting_value(ctx.settings, "per_user")},
                                {"corrections", {{"to_spam", layer.to_spam}, {"to_ham", layer.to_ham}, {"undone", layer.undone}}},
                                {"history_lines", errors.messages},
                                {"errors", engine::user_errors_json<Json>(errors)},
                                {"senders", senders_json(layer)}});
        return exit_ok;
    }
    std::printf("user:              %s\n", printable(user).c_str());
    std::printf("per_user:          %s%s\n", engine::setting_value(ctx.settings, "per_user").c_str(),
                ctx.settings.per_user == engine::PerUser::off ? " (layers are neither used nor trained)" : "");
    std::printf("corrections:       %zu to spam, %zu to ham in the layer; %zu undone\n", layer.to_spam, layer.to_ham,
                layer.undone);
    if (errors.messages == 0) {
        std::printf("error rates:       none yet (no message to this user in the history kept)\n");
    } else {
        std::printf("error rates:       false positives %.3f%% (%zu), false negatives %.3f%% (%zu) of %llu messages "
                    "since %s; %zu unsure corrected\n",
                    errors.false_positive_percent(), errors.false_positives, errors.false_negative_percent(),
                    errors.false_negatives, static_cast<unsigned long long>(errors.messages), utc(errors.since).c_str(),
                    errors.unsure);
    }
    std::printf("\nsenders (what the layer adds to this user's score for their mail):\n");
    if (layer.senders.empty()) std::printf("  (none: the user is scored by the site's model)\n");
    for (const auto& s : layer.senders) {
        std::printf("  %+8.2f log-odds  %3zu corrections, last %s  %s\n", s.log_odds, s.corrections, utc(s.last_at).c_str(),
                    printable(s.address).c_str());
    }
    return exit_ok;
}

int users_stats(const Context& ctx, bool json) {
    require_database(ctx);
    const auto opened = store::open(ctx.db_path.string(), store::Database::Mode::read_only);
    const auto users = engine::layer_users(opened->layer_corrections(""));
    if (json) {
        Json list = Json::array();
        for (const auto& u : users) {
            list.push_back({{"user", u.user}, {"to_spam", u.to_spam}, {"to_ham", u.to_ham}, {"senders", u.senders},
                            {"last_at", u.last_at}});
        }
        std::cout << json_line({{"per_user", engine::setting_value(ctx.settings, "per_user")}, {"users", list}});
        return exit_ok;
    }
    std::printf("per-user layers (per_user = %s): %zu users, the most corrections first\n",
                engine::setting_value(ctx.settings, "per_user").c_str(), users.size());
    if (users.empty()) std::printf("  (none: no correction has stepped a layer)\n");
    else std::printf("  %8s %8s %8s  %-20s  %s\n", "to spam", "to ham", "senders", "latest", "user");
    for (const auto& u : users) {
        std::printf("  %8zu %8zu %8zu  %-20s  %s\n", u.to_spam, u.to_ham, u.senders, utc(u.last_at).c_str(),
                    printable(u.user).c_str());
    }
    return exit_ok;
}

void add_user_commands(Registry& r) {
    CLI::App* sub = r.add("forget-user", forget_user_help);
    auto json = std::make_shared<bool>(false);
    auto name = std::make_shared<std::string>();
    sub->add_flag("--json", *json);
    sub->add_option("USER", *name)->required();
    r.set_run(sub, [json, name](const Context& ctx) { return forget_user(ctx, *name, *json); });
}

}  // namespace mailsift::cli
