// Score parts: see score_parts.hpp.
#include "mailsift/engine/score_parts.hpp"

#include <algorithm>
#include <charconv>

namespace mailsift::engine {

namespace {

// The indices of up to `n` elements each way, strongest first, of `count`
// weights read by weight(i): two short lists kept sorted as the weights go by
// (n is a handful), nothing else copied.
template <class Weight>
void strongest(std::size_t count, std::size_t n, const Weight& weight, std::vector<std::size_t>& spam,
               std::vector<std::size_t>& ham) {
    struct Kept {
        double weight;
        std::size_t index;
    };
    std::vector<Kept> top_spam, top_ham;
    if (n == 0) return;
    // Once a list is full, a weight must beat its weakest: a bound tested per
    // slot, rarely passed, so the loop is the weight reads and little else.
    double spam_floor = 0.0, ham_ceiling = 0.0;
    auto offer = [n](std::vector<Kept>& list, Kept k, auto stronger) {
        if (list.size() == n) list.pop_back();
        auto at = list.end();
        while (at != list.begin() && stronger(k.weight, (at - 1)->weight)) --at;
        list.insert(at, k);
        return list.size() == n ? list.back().weight : 0.0;
    };
    for (std::size_t i = 0; i < count; ++i) {
        const double w = weight(i);
        if (w > spam_floor) [[unlikely]] {
            spam_floor = offer(top_spam, {w, i}, [](double a, double b) { return a > b; });
        } else if (w < ham_ceiling) [[unlikely]] {
            ham_ceiling = offer(top_ham, {w, i}, [](double a, double b) { return a < b; });
        }
    }
    for (const auto& k : top_spam) spam.push_back(k.index);
    for (const auto& k : top_ham) ham.push_back(k.index);
}

}  // namespace

SlotSplit split_slots(std::span<const SlotWeight> slots, std::size_t n, double total) {
    std::vector<std::size_t> spam, ham;
    strongest(slots.size(), n, [&](std::size_t i) { return slots[i].weight; }, spam, ham);
    SlotSplit s;
    double listed = 0.0;
    for (const auto i : spam) s.toward_spam.push_back(slots[i]), listed += slots[i].weight;
    for (const auto i : ham) s.toward_ham.push_back(slots[i]), listed += slots[i].weight;
    s.others = slots.size() - spam.size() - ham.size();
    s.others_sum = total - listed;
    return s;
}

SlotSplit split_slots(std::span<const model::Slot> slots, const model::LinearModel& linear, std::size_t n,
                      double total) {
    std::vector<std::size_t> spam, ham;
    strongest(slots.size(), n, [&](std::size_t i) { return double{linear.weight(slots[i])}; }, spam, ham);
    SlotSplit s;
    double listed = 0.0;
    for (const auto i : spam) s.toward_spam.push_back({linear.weight(slots[i]), slots[i], {}});
    for (const auto i : ham) s.toward_ham.push_back({linear.weight(slots[i]), slots[i], {}});
    for (const auto* side : {&s.toward_spam, &s.toward_ham}) {
        for (const auto& w : *side) listed += w.weight;
    }
    s.others = slots.size() - spam.size() - ham.size();
    s.others_sum = total - listed;
    return s;
}

namespace {

constexpr std::string_view parts_magic = "mailsift-parts\t1";
constexpr std::size_t longest_text = 80;

// Nine significant digits: the parts still add up to far below what is shown.
void add_number(std::string& out, double v) {
    char buf[32];
    const auto r = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::general, 9);
    out.push_back('\t');
    out.append(buf, r.ptr);
}

void add_text(std::string& out, std::string_view t) {
    std::size_t n = std::min(t.size(), longest_text);
    // Never cut a UTF-8 sequence in two.
    while (n < t.size() && n > 0 && (static_cast<unsigned char>(t[n]) & 0xC0) == 0x80) --n;
    out.push_back('\t');
    for (std::size_t i = 0; i < n; ++i) out.push_back(t[i] == '\t' || t[i] == '\n' || t[i] == '\r' ? ' ' : t[i]);
    if (n < t.size()) out += "...";
}

std::vector<std::string_view> fields(std::string_view line) {
    std::vector<std::string_view> f;
    for (std::size_t start = 0;;) {
        const auto tab = line.find('\t', start);
        f.push_back(line.substr(start, tab == std::string_view::npos ? std::string_view::npos : tab - start));
        if (tab == std::string_view::npos) return f;
        start = tab + 1;
    }
}

template <class T>
bool read(std::string_view s, T& v) {
    const auto r = std::from_chars(s.data(), s.data() + s.size(), v);
    return r.ec == std::errc() && r.ptr == s.data() + s.size();
}

}  // namespace

std::string encode(const ScoreParts& p) {
    std::string out(parts_magic);
    add_number(out, p.log_odds);
    add_number(out, p.prior_log_odds);
    add_number(out, p.nb_log_odds);
    auto reasons = [&](char tag, const std::vector<Reason>& rs) {
        for (const auto& r : rs) {
            out += '\n';
            out += tag;
            add_number(out, r.log_odds);
            out += '\t' + std::to_string(r.counts.spam) + '\t' + std::to_string(r.counts.ham);
            add_text(out, r.feature);
        }
    };
    reasons('+', p.toward_spam);
    reasons('-', p.toward_ham);
    if (const auto& l = p.linear) {
        out += "\nL";
        for (double v : {l->score.bias, l->score.nb_weight, l->score.nb_input, l->score.features, l->nb_log_odds,
                         l->split.others_sum}) {
            add_number(out, v);
        }
        out += '\t' + std::to_string(l->clipped ? 1 : 0) + '\t' + std::to_string(l->slots) + '\t' +
               std::to_string(l->split.others);
        auto slots = [&](char tag, const std::vector<SlotWeight>& ws) {
            for (const auto& w : ws) {
                out += '\n';
                out += tag;
                add_number(out, w.weight);
                out += '\t' + std::to_string(w.slot);
                add_text(out, w.source);
            }
        };
        slots('S', l->split.toward_spam);
        slots('H', l->split.toward_ham);
    }
    return out;
}

std::optional<ScoreParts> decode_score_parts(std::string_view text) {
    if (text.substr(0, parts_magic.size()) != parts_magic) return std::nullopt;
    ScoreParts p;
    std::size_t start = 0;
    bool first = true;
    while (start <= text.size()) {
        const auto nl = text.find('\n', start);
        const std::string_view line = text.substr(start, nl == std::string_view::npos ? std::string_view::npos : nl - start);
        start = nl == std::string_view::npos ? text.size() + 1 : nl + 1;
        const auto f = fields(line);
        if (first) {
            first = false;
            if (f.size() != 5 || !read(f[2], p.log_odds) || !read(f[3], p.prior_log_odds) || !read(f[4], p.nb_log_odds)) {
                return std::nullopt;
            }
            continue;
        }
        if (f[0] == "+" || f[0] == "-") {
            Reason r;
            if (f.size() != 5 || !read(f[1], r.log_odds) || !read(f[2], r.counts.spam) || !read(f[3], r.counts.ham)) {
                return std::nullopt;
            }
            r.feature = std::string(f[4]);
            (f[0] == "+" ? p.toward_spam : p.toward_ham).push_back(std::move(r));
        } else if (f[0] == "L") {
            LinearParts l;
            int clipped = 0;
            if (f.size() != 10 || !read(f[1], l.score.bias) || !read(f[2], l.score.nb_weight) ||
                !read(f[3], l.score.nb_input) || !read(f[4], l.score.features) || !read(f[5], l.nb_log_odds) ||
                !read(f[6], l.split.others_sum) || !read(f[7], clipped) || !read(f[8], l.slots) ||
                !read(f[9], l.split.others)) {
                return std::nullopt;
            }
            l.clipped = clipped != 0;
            p.linear = std::move(l);
        } else if ((f[0] == "S" || f[0] == "H") && p.linear) {
            SlotWeight w;
            if (f.size() != 4 || !read(f[1], w.weight) || !read(f[2], w.slot)) return std::nullopt;
            w.source = std::string(f[3]);
            (f[0] == "S" ? p.linear->split.toward_spam : p.linear->split.toward_ham).push_back(std::move(w));
        } else {
            return std::nullopt;
        }
    }
    return p;
}

}  // namespace mailsift::engine
