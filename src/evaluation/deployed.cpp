// The loop users run, measured (issue 42): a model learned once from folders,
// class by class as the README teaches; then mailsiftd scores the mail as it
// comes, and users move what they see wrong: spam left in the inbox (scored
// ham or unsure) to Junk, which corrects it to spam, and ham found in Junk
// back out, which corrects it to ham. Nobody labels what was right, and unsure
// ham stays in the inbox untouched.
//
// The same code as deployed: the daemon's Filter (refreshed from the store as
// the daemon's refresh thread does, here before each batch) scores each
// message and its scan is recorded as the recorder records it; a move is
// `mailsift correct` of the delivered copy (X-Mailsift-Status and
// X-Mailsift-Signature on top), one Trainer and one commit each, as the
// IMAPSieve recipe runs one process a move; after each move, the linear scorer
// is refitted as mailsiftd refits it once it sees it. Beside it, the
// model as first learned scores the same messages, never corrected: what the
// corrections changed, for better or worse.
#include <algorithm>
#include <cctype>
#include <optional>

#include "mailsift/engine/user_layers.hpp"
#include "mailsift/engine/filter.hpp"
#include "mailsift/engine/signature.hpp"
#include "mailsift/engine/message_checks.hpp"
#include "mailsift/engine/trainer.hpp"
#include "runner_internal.hpp"

namespace mailsift::evaluation::detail {

namespace {

// The copy a user moves: the message as it came, mailsiftd's fields added at
// the end of its header block, as the MTA adds a milter's header fields (a
// corpus file's mbox "From " line stays first, as a mailbox would keep it).
std::string delivered_copy(const std::string& raw, const store::Digest& id, model::Verdict verdict) {
    // Where the header block ends: after its last line, before the empty one.
    std::size_t at = raw.size();
    std::string eol = "\n";
    if (const std::size_t lf = raw.find("\n\n"); lf != std::string::npos) at = lf + 1;
    if (const std::size_t crlf = raw.find("\r\n\r\n"); crlf != std::string::npos && crlf + 2 < at) {
        at = crlf + 2;
        eol = "\r\n";
    }
    std::string fields = std::string("X-Mailsift-Status: ") + engine::verdict_word(verdict) + eol +
                         "X-Mailsift-Signature: " + engine::signature_text(id) + eol;
    if (at == raw.size() && !raw.empty() && raw.back() != '\n') fields.insert(0, eol);
    return raw.substr(0, at) + fields + raw.substr(at);
}

// The value of the topmost header field `name` (lower case, with its colon), or nothing.
std::optional<std::string_view> header_field(std::string_view raw, std::string_view name) {
    std::size_t at = 0;
    while (at < raw.size()) {
        const std::size_t end = std::min(raw.find('\n', at), raw.size());
        const std::string_view line = raw.substr(at, end - at);
        if (line.empty() || line == "\r") break;  // the end of the header section
        if (line.size() > name.size() && std::equal(name.begin(), name.end(), line.begin(), [](char a, char b) {
                return a == std::tolower(static_cast<unsigned char>(b));
            })) {
            return line.substr(name.size());
        }
        at = end + 1;
    }
    return std::nullopt;
}

// The user a message was delivered to (per_user), as the milter would have
// had it for its one recipient: its topmost Delivered-To (the last delivery's
// envelope recipient), else the first address of its To (what
// bench/deployed_loop.py sends the real mailsiftd as RCPT), else none.
// Chosen from that one recipient by mailsiftd's own rule (engine::message_user).
std::optional<std::string> delivered_user(std::string_view raw, engine::PerUser per_user) {
    if (per_user == engine::PerUser::off) return std::nullopt;
    std::vector<std::string> recipients;
    if (const auto to = header_field(raw, "delivered-to:")) {
        recipients.emplace_back(*to);
    } else if (const auto first_to = header_field(raw, "to:")) {
        recipients.emplace_back(first_to->substr(0, first_to->find(',')));
    }
    return engine::message_user(per_user, recipients);
}

}  // namespace

void deployed(const std::vector<LabelledMessage>& corpus, const Plan& plan, const engine::Settings& settings,
              const std::filesystem::path& work_dir, const Loader& load, Run& out, const std::function<void()>& tick) {
    const std::size_t first = static_cast<std::size_t>(plan.fraction * static_cast<double>(corpus.size()));
    std::vector<const LabelledMessage*> train;
    for (std::size_t i = 0; i < first; ++i) train.push_back(&corpus[i]);
    const std::size_t second = class_sort(train);

    store::SqliteDatabase db = fresh_database(work_dir / "deployed.db");
    learn_commands(db, train, settings, load, out, tick, second);
    // The same model, kept as first learned.
    const auto frozen_path = work_dir / "uncorrected.db";
    db.backup(frozen_path, true);
    store::SqliteDatabase frozen_db(frozen_path, store::Database::Mode::read_only);

    engine::Settings scoring = settings;
    scoring.reasons = 0;
    // The daemon's own connection: it sees what the corrections commit as another process's commits.
    store::SqliteDatabase daemon_db(work_dir / "deployed.db", store::Database::Mode::read_only);
    engine::Filter filter(daemon_db, scoring);
    const engine::Filter frozen(frozen_db, scoring);
    Run::Deployed d;
    const std::size_t batch = std::max<std::size_t>(plan.batch, 1);
    std::int64_t now = 1'000'000;  // scan times: ascending, as the mail came
    struct Delivered {
        const LabelledMessage* m;
        std::string raw;
        store::Digest id;
        model::Verdict verdict;
    };
    for (std::size_t start = first; start < corpus.size(); start += batch) {
        auto t0 = Clock::now();
        filter.refresh();  // what the corrections of the last batch taught
        std::vector<Delivered> delivered;
        store::Recording scans;
        for (std::size_t i = start; i < std::min(corpus.size(), start + batch); ++i) {
            tick();
            const LabelledMessage& m = corpus[i];
            auto raw = load_usable(load, m.path, settings, out);
            if (!raw) continue;
            const std::string user = delivered_user(*raw, settings.per_user).value_or("");
            const auto c = filter.classify(*raw, nullptr, /*record_features=*/true, false, nullptr, user);
            const store::Digest id = engine::message_digest(*raw);
            out.scored.push_back({m.spam, c.score.log_odds, c.score.probability, c.score.verdict});
            out.scored_paths.push_back(m.path);
            const auto u = frozen.classify(*raw, nullptr, false, false, nullptr, user).score;
            d.uncorrected.push_back({m.spam, u.log_odds, u.probability, u.verdict});
            scans.scans.push_back({id, ++now, c.score.verdict, c.features});
            delivered.push_back({&m, std::move(*raw), id, c.score.verdict});
        }
        db.record(scans);
        out.score_seconds += seconds_since(t0);
        t0 = Clock::now();
        for (const Delivered& x : delivered) {
            const bool to_junk = x.m->spam && x.verdict != model::Verdict::spam;
            const bool out_of_junk = !x.m->spam && x.verdict == model::Verdict::spam && !plan.one_sided;
            if (!to_junk && !out_of_junk) continue;
            const std::string copy = delivered_copy(x.raw, x.id, x.verdict);
            engine::Trainer trainer(db, settings, engine::Trainer::Reads::rows);  // one `mailsift correct` a move
            trainer.set_corrector("evaluate");
            const auto o = trainer.correct(copy, copy.size(), to_junk ? store::Class::spam : store::Class::ham, now);
            trainer.finish();
            // mailsiftd refits once it has loaded the correction and no other came
            // (daemon/recorder.hpp): within two refresh_interval, before a user's next
            // move, which is seconds or minutes away. Moves made in one burst (a user
            // selecting several messages) are refitted once after it, as
            // bench/deployed_loop.py's real mailsiftd measures.
            engine::Trainer(db, settings, engine::Trainer::Reads::rows).refit_linear_if_behind();
            if (o.problem != engine::MessageProblem::none) continue;
            ++(to_junk ? d.moved_to_junk : d.moved_from_junk);
            if (o.result != store::LearnResult::already_learned && !o.confirmed) ++out.trained;
        }
        out.train_seconds += seconds_since(t0);
    }
    out.deployed = std::move(d);
}

}  // namespace mailsift::evaluation::detail
