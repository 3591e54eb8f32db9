// Export and import of the whole model in the text format of mailsift(1), FORMAT.
#include "internal.hpp"

#include <sqlite3.h>

#include <algorithm>
#include <cassert>
#include <cstring>
#include <istream>
#include <ostream>

namespace mailsift::store {

// ---- export and import: the text format of mailsift(1), FORMAT ----
//
//   mailsift-model<TAB>1
//   class<TAB>spam|ham<TAB>MESSAGES<TAB>OCCURRENCES<TAB>PRESENCES
//   feature<TAB>ID<TAB>SPAM_OCC<TAB>HAM_OCC<TAB>SPAM_PRES<TAB>HAM_PRES<TAB>LAST_SEEN<TAB>TEXT
//   message<TAB>DIGEST<TAB>spam|ham<TAB>LEARNED_AT<TAB>ID:COUNT,ID:COUNT,...
//   contact<TAB>ADDRESS<TAB>SOURCE<TAB>ADDED_AT
//   end<TAB>FEATURES<TAB>MESSAGES<TAB>CONTACTS
//
// IDs are 16 lower-case hex digits, digests 32; texts escape \\ \t \n \r and
// other control bytes (\xHH). Written in a fixed order (classes spam then ham,
// features by id, messages by digest, contacts by address), so exporting an
// import gives the same bytes.

namespace {

constexpr const char* export_magic = "mailsift-model";
constexpr int export_version = 1;
constexpr char hex_digits[] = "0123456789abcdef";

void put_escaped(std::string& out, std::string_view s) {
    for (const char ch : s) {
        const auto c = static_cast<unsigned char>(ch);
        switch (c) {
            case '\\': out += "\\\\"; break;
            case '\t': out += "\\t"; break;
            case '\n': out += "\\n"; break;
            case '\r': out += "\\r"; break;
            default:
                if (c < 0x20 || c == 0x7F) {
                    out += "\\x";
                    out += hex_digits[c >> 4];
                    out += hex_digits[c & 0xF];
                } else {
                    out.push_back(ch);
                }
        }
    }
}

void put_hex64(std::string& out, std::uint64_t v) {
    for (int shift = 60; shift >= 0; shift -= 4) out += hex_digits[(v >> shift) & 0xF];
}

std::string_view column_text(sqlite3_stmt* s, int i) {
    const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(s, i));
    return p == nullptr ? std::string_view{} : std::string_view(p, static_cast<std::size_t>(sqlite3_column_bytes(s, i)));
}

int hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;  // upper case is not what the exporter writes
}

bool parse_hex64(std::string_view s, std::uint64_t& v) {
    if (s.size() != 16) return false;
    v = 0;
    for (const char c : s) {
        const int h = hex_value(c);
        if (h < 0) return false;
        v = (v << 4) | static_cast<std::uint64_t>(h);
    }
    return true;
}

bool parse_digest(std::string_view s, Digest& d) {
    if (s.size() != d.size() * 2) return false;
    for (std::size_t i = 0; i < d.size(); ++i) {
        const int hi = hex_value(s[2 * i]), lo = hex_value(s[2 * i + 1]);
        if (hi < 0 || lo < 0) return false;
        d[i] = static_cast<std::uint8_t>(hi * 16 + lo);
    }
    return true;
}

// Decimal without sign or leading zeros (but "0"), at most `max`.
bool parse_count(std::string_view s, std::uint64_t max, std::uint64_t& v) {
    if (s.empty() || s.size() > 20 || (s.size() > 1 && s[0] == '0')) return false;
    v = 0;
    for (const char c : s) {
        if (c < '0' || c > '9') return false;
        const auto digit = static_cast<std::uint64_t>(c - '0');
        if (v > (max - digit) / 10) return false;
        v = v * 10 + digit;
    }
    return true;
}

bool parse_time(std::string_view s, std::int64_t& v) {
    const bool negative = !s.empty() && s[0] == '-';
    std::uint64_t magnitude = 0;
    if (!parse_count(negative ? s.substr(1) : s, static_cast<std::uint64_t>(INT64_MAX), magnitude)) return false;
    if (negative && magnitude == 0) return false;
    v = negative ? -static_cast<std::int64_t>(magnitude) : static_cast<std::int64_t>(magnitude);
    return true;
}

// The exporter's escapes undone; "" when fine, else what is wrong.
std::string unescape(std::string_view s, std::string& out) {
    out.clear();
    for (std::size_t i = 0; i < s.size(); ++i) {
        const auto c = static_cast<unsigned char>(s[i]);
        if (c < 0x20 || c == 0x7F) return "unescaped control character in text";
        if (c != '\\') {
            out.push_back(s[i]);
            continue;
        }
        if (++i >= s.size()) return "text ends in a lone backslash";
        switch (s[i]) {
            case '\\': out.push_back('\\'); break;
            case 't': out.push_back('\t'); break;
            case 'n': out.push_back('\n'); break;
            case 'r': out.push_back('\r'); break;
            case 'x': {
                const int hi = i + 1 < s.size() ? hex_value(s[i + 1]) : -1;
                const int lo = i + 2 < s.size() ? hex_value(s[i + 2]) : -1;
                if (hi < 0 || lo < 0) return "bad escape \\x in text (two lower-case hex digits must follow)";
                out.push_back(static_cast<char>(hi * 16 + lo));
                i += 2;
                break;
            }
            default: return std::string("unknown escape \\") + s[i] + " in text";
        }
    }
    return {};
}

std::vector<std::string_view> split_fields(std::string_view line) {
    std::vector<std::string_view> fields;
    for (;;) {
        const std::size_t tab = line.find('\t');
        fields.push_back(line.substr(0, tab));
        if (tab == std::string_view::npos) return fields;
        line.remove_prefix(tab + 1);
    }
}

[[noreturn]] void format_error(const std::string& name, std::uint64_t line, const std::string& what) {
    throw FormatError(name + ":" + std::to_string(line) + ": " + what);
}

bool is_constraint(int rc) { return (rc & 0xFF) == SQLITE_CONSTRAINT; }

}  // namespace

ModelSummary SqliteDatabase::export_model(std::ostream& out) {
    ModelSummary sum;
    std::string line;
    exec("BEGIN");  // one consistent snapshot
    try {
        out << export_magic << '\t' << export_version << '\n';
        int rc;
        {
            Statement q(db_, "SELECT class, messages, occurrences, presences FROM classes ORDER BY class DESC", path_);
            while ((rc = sqlite3_step(q.get())) == SQLITE_ROW) {
                out << "class\t" << (sqlite3_column_int(q.get(), 0) == 1 ? "spam" : "ham") << '\t'
                    << sqlite3_column_int64(q.get(), 1) << '\t' << sqlite3_column_int64(q.get(), 2) << '\t'
                    << sqlite3_column_int64(q.get(), 3) << '\n';
            }
            if (rc != SQLITE_DONE) fail(std::string("cannot read class totals: ") + error_text());
        }
        {
            Statement q(db_,
                        "SELECT id, spam_occurrences, ham_occurrences, spam_presences, ham_presences, last_seen, text"
                        " FROM features ORDER BY id",
                        path_);
            while ((rc = sqlite3_step(q.get())) == SQLITE_ROW) {
                line.assign("feature\t");
                put_hex64(line, static_cast<std::uint64_t>(sqlite3_column_int64(q.get(), 0)));
                for (int k = 1; k <= 5; ++k) {
                    line += '\t';
                    line += std::to_string(sqlite3_column_int64(q.get(), k));
                }
                line += '\t';
                put_escaped(line, column_text(q.get(), 6));
                line += '\n';
                out << line;
                ++sum.features;
            }
            if (rc != SQLITE_DONE) fail(std::string("cannot read features: ") + error_text());
        }
        {
            Statement q(db_, "SELECT digest, class, learned_at, features FROM messages ORDER BY digest", path_);
            while ((rc = sqlite3_step(q.get())) == SQLITE_ROW) {
                line.assign("message\t");
                const auto* digest = static_cast<const unsigned char*>(sqlite3_column_blob(q.get(), 0));
                for (int i = 0; i < sqlite3_column_bytes(q.get(), 0); ++i) {
                    line += hex_digits[digest[i] >> 4];
                    line += hex_digits[digest[i] & 0xF];
                }
                line += sqlite3_column_int(q.get(), 1) == 1 ? "\tspam\t" : "\tham\t";
                line += std::to_string(sqlite3_column_int64(q.get(), 2));
                line += '\t';
                const std::string_view blob(static_cast<const char*>(sqlite3_column_blob(q.get(), 3)),
                                            static_cast<std::size_t>(sqlite3_column_bytes(q.get(), 3)));
                std::size_t i = 0;
                model::FeatureId id = 0;
                std::uint64_t delta = 0, n = 0;
                bool first = true;
                while (i < blob.size()) {
                    if (!get_varint(blob, i, delta) || !get_varint(blob, i, n)) {
                        fail("corrupt feature list of a learned message; cannot export it");
                    }
                    id += delta;
                    if (!first) line += ',';
                    first = false;
                    put_hex64(line, id);
                    line += ':';
                    line += std::to_string(n);
                }
                line += '\n';
                out << line;
                ++sum.messages;
            }
            if (rc != SQLITE_DONE) fail(std::string("cannot read learned messages: ") + error_text());
        }
        {
            Statement q(db_, "SELECT address, source, added_at FROM contacts ORDER BY address", path_);
            while ((rc = sqlite3_step(q.get())) == SQLITE_ROW) {
                line.assign("contact\t");
                put_escaped(line, column_text(q.get(), 0));
                line += '\t';
                put_escaped(line, column_text(q.get(), 1));
                line += '\t';
                line += std::to_string(sqlite3_column_int64(q.get(), 2));
                line += '\n';
                out << line;
                ++sum.contacts;
            }
            if (rc != SQLITE_DONE) fail(std::string("cannot read contacts: ") + error_text());
        }
        out << "end\t" << sum.features << '\t' << sum.messages << '\t' << sum.contacts << '\n';
        exec("COMMIT");
    } catch (...) {
        sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
        throw;
    }
    return sum;
}

ModelSummary SqliteDatabase::import_model(std::istream& in, const std::string& name) {
    if (mode_ != Mode::read_write) fail("database was opened read-only");
    ModelSummary sum;
    exec("BEGIN IMMEDIATE");
    try {
        {
            Statement q(db_,
                        "SELECT (SELECT count(*) FROM features), (SELECT count(*) FROM messages),"
                        " (SELECT count(*) FROM contacts),"
                        " (SELECT count(*) FROM classes WHERE messages <> 0 OR occurrences <> 0 OR presences <> 0)",
                        path_);
            if (sqlite3_step(q.get()) != SQLITE_ROW) fail(std::string("cannot read the database: ") + error_text());
            const auto features = sqlite3_column_int64(q.get(), 0), messages = sqlite3_column_int64(q.get(), 1),
                       contacts = sqlite3_column_int64(q.get(), 2), totals = sqlite3_column_int64(q.get(), 3);
            if (features != 0 || messages != 0 || contacts != 0 || totals != 0) {
                fail("already holds a model (" + std::to_string(features) + " features, " + std::to_string(messages) +
                     " learned messages, " + std::to_string(contacts) +
                     " contacts); import only into a new or empty database");
            }
        }
        Statement set_class(db_, "UPDATE classes SET messages = ?2, occurrences = ?3, presences = ?4 WHERE class = ?1",
                            path_);
        Statement insert_feature(db_,
                                 "INSERT INTO features (id, spam_occurrences, ham_occurrences, spam_presences,"
                                 " ham_presences, last_seen, text) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                                 path_);
        Statement insert_contact(db_, "INSERT INTO contacts (address, source, added_at) VALUES (?1, ?2, ?3)", path_);

        std::string line, text, text2;
        std::uint64_t lineno = 0;
        bool seen_class[2] = {false, false};
        std::uint64_t class_line[2] = {0, 0};
        bool ended = false;
        std::vector<std::pair<model::FeatureId, std::uint32_t>> list;
        const auto max_count = static_cast<std::uint64_t>(INT64_MAX);
        auto step = [&](sqlite3_stmt* s, const std::string& duplicate) {
            const int rc = sqlite3_step(s);
            if (is_constraint(rc)) format_error(name, lineno, duplicate);
            if (rc != SQLITE_DONE) fail(std::string("cannot import: ") + error_text());
        };
        while (std::getline(in, line)) {
            ++lineno;
            if (!line.empty() && line.back() == '\r') {
                format_error(name, lineno, "line ends in a carriage return (exports have LF line ends)");
            }
            const auto f = split_fields(line);
            if (lineno == 1) {
                if (f.size() != 2 || f[0] != export_magic) {
                    format_error(name, lineno, std::string("not a mailsift model export (the first line must be '") +
                                                   export_magic + "<TAB>" + std::to_string(export_version) + "')");
                }
                if (f[1] != std::to_string(export_version)) {
                    format_error(name, lineno, "format version '" + std::string(f[1]) + "' is not supported (this mailsift reads " +
                                                   std::to_string(export_version) + ")");
                }
                continue;
            }
            if (ended) format_error(name, lineno, "text after the 'end' line");
            const std::string_view kind = f[0];
            auto want_fields = [&](std::size_t n) {
                if (f.size() != n) {
                    format_error(name, lineno, "a '" + std::string(kind) + "' record has " + std::to_string(n) +
                                                   " tab-separated fields, this line " + std::to_string(f.size()));
                }
            };
            auto count_field = [&](std::size_t i, const char* what) {
                std::uint64_t v = 0;
                if (!parse_count(f[i], max_count, v)) {
                    format_error(name, lineno, std::string(what) + " '" + std::string(f[i]) + "' is not a count");
                }
                return static_cast<std::int64_t>(v);
            };
            auto time_field = [&](std::size_t i, const char* what) {
                std::int64_t v = 0;
                if (!parse_time(f[i], v)) format_error(name, lineno, std::string(what) + " '" + std::string(f[i]) + "' is not a time");
                return v;
            };
            auto class_field = [&](std::size_t i) {
                if (f[i] == "spam") return 1;
                if (f[i] == "ham") return 0;
                format_error(name, lineno, "class '" + std::string(f[i]) + "' is neither spam nor ham");
            };
            auto text_field = [&](std::size_t i, const char* what, std::string& out) {
                const std::string problem = unescape(f[i], out);
                if (!problem.empty()) format_error(name, lineno, std::string(what) + ": " + problem);
            };
            if (kind == "class") {
                want_fields(5);
                const int cls = class_field(1);
                if (seen_class[cls]) format_error(name, lineno, "a second 'class " + std::string(f[1]) + "' record");
                seen_class[cls] = true;
                class_line[cls] = lineno;
                Use s(set_class);
                sqlite3_bind_int(*s, 1, cls);
                for (int k = 0; k < 3; ++k) sqlite3_bind_int64(*s, k + 2, count_field(static_cast<std::size_t>(k + 2), "count"));
                step(*s, "class record rejected");
            } else if (kind == "feature") {
                want_fields(8);
                std::uint64_t id = 0;
                if (!parse_hex64(f[1], id)) format_error(name, lineno, "feature id '" + std::string(f[1]) + "' is not 16 hex digits");
                Use s(insert_feature);
                sqlite3_bind_int64(*s, 1, static_cast<sqlite3_int64>(id));
                for (int k = 2; k <= 5; ++k) sqlite3_bind_int64(*s, k, count_field(static_cast<std::size_t>(k), "count"));
                sqlite3_bind_int64(*s, 6, time_field(6, "last seen"));
                text_field(7, "feature text", text);
                sqlite3_bind_text(*s, 7, text.data(), static_cast<int>(text.size()), SQLITE_STATIC);
                step(*s, "feature " + std::string(f[1]) + " appears twice");
                ++sum.features;
            } else if (kind == "message") {
                want_fields(5);
                Digest digest{};
                if (!parse_digest(f[1], digest)) format_error(name, lineno, "digest '" + std::string(f[1]) + "' is not 32 hex digits");
                const int cls = class_field(2);
                const std::int64_t learned_at = time_field(3, "learned at");
                list.clear();
                std::string_view rest = f[4];
                while (!rest.empty()) {
                    const std::size_t comma = rest.find(',');
                    const std::string_view item = rest.substr(0, comma);
                    rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
                    const std::size_t colon = item.find(':');
                    std::uint64_t id = 0, n = 0;
                    if (colon == std::string_view::npos || !parse_hex64(item.substr(0, colon), id) ||
                        !parse_count(item.substr(colon + 1), UINT32_MAX, n) || n == 0 ||
                        (comma != std::string_view::npos && rest.empty())) {
                        format_error(name, lineno, "feature list item '" + std::string(item) +
                                                       "' is not ID:COUNT (16 hex digits, a count from 1)");
                    }
                    list.emplace_back(id, static_cast<std::uint32_t>(n));
                }
                const std::string blob = encode_terms(std::move(list));
                list = {};
                Use s(st_->insert_message);
                bind_digest(*s, 1, digest);
                sqlite3_bind_int(*s, 2, cls);
                sqlite3_bind_int64(*s, 3, learned_at);
                sqlite3_bind_blob(*s, 4, blob.data(), static_cast<int>(blob.size()), SQLITE_STATIC);
                step(*s, "message " + std::string(f[1]) + " appears twice");
                ++sum.messages;
            } else if (kind == "contact") {
                want_fields(4);
                text_field(1, "address", text);
                text_field(2, "source", text2);
                if (text.empty() || text2.empty()) format_error(name, lineno, "a contact needs an address and a source");
                Use s(insert_contact);
                sqlite3_bind_text(*s, 1, text.data(), static_cast<int>(text.size()), SQLITE_STATIC);
                sqlite3_bind_text(*s, 2, text2.data(), static_cast<int>(text2.size()), SQLITE_STATIC);
                sqlite3_bind_int64(*s, 3, time_field(3, "added at"));
                step(*s, "contact " + text + " appears twice");
                ++sum.contacts;
            } else if (kind == "end") {
                want_fields(4);
                const ModelSummary said{static_cast<std::uint64_t>(count_field(1, "count")),
                                        static_cast<std::uint64_t>(count_field(2, "count")),
                                        static_cast<std::uint64_t>(count_field(3, "count"))};
                if (said.features != sum.features || said.messages != sum.messages || said.contacts != sum.contacts) {
                    format_error(name, lineno, "the 'end' line counts " + std::to_string(said.features) + " features, " +
                                                   std::to_string(said.messages) + " messages and " +
                                                   std::to_string(said.contacts) + " contacts, the file holds " +
                                                   std::to_string(sum.features) + ", " + std::to_string(sum.messages) +
                                                   " and " + std::to_string(sum.contacts));
                }
                for (const int cls : {1, 0}) {
                    if (!seen_class[cls]) format_error(name, lineno, std::string("no 'class ") + (cls == 1 ? "spam" : "ham") + "' record");
                }
                ended = true;
            } else {
                format_error(name, lineno, "unknown record '" + std::string(kind) +
                                               "' (expected class, feature, message, contact or end)");
            }
        }
        if (in.bad()) format_error(name, lineno, "read error");
        if (lineno == 0) format_error(name, 1, "empty file, not a mailsift model export");
        if (!ended) format_error(name, lineno + 1, "no 'end' line: the file is incomplete");
        {
            // The store's promise (class totals are the sums of the feature rows, and each
            // class counts its learned messages) holds for every export; a file that
            // breaks it was edited or damaged, and would score and unlearn wrongly.
            Statement q(db_,
                        "SELECT c.class, c.messages, c.occurrences, c.presences,"
                        " (SELECT coalesce(sum(CASE c.class WHEN 1 THEN spam_occurrences ELSE ham_occurrences END), 0) FROM features),"
                        " (SELECT coalesce(sum(CASE c.class WHEN 1 THEN spam_presences ELSE ham_presences END), 0) FROM features),"
                        " (SELECT count(*) FROM messages m WHERE m.class = c.class)"
                        " FROM classes c ORDER BY c.class DESC",
                        path_);
            int rc;
            while ((rc = sqlite3_step(q.get())) == SQLITE_ROW) {
                const int cls = sqlite3_column_int(q.get(), 0);
                const char* cname = cls == 1 ? "spam" : "ham";
                const struct {
                    const char* what;
                    std::int64_t said, sum;
                    const char* of;
                } checks[] = {
                    {"occurrences", sqlite3_column_int64(q.get(), 2), sqlite3_column_int64(q.get(), 4),
                     "the feature rows' occurrences"},
                    {"presences", sqlite3_column_int64(q.get(), 3), sqlite3_column_int64(q.get(), 5),
                     "the feature rows' presences"},
                    {"messages", sqlite3_column_int64(q.get(), 1), sqlite3_column_int64(q.get(), 6),
                     "the learned 'message' records"},
                };
                for (const auto& c : checks) {
                    if (c.said != c.sum) {
                        format_error(name, class_line[cls],
                                     std::string("class ") + cname + " totals do not match the file: " + c.what + " " +
                                         std::to_string(c.said) + ", but " + c.of + " of class " + cname + " sum to " +
                                         std::to_string(c.sum) + " (nothing imported)");
                    }
                }
            }
            if (rc != SQLITE_DONE) fail(std::string("cannot check the imported totals: ") + error_text());
        }
        log_model_change(nullptr);
        exec("COMMIT");
    } catch (...) {
        sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
        throw;
    }
    return sum;
}

}  // namespace mailsift::store
