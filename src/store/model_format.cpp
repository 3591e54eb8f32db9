// The text format of a model export: writing records, and reading a file
// back with every check, for any backend (model_format.hpp).
#include "model_format.hpp"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <istream>
#include <ostream>
#include <set>
#include <string>
#include <vector>

#include "codec.hpp"

namespace mailsift::store {

namespace {

constexpr const char* export_magic = "mailsift-model";
constexpr int export_version = 4;  // the newest; 3 without a kept refit, 2 without recorded settings, 1 when the linear scorer has learned nothing
constexpr char hex_digits[] = "0123456789abcdef";

// Bytes as lower-case hex digits, two a byte.
void put_hex(std::string& out, std::string_view bytes) {
    for (const char ch : bytes) {
        const auto b = static_cast<unsigned char>(ch);
        out += hex_digits[b >> 4];
        out += hex_digits[b & 0xF];
    }
}

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


}  // namespace

void format_error(const std::string& name, std::uint64_t line, const std::string& what) {
    throw FormatError(name + ":" + std::to_string(line) + ": " + what);
}

// ---- writing ----

ModelWriter::ModelWriter(std::ostream& out, bool linear, std::string_view settings, bool refit) : out_(out) {
    out_ << export_magic << '\t' << (refit ? 4 : !settings.empty() ? 3 : linear ? 2 : 1) << '\n';
    while (!settings.empty()) {
        const std::size_t nl = settings.find('\n');
        const std::string_view line = settings.substr(0, nl);
        settings.remove_prefix(nl == std::string_view::npos ? settings.size() : nl + 1);
        const std::size_t eq = line.find(" = ");
        if (eq == std::string_view::npos) continue;  // the store writes none such
        line_.assign("setting\t");
        put_escaped(line_, line.substr(0, eq));
        line_ += '\t';
        put_escaped(line_, line.substr(eq + 3));
        line_ += '\n';
        out_ << line_;
    }
}

void ModelWriter::linear_state(const LinearWeights& w) {
    char bias[40], nb[40];
    std::snprintf(bias, sizeof bias, "%.17g", w.bias);
    std::snprintf(nb, sizeof nb, "%.17g", w.nb_weight);
    out_ << "linear\t" << w.hash_bits << '\t' << bias << '\t' << nb << '\t' << w.seen_spam << '\t' << w.seen_ham << '\n';
}

void ModelWriter::linear_page(std::uint32_t number, std::string_view page) {
    line_.assign("linear-page\t");
    line_ += std::to_string(number);
    line_ += '\t';
    put_hex(line_, page);
    line_ += '\n';
    out_ << line_;
}

void ModelWriter::linear_refit(const RefitLayer& layer) {
    char bias[40], nb[40];
    std::snprintf(bias, sizeof bias, "%.17g", layer.bias);
    std::snprintf(nb, sizeof nb, "%.17g", layer.nb_weight);
    line_.assign("linear-refit\t");
    line_ += std::to_string(layer.hash_bits);
    line_ += '\t';
    line_ += bias;
    line_ += '\t';
    line_ += nb;
    line_ += '\t';
    put_hex(line_, encode_slot_deltas(layer.slots));
    line_ += '\n';
    out_ << line_;
}

void ModelWriter::linear_message(const Digest& digest, Class c) {
    line_.assign("linear-message\t");
    for (const std::uint8_t b : digest) {
        line_ += hex_digits[b >> 4];
        line_ += hex_digits[b & 0xF];
    }
    line_ += c == Class::spam ? "\tspam\n" : "\tham\n";
    out_ << line_;
}

void ModelWriter::linear_sample(Class c, std::uint64_t position, const Digest& digest, std::string_view prefix) {
    line_.assign("linear-sample\t");
    line_ += c == Class::spam ? "spam\t" : "ham\t";
    line_ += std::to_string(position);
    line_ += '\t';
    for (const std::uint8_t b : digest) {
        line_ += hex_digits[b >> 4];
        line_ += hex_digits[b & 0xF];
    }
    line_ += '\t';
    put_escaped(line_, prefix);
    line_ += '\n';
    out_ << line_;
}

void ModelWriter::class_totals(Class c, std::int64_t messages, std::int64_t occurrences, std::int64_t presences) {
    out_ << "class\t" << to_string(c) << '\t' << messages << '\t' << occurrences << '\t' << presences << '\n';
}

void ModelWriter::feature(const FeatureRecord& f) {
    line_.assign("feature\t");
    put_hex64(line_, f.id);
    for (const std::int64_t n : f.counts) {
        line_ += '\t';
        line_ += std::to_string(n);
    }
    line_ += '\t';
    line_ += std::to_string(f.last_seen);
    line_ += '\t';
    put_escaped(line_, f.text);
    line_ += '\n';
    out_ << line_;
    ++sum_.features;
}

bool ModelWriter::message(const Digest& digest, Class c, std::int64_t learned_at, std::string_view blob) {
    line_.assign("message\t");
    for (const std::uint8_t b : digest) {
        line_ += hex_digits[b >> 4];
        line_ += hex_digits[b & 0xF];
    }
    line_ += c == Class::spam ? "\tspam\t" : "\tham\t";
    line_ += std::to_string(learned_at);
    line_ += '\t';
    std::size_t i = 0;
    model::FeatureId id = 0;
    std::uint64_t delta = 0, n = 0;
    bool first = true;
    while (i < blob.size()) {
        if (!get_varint(blob, i, delta) || !get_varint(blob, i, n)) return false;
        id += delta;
        if (!first) line_ += ',';
        first = false;
        put_hex64(line_, id);
        line_ += ':';
        line_ += std::to_string(n);
    }
    line_ += '\n';
    out_ << line_;
    ++sum_.messages;
    return true;
}

void ModelWriter::contact(std::string_view address, std::string_view source, std::int64_t added_at) {
    line_.assign("contact\t");
    put_escaped(line_, address);
    line_ += '\t';
    put_escaped(line_, source);
    line_ += '\t';
    line_ += std::to_string(added_at);
    line_ += '\n';
    out_ << line_;
    ++sum_.contacts;
}

ModelSummary ModelWriter::end() {
    out_ << "end\t" << sum_.features << '\t' << sum_.messages << '\t' << sum_.contacts << '\n';
    return sum_;
}

// ---- reading ----

ModelSummary read_model(std::istream& in, const std::string& name, ModelSink& sink) {
    ModelSummary sum;
    std::string line, text, text2;
    std::uint64_t lineno = 0;
    bool seen_class[2] = {false, false};
    std::uint64_t class_line[2] = {0, 0};
    std::int64_t class_said[2][3] = {{0, 0, 0}, {0, 0, 0}};  // messages, occurrences, presences
    // What the file's rows add up to, to check the class totals against; wide enough never to overflow.
    __int128 occurrences[2] = {0, 0}, presences[2] = {0, 0};
    std::int64_t messages[2] = {0, 0};
    bool ended = false;
    int version = 1;
    unsigned linear_bits = 0;  // 0: no 'linear' record yet
    bool refit_seen = false;
    std::string settings;      // the 'setting' records, as "name = value" lines
    std::set<std::string> setting_names;
    std::vector<std::pair<model::FeatureId, std::uint32_t>> list;
    const auto max_count = static_cast<std::uint64_t>(INT64_MAX);
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
            if (f[1] != "1" && f[1] != "2" && f[1] != "3" && f[1] != "4") {
                format_error(name, lineno, "format version '" + std::string(f[1]) + "' is not supported (this mailsift reads " +
                                               "1 to " + std::to_string(export_version) + ")");
            }
            version = f[1][0] - '0';
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
        auto real = [&](std::size_t i) {
            const std::string v(f[i]);
            char* end = nullptr;
            const double d = std::strtod(v.c_str(), &end);
            if (v.empty() || end != v.c_str() + v.size() || !std::isfinite(d)) {
                format_error(name, lineno, "'" + v + "' is not a finite number");
            }
            return d;
        };
        // Field i as lower-case hex digits, decoded into `text`.
        auto hex_field = [&](std::size_t i, const char* what) {
            const std::string_view hex = f[i];
            if (hex.size() % 2 != 0) format_error(name, lineno, std::string(what) + " are not whole bytes of hex");
            text.clear();
            for (std::size_t k = 0; k < hex.size(); k += 2) {
                const int hi = hex_value(hex[k]), lo = hex_value(hex[k + 1]);
                if (hi < 0 || lo < 0) format_error(name, lineno, std::string(what) + " are lower-case hex digits only");
                text.push_back(static_cast<char>(hi * 16 + lo));
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
            for (int k = 0; k < 3; ++k) class_said[cls][k] = count_field(static_cast<std::size_t>(k + 2), "count");
            sink.class_totals(cls == 1 ? Class::spam : Class::ham, class_said[cls][0], class_said[cls][1], class_said[cls][2]);
        } else if (kind == "feature") {
            want_fields(8);
            std::uint64_t id = 0;
            if (!parse_hex64(f[1], id)) format_error(name, lineno, "feature id '" + std::string(f[1]) + "' is not 16 hex digits");
            FeatureRecord r;
            r.id = id;
            for (std::size_t k = 0; k < 4; ++k) r.counts[k] = count_field(k + 2, "count");
            r.last_seen = time_field(6, "last seen");
            text_field(7, "feature text", text);
            r.text = text;
            occurrences[1] += r.counts[0];
            occurrences[0] += r.counts[1];
            presences[1] += r.counts[2];
            presences[0] += r.counts[3];
            if (!sink.feature(r, lineno)) format_error(name, lineno, "feature " + std::string(f[1]) + " appears twice");
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
            ++messages[cls];
            if (!sink.message(digest, cls == 1 ? Class::spam : Class::ham, learned_at, blob, lineno)) {
                format_error(name, lineno, "message " + std::string(f[1]) + " appears twice");
            }
            ++sum.messages;
        } else if (kind == "contact") {
            want_fields(4);
            text_field(1, "address", text);
            text_field(2, "source", text2);
            if (text.empty() || text2.empty()) format_error(name, lineno, "a contact needs an address and a source");
            if (!sink.contact(text, text2, time_field(3, "added at"), lineno)) {
                format_error(name, lineno, "contact " + text + " appears twice");
            }
            ++sum.contacts;
        } else if (version >= 3 && kind == "setting") {
            want_fields(3);
            text_field(1, "setting name", text);
            text_field(2, "setting value", text2);
            if (text.empty() || text.find('=') != std::string::npos || text.find('\n') != std::string::npos ||
                text2.find('\n') != std::string::npos) {
                format_error(name, lineno, "a setting needs a name without '=' and a one-line value");
            }
            if (!setting_names.insert(text).second) format_error(name, lineno, "setting " + text + " appears twice");
            settings += text + " = " + text2 + "\n";
        } else if (version >= 2 && kind == "linear") {
            want_fields(6);
            if (linear_bits != 0) format_error(name, lineno, "a second 'linear' record");
            LinearWeights w;
            const std::int64_t bits = count_field(1, "hash bits");
            if (bits < 10 || bits > 24) format_error(name, lineno, "hash bits " + std::string(f[1]) + " is not from 10 to 24");
            w.hash_bits = static_cast<unsigned>(bits);
            w.bias = real(2);
            w.nb_weight = real(3);
            w.seen_spam = static_cast<std::uint64_t>(count_field(4, "count"));
            w.seen_ham = static_cast<std::uint64_t>(count_field(5, "count"));
            linear_bits = w.hash_bits;
            sink.linear_state(w);
        } else if (version >= 2 && kind == "linear-page") {
            want_fields(3);
            if (linear_bits == 0) format_error(name, lineno, "a 'linear-page' record before the 'linear' record");
            const std::int64_t number = count_field(1, "page");
            if (static_cast<std::uint64_t>(number) >= (std::uint64_t{1} << linear_bits) / linear_page_slots) {
                format_error(name, lineno, "page " + std::string(f[1]) + " is beyond 2^" + std::to_string(linear_bits) + " weights");
            }
            if (f[2].size() != linear_page_slots * 8) {
                format_error(name, lineno, "a page is " + std::to_string(linear_page_slots * 8) + " hex digits, this one " +
                                               std::to_string(f[2].size()));
            }
            hex_field(2, "a page's weights");
            std::vector<float> weights;
            decode_linear_page(text, weights);
            for (const float x : weights) {
                if (!std::isfinite(x)) format_error(name, lineno, "a weight that is not a finite number");
            }
            if (!sink.linear_page(static_cast<std::uint32_t>(number), text, lineno)) {
                format_error(name, lineno, "page " + std::string(f[1]) + " appears twice");
            }
        } else if (version >= 4 && kind == "linear-refit") {
            want_fields(5);
            if (linear_bits == 0) format_error(name, lineno, "a 'linear-refit' record before the 'linear' record");
            if (refit_seen) format_error(name, lineno, "a second 'linear-refit' record");
            refit_seen = true;
            RefitLayer layer;
            const std::int64_t bits = count_field(1, "hash bits");
            if (bits != static_cast<std::int64_t>(linear_bits)) {
                format_error(name, lineno, "the last refit has 2^" + std::string(f[1]) + " weights, the 'linear' record 2^" +
                                               std::to_string(linear_bits));
            }
            layer.hash_bits = linear_bits;
            layer.bias = real(2);
            layer.nb_weight = real(3);
            hex_field(4, "the last refit's slot deltas");
            if (!decode_slot_deltas(text, std::size_t{1} << linear_bits, layer.slots)) {
                format_error(name, lineno, "the last refit's slot deltas are damaged or beyond 2^" + std::to_string(linear_bits) +
                                               " weights");
            }
            for (const auto& d : layer.slots) {
                if (!std::isfinite(d.delta)) format_error(name, lineno, "a last-refit delta that is not a finite number");
            }
            sink.linear_refit(layer);
        } else if (version >= 2 && kind == "linear-sample") {
            want_fields(5);
            const int cls = class_field(1);
            const std::int64_t position = count_field(2, "position");
            Digest digest{};
            if (!parse_digest(f[3], digest)) format_error(name, lineno, "digest '" + std::string(f[3]) + "' is not 32 hex digits");
            text_field(4, "sample", text);
            if (!sink.linear_sample(cls == 1 ? Class::spam : Class::ham, static_cast<std::uint64_t>(position), digest,
                                    encode_linear_sample(text), lineno)) {
                format_error(name, lineno, "sample " + std::string(f[1]) + " " + std::string(f[2]) + " appears twice");
            }
        } else if (version >= 2 && kind == "linear-message") {
            want_fields(3);
            Digest digest{};
            if (!parse_digest(f[1], digest)) format_error(name, lineno, "digest '" + std::string(f[1]) + "' is not 32 hex digits");
            const int cls = class_field(2);
            if (!sink.linear_message(digest, cls == 1 ? Class::spam : Class::ham, lineno)) {
                format_error(name, lineno, "linear message " + std::string(f[1]) + " appears twice");
            }
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
                                           "' (expected class, feature, message, contact" +
                                           (version >= 3 ? ", setting" : "") +
                                           (version >= 2 ? ", linear, linear-page, linear-sample, linear-message" : "") +
                                           (version >= 4 ? ", linear-refit" : "") + " or end)");
        }
    }
    if (in.bad()) format_error(name, lineno, "read error");
    if (lineno == 0) format_error(name, 1, "empty file, not a mailsift model export");
    if (!ended) format_error(name, lineno + 1, "no 'end' line: the file is incomplete");
    if (!settings.empty()) sink.model_settings(settings);
    sink.flush();
    // The store's promise (class totals are the sums of the feature rows, and each
    // class counts its learned messages) holds for every export; a file that
    // breaks it was edited or damaged, and would score and unlearn wrongly.
    auto text_of = [](__int128 v) {
        if (v <= INT64_MAX) return std::to_string(static_cast<std::int64_t>(v));
        return std::string("more than ") + std::to_string(INT64_MAX);
    };
    for (const int cls : {1, 0}) {
        const char* cname = cls == 1 ? "spam" : "ham";
        const struct {
            const char* what;
            std::int64_t said;
            __int128 sum;
            const char* of;
        } checks[] = {
            {"occurrences", class_said[cls][1], occurrences[cls], "the feature rows' occurrences"},
            {"presences", class_said[cls][2], presences[cls], "the feature rows' presences"},
            {"messages", class_said[cls][0], messages[cls], "the learned 'message' records"},
        };
        for (const auto& c : checks) {
            if (c.said != c.sum) {
                format_error(name, class_line[cls],
                             std::string("class ") + cname + " totals do not match the file: " + c.what + " " +
                                 std::to_string(c.said) + ", but " + c.of + " of class " + cname + " sum to " +
                                 text_of(c.sum) + " (nothing imported)");
            }
        }
    }
    return sum;
}

}  // namespace mailsift::store
