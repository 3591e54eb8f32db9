// The PostgreSQL backend's records besides the counts: scans under their
// signature (compact form, as on SQLite), corrections, counters, contacts,
// and pruning.
#include <algorithm>
#include <cstring>
#include <map>

#include "../codec.hpp"
#include "../history_sql.hpp"
#include "pg_database.hpp"

namespace mailsift::store {

using pg::Param;

namespace {

// The SQL of a history query with its parameters in `p`: a double as the text of
// its shortest exact digits (the line's own value, not a neighbour's), and
// ILIKE (it folds more than ASCII; SQLite's LIKE folds ASCII only: the same
// for the ASCII the filters promise).
HistoryDialect dialect(std::vector<Param>& p) {
    return {[&p](HistoryDialect::Value v) {
                Param param;
                if (const auto* i = std::get_if<std::int64_t>(&v)) param = Param(*i);
                else if (const auto* d = std::get_if<double>(&v)) param = Param::text(pg::double_text(*d));
                else if (const auto* t = std::get_if<std::string>(&v)) param = Param::text(*t);
                else param = Param::digest(std::get<Digest>(v));
                p.push_back(std::move(param));
                return "$" + std::to_string(p.size());
            },
            [](const char* column, const std::string& placeholder) { return std::string(column) + " ILIKE " + placeholder; },
            ""};  // PostgreSQL plans by statistics: no index needs keeping out
}

}  // namespace

const ScanDictionary* PgDatabase::dictionary(std::int64_t id) {
    if (auto it = dictionaries_->loaded.find(id); it != dictionaries_->loaded.end()) return &it->second;
    auto r = conn_.exec("SELECT bytes FROM scan_dictionaries WHERE id = $1", {Param(id)});
    if (r.rows() == 0) return nullptr;
    return &dictionaries_->loaded.emplace(id, ScanDictionary(id, r.bytes(0, 0))).first->second;
}

std::optional<std::string> PgDatabase::stored_scan(const pg::Result& r, int row, int dictionary_column,
                                                   int features_column) {
    const std::string_view stored = r.bytes(row, features_column);
    if (r.null(row, dictionary_column)) return decompress_scan(stored, nullptr);
    const ScanDictionary* d = dictionary(r.integer(row, dictionary_column));
    return d ? decompress_scan(stored, d) : std::nullopt;
}

std::optional<Scan> PgDatabase::find_scan(const Digest& id) {
    auto r = conn_.exec("SELECT scanned_at, verdict, dictionary, features FROM signatures WHERE id = $1",
                        {Param::digest(id)});
    if (r.rows() == 0) return std::nullopt;
    Scan scan;
    scan.id = id;
    scan.scanned_at = r.integer(0, 0);
    scan.verdict = static_cast<model::Verdict>(r.integer(0, 1));
    auto grouped = stored_scan(r, 0, 2, 3);
    if (!grouped) conn_.fail("the recorded scan of this signature is damaged (not in any form this mailsift writes)");
    scan.features = ungroup_scan_lines(*grouped);
    return scan;
}

const ScanDictionary* PgDatabase::dictionary_for_new_scans(const Recording& r, std::int64_t now) {
    std::optional<std::int64_t> newest;
    std::int64_t created_at = 0;
    {
        auto q = conn_.exec("SELECT id, created_at FROM scan_dictionaries ORDER BY id DESC LIMIT 1");
        if (q.rows() > 0) {
            newest = q.integer(0, 0);
            created_at = q.integer(0, 1);
        }
    }
    const ScanDictionary* current = newest ? dictionary(*newest) : nullptr;
    if (newest && now - created_at < dictionary_seconds) return current;
    if (dictionaries_->training_failed_at && now - *dictionaries_->training_failed_at < 86400) return current;
    std::size_t since = r.scans.size();
    since += static_cast<std::size_t>(
        conn_.exec("SELECT count(*) FROM signatures WHERE scanned_at >= $1", {Param(created_at)}).integer(0, 0));
    if (since < min_dictionary_samples) return current;
    std::vector<std::string> samples;
    {
        auto q = conn_.exec("SELECT dictionary, features FROM signatures ORDER BY scanned_at DESC LIMIT $1",
                            {Param(dictionary_samples)});
        for (int i = 0; i < q.rows(); ++i) {
            if (auto grouped = stored_scan(q, i, 0, 1)) samples.push_back(std::move(*grouped));
        }
    }
    for (const auto& scan : r.scans) samples.push_back(group_scan_lines(scan.features));
    const auto bytes = train_scan_dictionary(samples);
    if (!bytes) {
        dictionaries_->training_failed_at = now;
        return current;
    }
    // Another daemon may store one at the same moment: both are kept, each names its own.
    const std::int64_t id =
        conn_.exec("INSERT INTO scan_dictionaries (created_at, last_used, bytes) VALUES ($1, 0, $2) RETURNING id",
                   {Param(now), Param::bytes(*bytes)})
            .integer(0, 0);
    return &dictionaries_->loaded.emplace(id, ScanDictionary(id, *bytes)).first->second;
}

void PgDatabase::drop_unused_dictionaries() {
    conn_.exec(
        "DELETE FROM scan_dictionaries WHERE id < (SELECT max(id) FROM scan_dictionaries)"
        " AND last_used < coalesce((SELECT min(scanned_at) FROM signatures), 9223372036854775807)");
    dictionaries_->loaded.clear();
}

ScanPacker PgDatabase::scan_packer(std::int64_t now) {
    if (mode_ != Mode::read_write) {
        auto q = conn_.exec("SELECT max(id) FROM scan_dictionaries");
        if (q.rows() == 0 || q.null(0, 0)) return ScanPacker();
        const ScanDictionary* d = dictionary(q.integer(0, 0));
        return d ? ScanPacker(std::make_shared<const ScanDictionary>(*d)) : ScanPacker();
    }
    const ScanDictionary* d = dictionary_for_new_scans(Recording{}, now);
    return d ? ScanPacker(std::make_shared<const ScanDictionary>(*d)) : ScanPacker();
}

void PgDatabase::record(const Recording& r) {
    if (mode_ != Mode::read_write) conn_.fail("database was opened read-only");
    const ScanRows rows = scan_rows(
        r, [this](const Recording& rec, std::int64_t at) { return dictionary_for_new_scans(rec, at); },
        [this](const ScanDictionary& dictionary) {
            auto q = conn_.exec("SELECT bytes FROM scan_dictionaries WHERE id = $1", {Param(dictionary.id())});
            return q.rows() > 0 && dictionary.same_bytes(q.bytes(0, 0));
        },
        [this](const std::string& what) { conn_.fail(what); });
    // Compressed before the transaction, as the scans are.
    std::vector<std::string> explanations;
    explanations.reserve(r.history.size());
    for (const auto& e : r.history) explanations.push_back(pack_explanation(e.explanation));
    // Contacts and counters in one order on every daemon: two recorders never wait on each other in a cycle.
    std::vector<const Contact*> contacts;
    for (const auto& c : r.contacts) contacts.push_back(&c);
    std::sort(contacts.begin(), contacts.end(), [](const Contact* a, const Contact* b) { return a->address < b->address; });
    std::vector<std::pair<std::string, std::int64_t>> counters = r.counter_increments;
    std::sort(counters.begin(), counters.end());
    std::vector<std::pair<std::string, std::int64_t>> delivered = r.delivered;
    std::sort(delivered.begin(), delivered.end());
    transaction([&] {
        for (const ScanRow& row : rows.rows) {
            conn_.exec(
                "INSERT INTO signatures (id, scanned_at, verdict, dictionary, features) VALUES ($1, $2, $3, $4, $5)"
                " ON CONFLICT (id) DO UPDATE SET scanned_at = excluded.scanned_at, verdict = excluded.verdict,"
                " dictionary = excluded.dictionary, features = excluded.features",
                {Param::digest(*row.id), Param(row.scanned_at), Param(static_cast<int>(row.verdict)),
                 row.dictionary != 0 ? Param(row.dictionary) : Param(), Param::bytes(row.blob)});
        }
        for (const auto& [id, when] : rows.last_use) {
            conn_.exec("UPDATE scan_dictionaries SET last_used = greatest(last_used, $2) WHERE id = $1",
                       {Param(id), Param(when)});
        }
        for (const Contact* c : contacts) add_contact(c->address, c->source, c->added_at);
        for (const auto& [name, at] : delivered) {
            conn_.exec("INSERT INTO delivered_users (name, last_at) VALUES ($1, $2) ON CONFLICT (name)"
                       " DO UPDATE SET last_at = greatest(delivered_users.last_at, excluded.last_at)",
                       {Param::text(name), Param(at)});
        }
        for (std::size_t n = 0; n < r.history.size(); ++n) {
            const HistoryEntry& e = r.history[n];
            // A new line each time, numbered by the identity: never one replaced.
            conn_.exec("INSERT INTO history (signature, scanned_at, verdict, probability, action, reason, sender,"
                       " recipients, from_header, to_header, subject, message_id, queue_id, client_address, helo,"
                       " size, explanation)"
                       " VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17)",
                       {e.signature ? Param::digest(*e.signature) : Param(), Param(e.scanned_at),
                        Param(e.scored ? static_cast<int>(e.verdict) : unscored_verdict),
                        Param::text(pg::double_text(e.scored ? e.probability : 0.0)), Param::text(e.action),
                        Param::text(e.reason), Param::text(e.sender), Param::text(e.recipients), Param::text(e.from),
                        Param::text(e.to), Param::text(e.subject), Param::text(e.message_id), Param::text(e.queue_id),
                        Param::text(e.client_address), Param::text(e.helo), Param(e.size), Param::bytes(explanations[n])});
        }
        for (const auto& [name, n] : counters) {
            conn_.exec("INSERT INTO counters (name, value) VALUES ($1, $2)"
                       " ON CONFLICT (name) DO UPDATE SET value = counters.value + excluded.value",
                       {Param::text(name), Param(n)});
        }
    });
}

ScanPrune PgDatabase::prune_scans(std::int64_t before, std::size_t batch) {
    // A batch at a time, by the scanned_at indexes, as on SQLite: the rows
    // locked and the transaction's length are one batch's.
    const Param limit(static_cast<std::int64_t>(std::min<std::size_t>(batch, INT64_MAX)));
    ScanPrune r = transaction([&] {
        ScanPrune p;
        p.scans = static_cast<std::size_t>(
            conn_.exec("DELETE FROM signatures WHERE id IN (SELECT id FROM signatures WHERE scanned_at < $1"
                       " ORDER BY scanned_at LIMIT $2)", {Param(before), limit}).affected());
        p.lines = static_cast<std::size_t>(
            conn_.exec("DELETE FROM history WHERE id IN (SELECT id FROM history WHERE scanned_at < $1"
                       " ORDER BY scanned_at LIMIT $2)", {Param(before), limit}).affected());
        drop_unused_dictionaries();
        prune_deferred_corrections(before);
        return p;
    });
    r.more = r.scans == batch || r.lines == batch;
    return r;
}

void PgDatabase::prune_history(std::int64_t before) {
    conn_.exec("DELETE FROM history WHERE scanned_at < $1", {Param(before)});
}

std::vector<HistoryEntry> PgDatabase::history(const HistoryQuery& query) {
    std::vector<Param> params;
    const HistoryDialect d = dialect(params);
    std::string where = history_where(query, d);
    if (query.after) where += (where.empty() ? " WHERE " : " AND ") + history_after(query, d);
    const std::string limit = d.add(static_cast<std::int64_t>(std::min<std::size_t>(query.limit, INT64_MAX)));
    // The page first, then the latest correction of each of its lines (corrections
    // are keyed by signature; the highest id is the latest).
    std::string sql =
        "SELECT h.id, h.signature, h.scanned_at, h.verdict, h.probability::text, h.action, h.reason, h.sender,"
        " h.recipients, h.from_header, h.to_header, h.subject, h.message_id, h.queue_id, h.client_address, h.helo,"
        " h.size, h.explanation, c.corrected_to, c.at, c.by_whom FROM (SELECT id, signature, scanned_at, verdict,"
        " probability, action,"
        " reason, sender, recipients, from_header, to_header, subject, message_id, queue_id, client_address, helo,"
        " size, ";
    sql += query.explanations ? "explanation" : "''::bytea AS explanation";
    sql += " FROM history" + where + " ORDER BY " + history_order(query.order, "") + " LIMIT " + limit +
           ") h LEFT JOIN LATERAL (SELECT corrected_to, at, by_whom FROM corrections WHERE signature = h.signature"
           " AND undone_at IS NULL ORDER BY id DESC LIMIT 1) c ON true ORDER BY " + history_order(query.order, "h.");
    auto r = conn_.exec(sql, params);
    std::vector<HistoryEntry> out;
    for (int i = 0; i < r.rows(); ++i) {
        HistoryEntry e;
        e.id = r.integer(i, 0);
        if (const auto signature = r.bytes(i, 1); !r.null(i, 1) && signature.size() == Digest{}.size()) {
            e.signature.emplace();
            std::memcpy(e.signature->data(), signature.data(), signature.size());
        }
        e.scanned_at = r.integer(i, 2);
        const auto verdict = r.integer(i, 3);
        e.scored = verdict != unscored_verdict;
        if (e.scored) e.verdict = static_cast<model::Verdict>(verdict);
        e.probability = pg::text_double(r.bytes(i, 4));
        e.action = r.bytes(i, 5);
        e.reason = r.bytes(i, 6);
        e.sender = r.bytes(i, 7);
        e.recipients = r.bytes(i, 8);
        e.from = r.bytes(i, 9);
        e.to = r.bytes(i, 10);
        e.subject = r.bytes(i, 11);
        e.message_id = r.bytes(i, 12);
        e.queue_id = r.bytes(i, 13);
        e.client_address = r.bytes(i, 14);
        e.helo = r.bytes(i, 15);
        e.size = static_cast<std::uint64_t>(r.integer(i, 16));
        e.explanation = unpack_explanation(r.bytes(i, 17));
        if (!r.null(i, 18)) {
            e.corrected = HistoryEntry::Corrected{r.integer(i, 18) == 1 ? Class::spam : Class::ham, r.integer(i, 19),
                                                  std::string(r.bytes(i, 20))};
        }
        out.push_back(std::move(e));
    }
    return out;
}

std::uint64_t PgDatabase::history_count(const HistoryQuery& query) {
    std::vector<Param> params;
    const std::string where = history_where(query, dialect(params), true);
    return static_cast<std::uint64_t>(conn_.exec("SELECT count(*) FROM history" + where, params).integer(0, 0));
}

void PgDatabase::prune_deferred_corrections(std::int64_t before) {
    conn_.exec("DELETE FROM deferred_corrections WHERE requested_at < $1", {Param(before)});
}

bool PgDatabase::has_deferred_corrections() {
    return conn_.exec("SELECT EXISTS (SELECT 1 FROM deferred_corrections)").integer(0, 0) != 0;
}

CorrectionCounts PgDatabase::corrections_since(std::int64_t since) {
    CorrectionCounts c;
    // A correction of a scan counts only while it is its scan's latest (the
    // highest id of its signature): corrected back, the message was right.
    auto r = conn_.exec(
        "SELECT verdict, corrected_to, count(*) FROM corrections c WHERE at >= $1 AND undone_at IS NULL AND"
        " (signature IS NULL OR id = (SELECT max(id) FROM corrections l WHERE l.signature = c.signature"
        " AND l.undone_at IS NULL)) GROUP BY 1, 2",
        {Param(since)});
    for (int i = 0; i < r.rows(); ++i) {
        const auto verdict = static_cast<model::Verdict>(r.integer(i, 0));
        const bool to_spam = r.integer(i, 1) == 1;
        const auto n = static_cast<std::uint64_t>(r.integer(i, 2));
        if (verdict == model::Verdict::spam && !to_spam) c.false_positives += n;
        else if (verdict == model::Verdict::ham && to_spam) c.false_negatives += n;
        else if (verdict == model::Verdict::unsure) (to_spam ? c.unsure_to_spam : c.unsure_to_ham) += n;
    }
    return c;
}

std::vector<std::pair<std::string, std::int64_t>> PgDatabase::counters() {
    std::vector<std::pair<std::string, std::int64_t>> out;
    auto r = conn_.exec("SELECT name, value FROM counters ORDER BY name COLLATE \"C\"");
    for (int i = 0; i < r.rows(); ++i) out.emplace_back(std::string(r.bytes(i, 0)), r.integer(i, 1));
    return out;
}

// ---- contacts ----

std::vector<Contact> PgDatabase::contacts() {
    std::vector<Contact> out;
    auto r = conn_.exec("SELECT address, source, added_at FROM contacts ORDER BY address");
    for (int i = 0; i < r.rows(); ++i) {
        out.push_back({std::string(r.bytes(i, 0)), std::string(r.bytes(i, 1)), r.integer(i, 2)});
    }
    return out;
}

namespace {

// A correction row's columns: id, verdict, corrected_to, at, by_whom, (5: the
// undo record, read by the caller), undone_at, undone_by.
CorrectionRecord correction_row(const pg::Result& r, int i) {
    CorrectionRecord c;
    c.id = r.integer(i, 0);
    c.verdict = static_cast<model::Verdict>(r.integer(i, 1));
    c.to = r.integer(i, 2) == 1 ? Class::spam : Class::ham;
    c.at = r.integer(i, 3);
    c.by = r.bytes(i, 4);
    if (!r.null(i, 6)) c.undone_at = r.integer(i, 6);
    if (!r.null(i, 7)) c.undone_by = r.bytes(i, 7);
    return c;
}

}  // namespace

std::vector<CorrectionRecord> PgDatabase::corrections_of(const Digest& signature) {
    auto r = conn_.exec("SELECT id, verdict, corrected_to, at, by_whom, (undo IS NOT NULL)::int, undone_at, undone_by"
                        " FROM corrections WHERE signature = $1 ORDER BY id",
                        {Param::digest(signature)});
    std::vector<CorrectionRecord> out;
    for (int i = 0; i < r.rows(); ++i) {
        CorrectionRecord c = correction_row(r, i);
        if (r.integer(i, 5) != 0) c.undo.emplace();
        out.push_back(std::move(c));
    }
    return out;
}

std::vector<CorrectionRecord> layer_corrections_of(pg::Connection& c, std::string_view user, bool standing) {
    const std::string sql = std::string("SELECT id, verdict, corrected_to, at, by_whom, undo, undone_at, undone_by"
                                        " FROM corrections WHERE undo IS NOT NULL AND ") +
                            (user.empty() ? "layer_user <> ''" : "layer_user = $1") +
                            (standing ? " AND undone_at IS NULL ORDER BY id FOR UPDATE" : " ORDER BY id");
    auto r = user.empty() ? c.exec(sql) : c.exec(sql, {Param::text(user)});
    std::vector<CorrectionRecord> out;
    for (int i = 0; i < r.rows(); ++i) {
        auto undo = decode_correction_undo(r.bytes(i, 5));
        if (!undo) c.fail("a correction's undo record is damaged (correction " + std::to_string(r.integer(i, 0)) + ")");
        if (undo->layer.slots.empty() || (!user.empty() && undo->layer.user != user)) continue;
        CorrectionRecord rec = correction_row(r, i);
        rec.undo = std::move(undo);
        out.push_back(std::move(rec));
    }
    return out;
}

std::vector<CorrectionRecord> sender_corrections_of(pg::Connection& c, std::string_view sender) {
    auto r = c.exec("SELECT id, verdict, corrected_to, at, by_whom, undo, signature FROM corrections"
                    " WHERE layer_sender = $1 AND undo IS NOT NULL AND undone_at IS NULL ORDER BY id FOR UPDATE",
                    {Param::text(sender)});
    std::vector<CorrectionRecord> out;
    for (int i = 0; i < r.rows(); ++i) {
        auto undo = decode_correction_undo(r.bytes(i, 5));
        if (!undo) c.fail("a correction's undo record is damaged (correction " + std::to_string(r.integer(i, 0)) + ")");
        if (undo->layer.slots.empty() || undo->layer.sender != sender) continue;
        CorrectionRecord rec = correction_row(r, i);
        rec.undo = std::move(undo);
        if (!r.null(i, 6)) {
            const std::string_view d = r.bytes(i, 6);
            if (d.size() == Digest{}.size()) {
                Digest digest{};
                std::copy(d.begin(), d.end(), digest.begin());
                rec.signature = digest;
            }
        }
        out.push_back(std::move(rec));
    }
    return out;
}

std::vector<CorrectionRecord> PgDatabase::layer_corrections(std::string_view user) {
    return layer_corrections_of(conn_, user, false);
}

ScanLog::LayerCensus PgDatabase::layer_census() {
    auto r = conn_.exec("SELECT count(DISTINCT layer_user), count(*) FROM corrections WHERE layer_user <> ''"
                        " AND undone_at IS NULL");
    return {static_cast<std::uint64_t>(r.integer(0, 0)), static_cast<std::uint64_t>(r.integer(0, 1))};
}

bool PgDatabase::delivered_to(std::string_view user) {
    return conn_.exec("SELECT 1 FROM delivered_users WHERE name = $1", {Param::text(user)}).rows() > 0;
}

bool PgDatabase::add_contact(std::string_view address, std::string_view source, std::int64_t now) {
    return conn_
               .exec("INSERT INTO contacts (address, source, added_at) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING",
                     {Param::bytes(address), Param::bytes(source), Param(now)})
               .affected() > 0;
}

bool PgDatabase::remove_contact(std::string_view address) {
    return conn_.exec("DELETE FROM contacts WHERE address = $1", {Param::bytes(address)}).affected() > 0;
}

std::size_t PgDatabase::add_contacts(const std::vector<Contact>& contacts) {
    if (mode_ != Mode::read_write) conn_.fail("database was opened read-only");
    std::vector<const Contact*> sorted;
    for (const auto& c : contacts) sorted.push_back(&c);
    std::sort(sorted.begin(), sorted.end(), [](const Contact* a, const Contact* b) { return a->address < b->address; });
    return transaction([&] {
        std::size_t added = 0;
        for (const Contact* c : sorted) {
            if (add_contact(c->address, c->source, c->added_at)) ++added;
        }
        return added;
    });
}

// ---- prune ----

PruneResult PgDatabase::prune(std::int64_t signatures_before, std::int64_t features_before) {
    if (mode_ != Mode::read_write) conn_.fail("database was opened read-only");
    PruneResult result;
    transaction([&] {
        lock_commits();  // the features and totals change as a training batch changes them
        result.signatures =
            conn_.exec("DELETE FROM signatures WHERE scanned_at < $1", {Param(signatures_before)}).affected();
        drop_unused_dictionaries();
        prune_deferred_corrections(signatures_before);
        prune_history(signatures_before);
        auto r = conn_.exec(
            "WITH gone AS (DELETE FROM features WHERE spam_occurrences + ham_occurrences = 1 AND last_seen < $1"
            " RETURNING spam_occurrences, ham_occurrences, spam_presences, ham_presences)"
            " SELECT count(*), coalesce(sum(spam_occurrences), 0)::bigint, coalesce(sum(ham_occurrences), 0)::bigint,"
            " coalesce(sum(spam_presences), 0)::bigint, coalesce(sum(ham_presences), 0)::bigint FROM gone",
            {Param(features_before)});
        result.features = static_cast<std::uint64_t>(r.integer(0, 0));
        const std::int64_t held[4] = {r.integer(0, 1), r.integer(0, 2), r.integer(0, 3), r.integer(0, 4)};
        conn_.exec("UPDATE classes SET occurrences = occurrences - $2, presences = presences - $3 WHERE class = $1",
                   {Param(1), Param(held[0]), Param(held[2])});
        conn_.exec("UPDATE classes SET occurrences = occurrences - $2, presences = presences - $3 WHERE class = $1",
                   {Param(0), Param(held[1]), Param(held[3])});
        if (result.features > 0) log_model_change(nullptr);
        result.occurrences = {static_cast<std::uint64_t>(held[0]), static_cast<std::uint64_t>(held[1])};
        result.presences = {static_cast<std::uint64_t>(held[2]), static_cast<std::uint64_t>(held[3])};
    });
    return result;
}

void PgDatabase::backup(const std::filesystem::path&, bool) {
    conn_.fail(
        "backup writes an SQLite file; back up a PostgreSQL database with pg_dump (mailsift(1), BACKUP),"
        " or take a portable copy of the model with 'mailsift export'");
}

}  // namespace mailsift::store
