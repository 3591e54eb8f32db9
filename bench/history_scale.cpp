// mailsift-bench-history — the console's history searches on a history of a
// provider's size (issue 41, item 10: first page <= 100 ms p95, count <= 1 s).
//
// usage: mailsift-bench-history STORE [--lines N] [--reps R] [--fill-only | --no-fill]
//
//   STORE   an SQLite file or a postgresql:// URI (bench/history_scale.sh makes both)
//   N       synthetic lines written first (default 1,000,000), through the
//           store's own Database::record, 10,000 a transaction, as the recorder
//           writes them (explanations compressed as it does)
//   R       timed runs of each first page (default 20; counts get 3)
//
// The lines: 14 days (signature_days) of mail, times ascending as recorded;
// 40,000 senders and 5,000 recipients drawn with a long tail (a few send or
// receive most); 62% ham, 8% unsure, 28% spam, 2% let through unscored, each
// with a probability of its verdict; Postfix-like queue IDs, unique
// Message-IDs, subjects of 3-6 words of a 2,000-word vocabulary; an explanation
// of ~900 B as engine::encode writes one. Then, for every filter the console
// has (and one contains-filter that matches nothing: the worst case, a whole
// scan) and every order, the first page (limit 100, no explanations, as the
// console asks) p50 and p95, and the count (p50 of 3). Finally the expiry: a
// batch of 2,000 of the oldest lines (the recorder's), timed. A benchmark: it prints numbers,
// it does not pass or fail.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "mailsift/store/database.hpp"

using namespace mailsift;
using Clock = std::chrono::steady_clock;
using Order = store::HistoryQuery::Order;

namespace {

constexpr std::int64_t start_at = 1790000000;  // a fixed time: runs compare
constexpr std::int64_t span = 14 * 86400;

std::string word(std::uint32_t n) {
    static const char* const syl[] = {"ka", "lo", "mi", "ne", "ru", "sta", "ber", "don", "fi", "gal",
                                      "ho", "jen", "tor", "vex", "quo", "pri", "zel", "am", "ost", "ul"};
    std::string w;
    for (int k = 0; k < 3; ++k, n /= 20) w += syl[n % 20];
    return w;
}

// A long tail: index in [0, n), small ones far likelier.
std::uint32_t tail(std::mt19937_64& g, std::uint32_t n) {
    const double u = std::uniform_real_distribution<double>(0.0, 1.0)(g);
    return static_cast<std::uint32_t>(std::pow(u, 3.0) * n) % n;
}

std::string sender(std::uint32_t s) { return "<" + word(s) + std::to_string(s % 97) + "@" + word(s / 7 + 11) + ".example>"; }
std::string recipient(std::uint32_t r) { return "<" + word(r + 300) + "." + word(r / 3) + "@corp.example>"; }
std::string queue_id(std::uint64_t n) {
    char b[16];
    std::snprintf(b, sizeof b, "%011llX", static_cast<unsigned long long>(n * 0x9E3779B1ull % 0xFFFFFFFFFFull));
    return b;
}
std::string message_id(std::uint64_t n) { return "<" + std::to_string(n * 7919 + 12345) + "." + queue_id(n) + "@mx" + std::to_string(n % 9) + ".example.net>"; }

std::string explanation(std::mt19937_64& g, const std::string& subject) {
    std::uniform_real_distribution<double> w(-3.0, 3.0);
    char b[64];
    std::string t = "mailsift-parts\t1";
    for (int i = 0; i < 3; ++i) std::snprintf(b, sizeof b, "\t%.9g", w(g)), t += b;
    for (int i = 0; i < 16; ++i) {
        std::snprintf(b, sizeof b, "\n%c\t%.9g\t%u\t%u\t", i < 8 ? '+' : '-', w(g), static_cast<unsigned>(g() % 900),
                      static_cast<unsigned>(g() % 900));
        t += b;
        t += i == 0 ? "subject:" + subject.substr(0, 20) : "w:" + word(tail(g, 3000));
    }
    t += "\nL\t-0.5\t1.25\t-2.7\t-3.125\t-9.1\t0.42\t0\t812\t772";
    for (int i = 0; i < 6; ++i) {
        std::snprintf(b, sizeof b, "\n%c\t%.9g\t%u\t", i < 3 ? 'S' : 'H', w(g), static_cast<unsigned>(g() % 1048576));
        t += b;
        t += "\"" + word(tail(g, 3000)).substr(0, 4) + "\" in body";
    }
    return t;
}

void fill(store::Database& db, std::size_t lines) {
    std::mt19937_64 g(41);
    const auto t0 = Clock::now();
    constexpr std::size_t per = 10000;
    for (std::size_t done = 0; done < lines;) {
        store::Recording r;
        for (std::size_t k = 0; k < per && done < lines; ++k, ++done) {
            store::HistoryEntry e;
            e.scanned_at = start_at + static_cast<std::int64_t>(done) * span / static_cast<std::int64_t>(lines);
            const std::uint32_t v = static_cast<std::uint32_t>(g() % 100);
            e.scored = v >= 2;
            e.verdict = v < 64 ? model::Verdict::ham : v < 72 ? model::Verdict::unsure : model::Verdict::spam;
            std::uniform_real_distribution<double> p(0.0, 1.0);
            const double u = p(g);
            e.probability = !e.scored ? 0.0 : e.verdict == model::Verdict::ham ? u * u * 0.2
                            : e.verdict == model::Verdict::spam ? 1.0 - u * u * 0.1 : 0.3 + 0.5 * u;
            if (e.scored) {
                store::Digest d{};
                const std::uint64_t x = g(), y = g();
                std::memcpy(d.data(), &x, 8);
                std::memcpy(d.data() + 8, &y, 8);
                e.signature = d;
            }
            e.action = !e.scored ? "skipped" : e.verdict == model::Verdict::spam ? (u < 0.05 ? "tagged" : "rejected")
                                                                                  : "accepted";
            if (!e.scored) e.reason = "too large";
            const std::uint32_t s = tail(g, 40000);
            e.sender = sender(s);
            e.from = "\"" + word(s) + "\" " + e.sender;
            e.recipients = recipient(tail(g, 5000));
            e.to = e.recipients;
            const int words = 3 + static_cast<int>(g() % 4);
            for (int i = 0; i < words; ++i) e.subject += (i ? " " : "") + word(tail(g, 2000));
            e.message_id = message_id(done);
            e.queue_id = queue_id(done);
            e.client_address = "192.0.2." + std::to_string(s % 250);
            e.helo = "mx" + std::to_string(s % 250) + ".example";
            e.size = 2000 + g() % 40000;
            if (e.scored) e.explanation = explanation(g, e.subject);
            r.history.push_back(std::move(e));
        }
        db.record(r);
        if (done % 100000 == 0) {
            std::fprintf(stderr, "  %zu lines, %.0f s\n", done,
                         std::chrono::duration<double>(Clock::now() - t0).count());
        }
    }
    std::printf("filled %zu lines in %.1f s\n", lines, std::chrono::duration<double>(Clock::now() - t0).count());
}

double ms(Clock::time_point a) { return std::chrono::duration<double, std::milli>(Clock::now() - a).count(); }

double pct(std::vector<double> v, double p) {
    std::sort(v.begin(), v.end());
    const std::size_t i = static_cast<std::size_t>(std::ceil(p * static_cast<double>(v.size()))) - 1;
    return v[std::min(i, v.size() - 1)];
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 2) {
        std::fprintf(stderr, "usage: %s STORE [--lines N] [--reps R] [--fill-only | --no-fill]\n", argv[0]);
        return 2;
    }
    const std::string location = argv[1];
    std::size_t lines = 1000000;
    int reps = 20;
    bool do_fill = true, only_fill = false;
    for (int i = 2; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "--lines" && i + 1 < argc) lines = std::stoul(argv[++i]);
        else if (a == "--reps" && i + 1 < argc) reps = std::stoi(argv[++i]);
        else if (a == "--no-fill") do_fill = false;
        else if (a == "--fill-only") only_fill = true;
        else return std::fprintf(stderr, "unknown argument %s\n", a.c_str()), 2;
    }
    auto db = store::open(location, store::Database::Mode::read_write);
    if (do_fill) fill(*db, lines);
    if (only_fill) return 0;

    // The values searched: what an administrator would look for among these lines.
    struct Case {
        const char* name;
        store::HistoryQuery q;
    };
    std::vector<Case> cases;
    auto add = [&](const char* name, auto set) {
        store::HistoryQuery q;
        set(q);
        cases.push_back({name, q});
    };
    add("none", [](store::HistoryQuery&) {});
    add("verdict=spam", [](store::HistoryQuery& q) { q.verdict = model::Verdict::spam; });
    add("verdict=unsure", [](store::HistoryQuery& q) { q.verdict = model::Verdict::unsure; });
    add("action=tagged", [](store::HistoryQuery& q) { q.action = "tagged"; });
    add("q=<common sender>", [](store::HistoryQuery& q) { q.text = word(3) + "3@"; });
    add("q=<word>", [](store::HistoryQuery& q) { q.text = word(1500); });
    add("sender=<common>", [](store::HistoryQuery& q) { q.sender = word(3) + "3@"; });
    add("sender=<rare>", [](store::HistoryQuery& q) { q.sender = word(35000) + std::to_string(35000 % 97) + "@"; });
    add("sender=<absent>", [](store::HistoryQuery& q) { q.sender = "nobody@nowhere.invalid"; });
    add("recipient=<user>", [](store::HistoryQuery& q) { q.recipient = word(1000 + 300) + "." + word(1000 / 3); });
    add("subject=<word>", [](store::HistoryQuery& q) { q.subject = word(1200); });
    add("queue_id", [&](store::HistoryQuery& q) { q.queue_id = queue_id(lines / 2); });
    add("message_id", [&](store::HistoryQuery& q) { q.message_id = message_id(lines / 3); });
    add("since/until 1 day", [](store::HistoryQuery& q) {
        q.since = start_at + 6 * 86400;
        q.before = start_at + 7 * 86400;
    });
    std::printf("%-22s %-10s %9s %9s %7s %10s\n", "filter", "order", "page p50", "page p95", "rows", "count p50");
    const std::pair<Order, const char*> orders[] = {
        {Order::newest, "newest"}, {Order::oldest, "oldest"}, {Order::spammiest, "spammiest"}, {Order::hammiest, "hammiest"}};
    for (const auto& c : cases) {
        for (const auto& [order, oname] : orders) {
            store::HistoryQuery q = c.q;
            q.order = order;
            q.limit = 100;
            std::vector<double> page;
            std::size_t rows = 0;
            for (int r = 0; r < std::max(reps, 1); ++r) {
                const auto t = Clock::now();
                rows = db->history(q).size();
                page.push_back(ms(t));
                if (r == 2 && pct(page, 0.5) > 1000) break;  // a whole scan each time: three tell it
            }
            // The count does not depend on the order, but for the probability
            // orders leaving out skipped lines: counted for newest and spammiest.
            static std::vector<double> count;
            static std::uint64_t n = 0;
            if (order == Order::newest || order == Order::spammiest) count.clear();
            for (int r = 0; count.size() < 3; ++r) {
                const auto t = Clock::now();
                n = db->history_count(q);
                count.push_back(ms(t));
            }
            std::printf("%-22s %-10s %7.1f ms %7.1f ms %7zu %7.0f ms  (%llu lines)\n", c.name, oname, pct(page, 0.5),
                        pct(page, 0.95), rows, pct(count, 0.5), static_cast<unsigned long long>(n));
            std::fflush(stdout);
        }
    }
    // Expiry: the recorder's batch of the oldest lines, a few times (it holds the write lock meanwhile).
    std::vector<double> batch;
    for (int r = 0; r < 5; ++r) {
        const auto t = Clock::now();
        const auto p = db->prune_scans(start_at + span / 2, 2000);
        batch.push_back(ms(t));
        if (p.lines == 0) break;
    }
    std::printf("expiry batch of 2,000 lines: p50 %.0f ms, max %.0f ms\n", pct(batch, 0.5), pct(batch, 1.0));
    return 0;
}
