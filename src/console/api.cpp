// The App's API over the model and the history: scan, learn, the history and
// its export, a line's explanation and its trail of corrections, a correction
// and its undo, the error rates and the configuration (app.hpp). Sessions,
// sign-in and routing are app.cpp's.
#include <ctime>
#include <initializer_list>
#include <vector>

#include "explain_json.hpp"
#include "history.hpp"
#include "mailsift/console/app.hpp"
#include "mailsift/engine/explain.hpp"
#include "mailsift/engine/signature.hpp"
#include "mailsift/engine/trainer.hpp"
#include "mailsift/engine/user_layers.hpp"
#include "mailsift/mime/message.hpp"
#include "mailsift/store/database.hpp"
#include "web.hpp"

namespace mailsift::console {

namespace http = boost::beast::http;
using nlohmann::json;

namespace {

// What became of a learned message: the audit trail's word for it, and the answer's words.
struct ResultWords {
    const char* audit;
    const char* shown;
};

ResultWords result_words(store::LearnResult r) {
    switch (r) {
        case store::LearnResult::already_learned: return {"already-learned", "already learned"};
        case store::LearnResult::moved: return {"moved", "moved from the other class"};
        case store::LearnResult::learned: break;
    }
    return {"learned", "learned"};
}

const char* result_word(store::LearnResult r) { return result_words(r).audit; }
const char* learn_result(store::LearnResult r) { return result_words(r).shown; }

// The audit trail's word for what an undo did.
const char* undo_word(engine::Trainer::UndoOutcome::Result r) {
    using R = engine::Trainer::UndoOutcome::Result;
    switch (r) {
        case R::undone: return "undone";
        case R::withdrawn: return "withdrawn";
        case R::not_undoable: return "not-undoable";
        case R::changed: return "changed";
        case R::scan_gone: return "scan-gone";
        case R::untagged: return "untagged";
        case R::nothing: break;
    }
    return "nothing";
}

// A line's trail: every correction of its message, oldest first, undone ones
// included. `undoable`: it stands and was recorded with what undoing it takes
// (Undo takes back the latest of those first).
json corrections_json(store::ScanLog& db, const std::optional<store::Digest>& signature) {
    json trail = json::array();
    if (!signature) return trail;
    for (const auto& c : db.corrections_of(*signature)) {
        const bool undone = c.undone_at != 0;
        trail.push_back({{"to", store::to_string(c.to)},
                         {"by", c.by},
                         {"at", c.at},
                         {"undone_at", undone ? json(c.undone_at) : json(nullptr)},
                         {"undone_by", undone ? json(c.undone_by) : json(nullptr)},
                         {"undoable", !undone && c.undo.has_value()}});
    }
    return trail;
}

}  // namespace

Response App::scan(const Request& req, const Actor& actor) {
    const std::string_view raw = engine::without_from_line(req.body());
    const auto problem = engine::check_message(raw, raw.size(), options_.settings.limits);
    if (engine::refused(problem)) return error(req, http::status::unprocessable_entity, engine::describe(problem));
    const auto model = services_.model ? services_.model() : nullptr;
    if (!model) return error(req, http::status::service_unavailable, "no model loaded yet: train one first");
    json j = explanation_json(engine::explain(model, raw));
    // What the message says it is, decoded, for the page to show as text.
    for (const auto& h : mime::parse_header(raw, options_.settings.limits)) {
        if (!j.contains("from") && boost::beast::iequals(h.name, "From")) j["from"] = h.value;
        if (!j.contains("subject") && boost::beast::iequals(h.name, "Subject")) j["subject"] = h.value;
    }
    j["signature"] = engine::signature_text(engine::message_identity(raw));
    j["size"] = raw.size();
    audit(req, actor.client,
          audit_event("scan", j.value("verdict", std::string()), actor.account, actor.role, {}, j["signature"].get<std::string>()));
    return json_answer(req, http::status::ok, j);
}

Response App::learn(const Request& req, const Actor& actor) {
    const auto cls = query(sv(req.target()), "class");
    if (cls != "spam" && cls != "ham") return error(req, http::status::bad_request, "class must be spam or ham");
    const std::string_view raw = engine::without_from_line(req.body());
    const auto problem = engine::check_message(raw, raw.size(), options_.settings.limits);
    if (engine::refused(problem)) return error(req, http::status::unprocessable_entity, engine::describe(problem));
    try {
        const auto db = store::open(options_.database.string(), store::Database::Mode::read_write);
        engine::Trainer trainer(*db, options_.settings, engine::Trainer::Reads::rows);  // one message: its rows
        const auto now = static_cast<std::int64_t>(std::time(nullptr));
        // As `mailsift learn` one message: thick-threshold training applies.
        const auto outcome = trainer.learn(raw, raw.size(), cls == "spam" ? store::Class::spam : store::Class::ham, now);
        trainer.finish();
        json j;
        j["class"] = std::string(cls);
        j["signature"] = engine::signature_text(engine::message_identity(raw));
        j["result"] = outcome.confident ? "already known beyond the training margin: not learned"
                                        : learn_result(outcome.result);
        audit(req, actor.client,
              audit_event("learn", outcome.confident ? "not-learned" : result_word(outcome.result), actor.account, actor.role, {},
                          std::string(cls) + ":" + j["signature"].get<std::string>()));
        return json_answer(req, http::status::ok, j);
    } catch (const std::exception& e) {
        return error(req, http::status::service_unavailable, std::string("the store: ") + e.what());
    }
}

Response App::history(const Request& req, const Actor& actor) {
    const std::string_view target = sv(req.target());
    const bool exporting = path_of(target) == "/api/history/export";
    const auto mark = target.find('?');
    const std::string_view raw = mark == std::string_view::npos ? std::string_view() : target.substr(mark + 1);
    std::vector<std::string_view> takes(history_filter_parameters.begin(), history_filter_parameters.end());
    if (exporting) {
        takes.push_back("format");
    } else {
        takes.insert(takes.end(), {"limit", "cursor", "after", "before"});
    }
    if (const std::string wrong = history_parameters_problem(raw, takes); !wrong.empty()) {
        return error(req, http::status::bad_request, wrong);
    }
    const std::string format = url_decoded(query(target, "format"));
    if (exporting && format != "csv" && format != "json") return error(req, http::status::bad_request, "format must be csv or json");
    auto asked = history_query([&](std::string_view name) { return url_decoded(query(target, name)); }, !exporting);
    if (const auto* wrong = std::get_if<std::string>(&asked)) return error(req, http::status::bad_request, *wrong);
    auto& q = std::get<store::HistoryQuery>(asked);
    // Who read how many lines of whose mail, and with which filter: the audit
    // trail's, for a page as for an export (the filter as the request gave it).
    auto audited = [&](const char* event, std::size_t lines) {
        audit(req, actor.client,
              audit_event(event, "ok", actor.account, actor.role, {},
                          (exporting ? format + ":" : std::string()) + std::to_string(lines) + ":" + std::string(raw)));
    };
    try {
        const auto db = store::open(options_.database.string(), store::Database::Mode::read_only);
        if (exporting) {
            std::size_t written = 0;
            Response r = answer(req, http::status::ok, format == "csv" ? "text/csv; charset=utf-8" : "application/json; charset=utf-8",
                                history_export(*db, q, format, written));
            const std::string name = history_export_name(static_cast<std::int64_t>(std::time(nullptr)), format);
            r.set(http::field::content_disposition, "attachment; filename=\"" + name + "\"");
            audited("export", written);
            return r;
        }
        // One line more than the page, to know whether there is a next page.
        const std::size_t page = q.limit;
        q.limit = page + 1;
        auto entries = db->history(q);
        const bool more = entries.size() > page;
        if (more) entries.resize(page);
        q.limit = page;
        json rows = json::array();
        for (const auto& e : entries) rows.push_back(history_json(e));
        json out{{"entries", rows}, {"count", db->history_count(q)}, {"subjects_kept", options_.settings.daemon.history_subjects},
                 {"kept", options_.settings.daemon.record_history}};
        // Where to ask from for the lines after this page (null: there are none).
        out["next"] = more && !entries.empty() ? json{{"cursor", history_cursor(entries.back())}} : json(nullptr);
        audited("history", entries.size());
        return json_answer(req, http::status::ok, out);
    } catch (const std::exception& e) {
        return error(req, http::status::service_unavailable, std::string("the store: ") + e.what());
    }
}

Response App::explanation(const Request& req) {
    auto asked = history_line_query([&](std::string_view name) { return url_decoded(query(sv(req.target()), name)); });
    if (const auto* wrong = std::get_if<std::string>(&asked)) return error(req, http::status::bad_request, *wrong);
    auto& q = std::get<store::HistoryQuery>(asked);
    try {
        const auto db = store::open(options_.database.string(), store::Database::Mode::read_only);
        const auto found = db->history(q);
        if (found.empty()) return error(req, http::status::not_found, "no such message in the history (pruned?)");
        json j = history_json(found.front());
        const auto parts = engine::decode_score_parts(found.front().explanation);
        // A line written before explanations were kept, or by a later mailsift, has none.
        j["explanation"] = parts ? recorded_json(*parts) : json(nullptr);
        j["corrections"] = corrections_json(*db, found.front().signature);
        return json_answer(req, http::status::ok, j);
    } catch (const std::exception& e) {
        return error(req, http::status::service_unavailable, std::string("the store: ") + e.what());
    }
}

Response App::user(const Request& req, const Actor& actor) {
    // A user's layer (per_user): what their corrections taught it, by sender,
    // how many of the history's lines were delivered to them, and the error
    // rates their corrections reveal among those (engine::user_errors).
    const std::string name = url_decoded(query(sv(req.target()), "name"));
    const auto key = engine::layer_key(options_.settings.per_user, name);
    if (!key) return error(req, http::status::bad_request, "name: an address (user@domain) or a domain");
    try {
        const auto db = store::open(options_.database.string(), store::Database::Mode::read_only);
        const auto corrections = db->layer_corrections(*key);
        const engine::UserLayer layer = engine::user_layer(corrections);
        const engine::UserErrors errors = engine::user_errors(*db, *key, corrections);
        json senders = json::array();
        for (const auto& s : layer.senders) {
            senders.push_back({{"sender", s.address}, {"log_odds", s.log_odds}, {"corrections", s.corrections},
                               {"last_at", s.last_at}});
        }
        json out{{"user", *key},
                 {"per_user", engine::setting_value(options_.settings, "per_user")},
                 {"corrections", {{"to_spam", layer.to_spam}, {"to_ham", layer.to_ham}, {"undone", layer.undone}}},
                 {"history_lines", errors.messages},
                 {"errors", engine::user_errors_json<json>(errors)},
                 {"senders", senders}};
        // Whose corrections were read, by whom: the audit trail's, as for the history.
        audit(req, actor.client, audit_event("user", "ok", actor.account, actor.role, {}, *key));
        return json_answer(req, http::status::ok, out);
    } catch (const std::exception& e) {
        return error(req, http::status::service_unavailable, std::string("the store: ") + e.what());
    }
}

Response App::users(const Request& req, const Actor& actor) {
    // Every user with a layer, the most corrections first (engine::layer_users),
    // the first 500 of them: the Users page's list, so no address need be known.
    constexpr std::size_t shown = 500;
    try {
        const auto db = store::open(options_.database.string(), store::Database::Mode::read_only);
        const auto all = engine::layer_users(db->layer_corrections(""));
        json list = json::array();
        for (std::size_t i = 0; i < all.size() && i < shown; ++i) {
            const auto& u = all[i];
            list.push_back({{"user", u.user}, {"to_spam", u.to_spam}, {"to_ham", u.to_ham}, {"senders", u.senders},
                            {"last_at", u.last_at}});
        }
        audit(req, actor.client, audit_event("users", "ok", actor.account, actor.role, {}, {}));
        return json_answer(req, http::status::ok,
                           json{{"per_user", engine::setting_value(options_.settings, "per_user")},
                                {"total", all.size()},
                                {"users", list}});
    } catch (const std::exception& e) {
        return error(req, http::status::service_unavailable, std::string("the store: ") + e.what());
    }
}

Response App::correct(const Request& req, const Actor& actor) {
    const json body = json::parse(req.body(), nullptr, false);
    if (!body.is_object() || !body.contains("signature") || !body.contains("class") || !body["signature"].is_string() ||
        !body["class"].is_string() || (body["class"] != "spam" && body["class"] != "ham")) {
        return error(req, http::status::bad_request, "expected {\"signature\": ..., \"class\": \"spam\" or \"ham\"}");
    }
    const auto id = engine::parse_signature(body["signature"].get<std::string>());
    if (!id) return error(req, http::status::bad_request, "not a signature (32 hexadecimal digits)");
    const store::Class to = body["class"] == "spam" ? store::Class::spam : store::Class::ham;
    try {
        const auto db = store::open(options_.database.string(), store::Database::Mode::read_write);
        engine::Trainer trainer(*db, options_.settings, engine::Trainer::Reads::rows);  // one message: its rows
        trainer.set_corrector("console:" + actor.account);  // the history shows who corrected
        // Exactly as `mailsift correct --signature`: once; the other way moves it.
        const auto r = trainer.correct_or_defer_signature(*id, to, static_cast<std::int64_t>(std::time(nullptr)));
        trainer.commit();  // mailsiftd's recorder refits once the changes settle (Trainer::refit_due)
        std::string result;
        if (r.deferred) result = "no scan recorded yet: kept, and trained when mailsiftd writes it";
        else if (r.confirmed) result = "mailsiftd already said so with confidence: not trained (train_on_error)";
        else result = learn_result(r.result);
        if (r.superseded) result = "its correction the other way undone; " + result;
        audit(req, actor.client,
              audit_event("correct", r.deferred ? "deferred" : r.confirmed ? "not-learned" : result_word(r.result),
                          actor.account, actor.role, {}, std::string(store::to_string(to)) + ":" + engine::signature_text(*id)));
        return json_answer(req, http::status::ok,
                           json{{"signature", engine::signature_text(*id)}, {"class", store::to_string(to)}, {"result", result}});
    } catch (const std::exception& e) {
        return error(req, http::status::service_unavailable, std::string("the store: ") + e.what());
    }
}

Response App::undo(const Request& req, const Actor& actor) {
    const json body = json::parse(req.body(), nullptr, false);
    if (!body.is_object() || !body.contains("signature") || !body["signature"].is_string()) {
        return error(req, http::status::bad_request, "expected {\"signature\": ...}");
    }
    const auto id = engine::parse_signature(body["signature"].get<std::string>());
    if (!id) return error(req, http::status::bad_request, "not a signature (32 hexadecimal digits)");
    const std::string signature = engine::signature_text(*id);
    try {
        const auto db = store::open(options_.database.string(), store::Database::Mode::read_write);
        engine::Trainer trainer(*db, options_.settings, engine::Trainer::Reads::rows);  // one message: its rows
        trainer.set_corrector("console:" + actor.account);  // the trail shows who undid it
        // Exactly as `mailsift correct --undo --signature`: the latest correction that stands.
        using R = engine::Trainer::UndoOutcome::Result;
        const auto o = trainer.undo_signature(*id, static_cast<std::int64_t>(std::time(nullptr)));
        trainer.commit();  // mailsiftd's recorder refits once the changes settle (Trainer::refit_due)
        const bool undone = o.result == R::undone;
        // The class of the correction found (or withdrawn); none was found to undo.
        const bool found = o.result != R::nothing && o.result != R::untagged;
        const char* cls = store::to_string(o.to);
        audit(req, actor.client,
              audit_event("undo", undo_word(o.result), actor.account, actor.role, {},
                          (found ? std::string(cls) : std::string("-")) + ":" + signature));
        if (!undone && o.result != R::withdrawn) {
            std::string problem = engine::undo_problem(o.result);
            if (o.result == R::scan_gone) problem += " ('mailsift correct --undo MESSAGE' on the mail server)";
            return error(req, http::status::conflict, problem);
        }
        json j{{"signature", signature}, {"undone", undone}};
        if (undone) {
            const std::string now = o.was ? std::string("learned as ") + store::to_string(*o.was) : "not learned";
            j["result"] = std::string("undid its correction to ") + cls + "; now " + now;
            j["class"] = cls;
            j["now"] = o.was ? json(store::to_string(*o.was)) : json("not learned");
        } else {
            j["result"] = std::string("withdrew its correction to ") + cls +
                          ", which was waiting for its scan: nothing had been trained";
            j["class"] = cls;
            j["now"] = nullptr;
        }
        return json_answer(req, http::status::ok, j);
    } catch (const std::exception& e) {
        return error(req, http::status::service_unavailable, std::string("the store: ") + e.what());
    }
}

json App::corrections() const {
    // Mistakes revealed by corrections, as `mailsift stats` counts them.
    try {
        const auto db = store::open(options_.database.string(), store::Database::Mode::read_only);
        const auto now = static_cast<std::int64_t>(std::time(nullptr));
        auto period = [&](std::int64_t since) {
            const auto c = db->corrections_since(since);
            return json{{"false_positives", c.false_positives}, {"false_negatives", c.false_negatives},
                        {"unsure_to_spam", c.unsure_to_spam}, {"unsure_to_ham", c.unsure_to_ham}};
        };
        return json{{"day", period(now - 86400)}, {"week", period(now - 7 * 86400)}};
    } catch (const std::exception& e) {
        return json{{"error", e.what()}};
    }
}

json App::configuration() const {
    json given = json::array();
    for (const auto& [key, value] : options_.settings.given) {
        // A PostgreSQL location may hold a password.
        const std::string shown = key == "database" ? store::display_location(value) : value;
        given.push_back({{"key", key}, {"value", shown}});
    }
    json defaults = json::array();
    for (const auto& name : engine::setting_names()) {
        bool set = false;
        for (const auto& g : options_.settings.given) set = set || g.first == name;
        if (!set) defaults.push_back({{"key", name}, {"value", engine::setting_value(options_.settings, name)}});
    }
    return json{{"file", options_.config.empty() ? std::string("(none: built-in defaults)") : options_.config.string()},
                {"database", store::display_location(options_.database.string())},
                {"given", given},
                {"defaults", defaults}};
}

}  // namespace mailsift::console
