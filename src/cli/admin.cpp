// stats, top and prune: what the database holds, what the model learned most,
// and expiring what is no longer needed.
#include <grp.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "command.hpp"
#include "mailsift/engine/model_settings.hpp"

namespace mailsift::cli {
namespace {

const char* const stats_help = R"(usage: mailsift stats [--json] [--user USER | --users]

Show the database used, its size and schema version, messages and features
learned per class, and the number of contacts.

--user USER: what USER's layer holds instead (per_user, mailsift.conf(5)):
their corrections that stepped it (to spam, to ham, undone since), and for
each sender they corrected, the log-odds the layer adds to their score for
that sender's mail; and their error rates: those corrections of mail
mailsiftd called spam (false positives) or ham (false negatives), per message
delivered to them in the history kept. USER is an address, or a domain with
per_user = domain.

--users: every user with a layer, the most standing corrections first: their
corrections to spam and to ham, the senders they corrected, and the latest.
)";

const char* const top_help = R"(usage: mailsift top [--spam|--ham] [--min-count K] [N]

Print the N (default 20) features that point most strongly toward spam and
toward ham (only one direction with --spam or --ham), ranked by the model's
smoothed log-odds weight ln P(f|spam) - ln P(f|ham), among the features seen
at least K times in all (default 5) so that one-off tokens do not dominate.
Counts are in the columns the configured term_frequency uses: messages
containing the feature (boolean) or occurrences (raw). Each line gives RANK,
WEIGHT, SPAM count, HAM count and FEATURE.
)";

const char* const prune_help = R"(usage: mailsift prune [--signatures-older-than DAYS] [--features-unseen-days DAYS]

In one transaction, delete the signatures mailsiftd recorded more than DAYS
ago (default: signature_days of the configuration, 14), and the features
seen exactly once in all (one occurrence, in either class) that have not
been learned for DAYS (default 90). The class totals drop by what the removed
features held, so the model stays consistent; learned messages that named
them can still be unlearned exactly. Prints what was removed.
)";

// Latency percentile from mailsiftd's bucket counters ("latency_ms_le_N"): the
// upper bound of the bucket holding that share of messages; -1 when none, and
// infinity when it lies past the last bound.
double latency_percentile(const std::vector<std::pair<std::string, std::int64_t>>& counters, double share) {
    std::vector<std::pair<double, std::int64_t>> buckets;
    std::int64_t total = 0;
    for (const auto& [name, n] : counters) {
        if (name.rfind("latency_ms_le_", 0) == 0) buckets.emplace_back(std::stod(name.substr(14)), n);
        else if (name == "latency_ms_gt_250") buckets.emplace_back(HUGE_VAL, n);
        else continue;
        total += n;
    }
    if (total == 0) return -1;
    std::sort(buckets.begin(), buckets.end());
    std::int64_t seen = 0;
    for (const auto& [bound, n] : buckets) {
        seen += n;
        if (static_cast<double>(seen) >= share * static_cast<double>(total)) return bound;
    }
    return HUGE_VAL;
}

// Why `user` ("" = whoever runs this) could not write the database, or "" when it can:
// mailsiftd records its signatures and counters there. Judged from the file
// modes, the way the kernel would (root may write anything).
std::string write_problem(const std::filesystem::path& db, const std::string& user) {
    uid_t uid = ::geteuid();
    std::vector<gid_t> groups;
    if (user.empty()) {
        groups.resize(static_cast<std::size_t>(std::max(0, ::getgroups(0, nullptr))) + 1);
        groups.resize(static_cast<std::size_t>(std::max(0, ::getgroups(static_cast<int>(groups.size()), groups.data()))));
        groups.push_back(::getegid());
    } else {
        const struct passwd* pw = ::getpwnam(user.c_str());
        if (pw == nullptr) return "user " + user + " does not exist";
        uid = pw->pw_uid;
        int n = 64;
        groups.resize(static_cast<std::size_t>(n));
        if (::getgrouplist(user.c_str(), pw->pw_gid, groups.data(), &n) < 0) {
            groups.resize(static_cast<std::size_t>(n));
            ::getgrouplist(user.c_str(), pw->pw_gid, groups.data(), &n);
        }
        groups.resize(static_cast<std::size_t>(std::max(n, 0)));
    }
    if (uid == 0) return {};
    auto writable = [&](const std::string& p, bool& exists) {
        struct stat st{};
        exists = ::stat(p.c_str(), &st) == 0;
        if (!exists) return false;
        if (st.st_uid == uid) return (st.st_mode & S_IWUSR) != 0;
        if (std::find(groups.begin(), groups.end(), st.st_gid) != groups.end()) return (st.st_mode & S_IWGRP) != 0;
        return (st.st_mode & S_IWOTH) != 0;
    };
    auto mode_of = [](const std::string& p) {
        struct stat st{};
        if (::stat(p.c_str(), &st) != 0) return std::string();
        char buf[64];
        const struct passwd* owner = ::getpwuid(st.st_uid);
        std::snprintf(buf, sizeof buf, "mode %04o, owner ", static_cast<unsigned>(st.st_mode & 07777));
        return std::string(buf) + (owner ? owner->pw_name : std::to_string(st.st_uid));
    };
    bool exists = false;
    const std::string file = db.string();
    if (!writable(file, exists)) return "cannot write " + file + " (" + mode_of(file) + ")";
    // SQLite also writes FILE-wal and FILE-shm beside it, creating them when missing.
    const std::string dir = db.has_parent_path() ? db.parent_path().string() : std::string(".");
    bool dir_exists = false;
    if (writable(dir, dir_exists)) return {};
    for (const char* suffix : {"-wal", "-shm"}) {
        const std::string p = file + suffix;
        if (!writable(p, exists)) {
            return "cannot create or write " + p + " (the directory " + dir + " has " + mode_of(dir) + ")";
        }
    }
    return {};
}

int stats(const Context& ctx, bool json) {
    const auto opened = store::open(ctx.db_path.string(), store::Database::Mode::read_only);
    store::Database& db = *opened;
    const auto st = db.statistics();
    const bool postgresql = store::is_postgresql(ctx.db_path.string());
    const std::string path = postgresql ? store::display_location(ctx.db_path.string())
                                        : std::filesystem::absolute(ctx.db_path).string();
    const std::int64_t now = std::time(nullptr);
    const struct {
        const char* name;
        store::CorrectionCounts counts;
    } periods[] = {{"day", db.corrections_since(now - 86400)},
                   {"week", db.corrections_since(now - 7 * 86400)},
                   {"all", db.corrections_since(0)}};
    // Per-user layers (per_user), only where they are in use.
    std::optional<store::ScanLog::LayerCensus> layers;
    if (ctx.settings.per_user != engine::PerUser::off) layers = db.layer_census();
    const auto counters = db.counters();
    // The linear scorer's state, and the number of the model's last change.
    const auto linear = db.linear_state();
    const std::uint64_t learned = linear.seen_spam + linear.seen_ham;
    const std::uint64_t version = linear.samples_version();
    const std::uint64_t since_refit = version > linear.refit_mark ? version - linear.refit_mark : 0;
    // The settings kept with the model, and where the configuration says otherwise.
    const auto kept = engine::model_settings(db, ctx.settings);
    std::vector<std::pair<std::string, std::string>> model_settings;
    if (!kept.recorded.empty()) {
        for (const auto& name : engine::model_setting_names()) {
            model_settings.emplace_back(name, engine::setting_value(kept.settings, name));
        }
    }
    auto u = [](std::uint64_t v) { return static_cast<unsigned long long>(v); };
    // mailsiftd writes its signatures and counters here: say when it cannot (they wait in its memory).
    std::vector<std::string> warnings;
    {
        // Only when the configuration names mailsiftd's user: otherwise whoever runs this is no guide.
        const std::string& user = ctx.settings.daemon.user;
        const std::string problem =
            user.empty() || postgresql ? std::string() : write_problem(ctx.db_path, user);
        if (!problem.empty()) {
            warnings.push_back("mailsiftd's user " + user + " " + problem +
                               ": mailsiftd keeps its signatures and counters in memory until it can write them");
        }
    }
    warnings.insert(warnings.end(), kept.notes.begin(), kept.notes.end());
    if (json) {
        Json corrections = Json::object();
        for (const auto& p : periods) {
            const auto& c = p.counts;
            corrections[p.name] = {{"false_positives", c.false_positives},
                                   {"false_negatives", c.false_negatives},
                                   {"unsure_to_spam", c.unsure_to_spam},
                                   {"unsure_to_ham", c.unsure_to_ham}};
        }
        Json daemon = Json::object();
        for (const auto& [name, value] : counters) daemon[name] = value;
        Json settings_json = Json::object();
        for (const auto& [name, value] : model_settings) settings_json[name] = value;
        Json latency = Json::object();
        for (const double share : {0.5, 0.9, 0.99}) {
            const double v = latency_percentile(counters, share);
            latency["p" + std::to_string(static_cast<int>(share * 100))] = v < 0 ? Json(nullptr) : json_number(v);
        }
        const Json out = {
            {"database", path},
            {"database_from", ctx.db_source},
            {"file_bytes", st.file_bytes},
            {"schema_version", st.schema_version},
            {"messages", {{"spam", st.messages.spam}, {"ham", st.messages.ham}}},
            {"feature_occurrences", {{"spam", st.occurrences.spam}, {"ham", st.occurrences.ham}}},
            {"distinct_features", st.distinct_features},
            {"contacts", st.contacts},
            {"signatures", st.signatures},
            {"model_change", linear.sequence},
            {"linear", {{"learned", learned}, {"changes_since_refit", since_refit}}},
            {"model_settings", settings_json},
            {"corrections", std::move(corrections)},
            {"per_user_layers", layers ? Json{{"users", layers->users}, {"corrections", layers->corrections}} : Json(nullptr)},
            {"daemon", std::move(daemon)},
            {"latency_ms_at_most", std::move(latency)},
            {"warnings", warnings},
        };
        std::cout << json_line(out);
        return exit_ok;
    }
    std::printf("database:          %s (from %s)\n", path.c_str(), ctx.db_source.c_str());
    std::printf(postgresql ? "database size:     %llu bytes\n" : "file size:         %llu bytes\n", u(st.file_bytes));
    std::printf("schema version:    %d\n", st.schema_version);
    std::printf("messages learned:  %llu spam, %llu ham\n", u(st.messages.spam), u(st.messages.ham));
    std::printf("features learned:  %llu spam, %llu ham (occurrences)\n", u(st.occurrences.spam), u(st.occurrences.ham));
    std::printf("distinct features: %llu\n", u(st.distinct_features));
    std::printf("contacts:          %llu\n", u(st.contacts));
    std::printf("signatures kept:   %llu\n", u(st.signatures));
    if (linear.hash_bits != 0) {
        std::printf("linear scorer:     %llu messages learned; %llu learned or undone since its last refit%s\n", u(learned),
                    u(since_refit),
                    since_refit > 0 ? " (mailsiftd refits when it sees them)" : "");
    }
    for (const auto& w : warnings) std::printf("warning:           %s\n", w.c_str());
    std::printf("\nsettings kept with the model (mailsift.conf(5)):\n");
    if (model_settings.empty()) std::printf("  (none yet: the first training records them)\n");
    for (const auto& [name, value] : model_settings) std::printf("  %s = %s\n", name.c_str(), value.c_str());
    std::printf("\ncorrections of mailsiftd's verdicts:\n  %-6s %16s %16s %14s %14s\n", "", "false positives",
                "false negatives", "unsure->spam", "unsure->ham");
    for (const auto& p : periods) {
        std::printf("  %-6s %16llu %16llu %14llu %14llu\n", p.name, u(p.counts.false_positives),
                    u(p.counts.false_negatives), u(p.counts.unsure_to_spam), u(p.counts.unsure_to_ham));
    }
    if (layers) {
        std::printf("\nper-user layers (per_user = %s): %llu users, %llu standing corrections ('stats --users', 'stats --user USER')\n",
                    engine::setting_value(ctx.settings, "per_user").c_str(), u(layers->users), u(layers->corrections));
    }
    std::int64_t scored = 0;
    for (const auto& [name, value] : counters) {
        if (name == "messages") scored = value;
    }
    std::printf("\nmailsiftd counters (all time):\n");
    if (counters.empty()) std::printf("  (none yet)\n");
    for (const auto& [name, value] : counters) std::printf("  %-22s %lld\n", name.c_str(), static_cast<long long>(value));
    if (const double p50 = latency_percentile(counters, 0.5); p50 >= 0) {
        std::printf("  latency (bucket bounds): p50 <= %s ms, p90 <= %s ms, p99 <= %s ms\n", number(p50).c_str(),
                    number(latency_percentile(counters, 0.9)).c_str(), number(latency_percentile(counters, 0.99)).c_str());
    }
    if (scored > 0) {
        // Error rates among scored messages, as corrections revealed them.
        const auto& all = periods[2].counts;
        std::printf("\nobserved error rates (all time): false positives %.3f%%, false negatives %.3f%% of %lld scored\n",
                    100.0 * static_cast<double>(all.false_positives) / static_cast<double>(scored),
                    100.0 * static_cast<double>(all.false_negatives) / static_cast<double>(scored),
                    static_cast<long long>(scored));
    }
    return exit_ok;
}

constexpr std::uint64_t top_default = 20, top_min_count = 5;

struct TopOptions {
    bool spam = false, ham = false;
    std::string min_count_text;
    CLI::Option* min_count_given = nullptr;
    std::vector<std::string> limit;  // N, at most once
};

int top(const Context& ctx, const TopOptions& o) {
    bool spam = o.spam, ham = o.ham;
    std::optional<std::uint64_t> limit;
    std::uint64_t min_count = top_min_count;
    if (o.min_count_given->count() > 0) {
        min_count = whole_number("top", "--min-count", o.min_count_text, 1, 1000000000);
    }
    if (o.limit.size() > 1) usage_error("top: give N once");
    if (!o.limit.empty()) limit = whole_number("top", "N", o.limit[0], 1, 1000000);
    if (!spam && !ham) spam = ham = true;
    const auto opened = store::open(ctx.db_path.string(), store::Database::Mode::read_only);
    store::Database& db = *opened;
    const engine::Settings settings = engine::model_settings(db, ctx.settings).settings;
    const model::Counts counts = db.load_counts(settings.model.term_frequency);
    // The weights are the model's own, computed as scoring computes them.
    const model::Snapshot snap(counts, settings.model);
    struct Row {
        double weight;
        model::FeatureId id;
        model::ClassCounts counts;
    };
    std::vector<Row> toward_spam, toward_ham;
    for (const auto& [id, c] : counts.features) {
        if (c.spam + c.ham < min_count) continue;
        const auto w = snap.weight(id);
        if (!w) continue;
        if (*w > 0) toward_spam.push_back({*w, id, c});
        if (*w < 0) toward_ham.push_back({*w, id, c});
    }
    const std::size_t n = static_cast<std::size_t>(limit.value_or(top_default));
    // Strongest first; ties go to the feature seen more often, then to the lower id.
    auto rank = [n](std::vector<Row>& rows) {
        auto stronger = [](const Row& a, const Row& b) {
            if (std::fabs(a.weight) != std::fabs(b.weight)) return std::fabs(a.weight) > std::fabs(b.weight);
            if (a.counts.spam + a.counts.ham != b.counts.spam + b.counts.ham) {
                return a.counts.spam + a.counts.ham > b.counts.spam + b.counts.ham;
            }
            return a.id < b.id;
        };
        const std::size_t keep = std::min(n, rows.size());
        std::partial_sort(rows.begin(), rows.begin() + static_cast<std::ptrdiff_t>(keep), rows.end(), stronger);
        rows.resize(keep);
    };
    const bool boolean = settings.model.term_frequency == model::TermFrequency::boolean;
    std::printf("model: %llu spam and %llu ham messages learned, %zu features (term_frequency = %s)\n"
                "ranked by weight among the %zu features seen at least %llu times; counts are %s\n",
                static_cast<unsigned long long>(counts.messages.spam), static_cast<unsigned long long>(counts.messages.ham),
                counts.features.size(), boolean ? "boolean" : "raw", toward_spam.size() + toward_ham.size(),
                static_cast<unsigned long long>(min_count), boolean ? "messages containing the feature" : "occurrences");
    auto table = [&](const char* title, std::vector<Row>& rows) {
        rank(rows);
        std::printf("\n%s\n  %4s  %10s  %8s  %8s  %s\n", title, "rank", "weight", "spam", "ham", "feature");
        std::size_t r = 0;
        for (const auto& row : rows) {
            std::printf("  %4zu  %+10.4f  %8llu  %8llu  %s\n", ++r, row.weight,
                        static_cast<unsigned long long>(row.counts.spam), static_cast<unsigned long long>(row.counts.ham),
                        db.feature_text(row.id).c_str());
        }
        if (rows.empty()) std::printf("  (none)\n");
    };
    if (spam) table("toward spam:", toward_spam);
    if (ham) table("toward ham:", toward_ham);
    return exit_ok;
}

constexpr std::int64_t prune_feature_days = 90, max_days = 1000000;

struct PruneOptions {
    std::string signature_days, feature_days;
    CLI::Option *signature_days_given = nullptr, *feature_days_given = nullptr;
};

int prune(const Context& ctx, const PruneOptions& o) {
    std::int64_t signature_days = static_cast<std::int64_t>(ctx.settings.daemon.signature_keep.count() / 86400);
    std::int64_t feature_days = prune_feature_days;
    if (o.signature_days_given->count() > 0) {
        signature_days = static_cast<std::int64_t>(
            whole_number("prune", "--signatures-older-than", o.signature_days, 0, max_days));
    }
    if (o.feature_days_given->count() > 0) {
        feature_days = static_cast<std::int64_t>(
            whole_number("prune", "--features-unseen-days", o.feature_days, 0, max_days));
    }
    require_database(ctx);
    const auto opened = store::open(ctx.db_path.string(), store::Database::Mode::read_write);
    store::Database& db = *opened;
    const std::int64_t now = std::time(nullptr);
    const auto r = db.prune(now - signature_days * 86400, now - feature_days * 86400);
    auto u = [](std::uint64_t v) { return static_cast<unsigned long long>(v); };
    std::printf("removed %llu signatures older than %lld days\n", u(r.signatures), static_cast<long long>(signature_days));
    std::printf("removed %llu features seen once and not in the last %lld days (%llu spam, %llu ham occurrences)\n",
                u(r.features), static_cast<long long>(feature_days), u(r.occurrences.spam), u(r.occurrences.ham));
    return exit_ok;
}

}  // namespace

void add_admin_commands(Registry& r) {
    {
        CLI::App* sub = r.add("stats", stats_help);
        auto json = std::make_shared<bool>(false);
        auto user = std::make_shared<std::string>();
        auto users = std::make_shared<bool>(false);
        sub->add_flag("--json", *json);
        CLI::Option* user_given = sub->add_option("--user", *user);
        CLI::Option* users_given = sub->add_flag("--users", *users);
        r.set_run(sub, [json, user, users, user_given, users_given](const Context& ctx) {  // each kept alive for the parse
            if (user_given->count() > 0 && users_given->count() > 0) usage_error("stats: give --user USER or --users, not both");
            if (users_given->count() > 0) return users_stats(ctx, *json);
            return user_given->count() > 0 ? user_stats(ctx, *user, *json) : stats(ctx, *json);
        });
    }
    {
        CLI::App* sub = r.add("top", top_help);
        auto o = std::make_shared<TopOptions>();
        sub->add_flag("--spam", o->spam);
        sub->add_flag("--ham", o->ham);
        o->min_count_given = sub->add_option("--min-count", o->min_count_text);
        sub->add_option("N", o->limit);
        r.set_run(sub, [o](const Context& ctx) { return top(ctx, *o); });
    }
    CLI::App* sub = r.add("prune", prune_help);
    auto o = std::make_shared<PruneOptions>();
    o->signature_days_given = sub->add_option("--signatures-older-than", o->signature_days);
    o->feature_days_given = sub->add_option("--features-unseen-days", o->feature_days);
    r.set_run(sub, [o](const Context& ctx) { return prune(ctx, *o); });
}

}  // namespace mailsift::cli
