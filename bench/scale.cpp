// mailsift-bench-scale — how scoring cost grows with the size of the model, and
// how parse + extract + score cost grows with the size of the message.
//
// usage: mailsift-bench-scale [--corpus DIR]
//
//  (a) Model size: synthetic model::Counts of 10^4 .. 10^7 distinct features
//      (fixed-seed random ids and small counts, plus the real ids of the scored
//      messages' features so lookups hit), compiled to a Snapshot; reports the
//      build time, the growth of VmRSS, and the time to score each of about
//      1000 corpus messages (terms extracted once beforehand).
//  (b) Message size: generated plain-text and multipart (base64 attachment)
//      messages of 1 KiB .. 10 MiB through parse, extract and score against a
//      model trained on the corpus.
//
// When DIR holds no files the committed fixtures under tests/data/ are used
// instead, and the output says so. A benchmark, not a test: it prints numbers.
#include <malloc.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <random>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "bench_corpus.hpp"
#include "mailsift/engine/settings.hpp"
#include "mailsift/features/extractor.hpp"
#include "mailsift/mime/message.hpp"
#include "mailsift/model/naive_bayes.hpp"

namespace {

namespace fs = std::filesystem;
using namespace mailsift;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

using namespace mailsift::bench;

// Labelled files only.
void list_labelled(const fs::path& dir, bool eml_only, std::vector<CorpusFile>& out) {
    std::vector<CorpusFile> all;
    list_files(dir, eml_only, all);
    for (auto& f : all) {
        if (f.label != Label::unknown) out.push_back(std::move(f));
    }
}

// VmRSS (or another "Name:  N kB" line) of /proc/self/status, in bytes.
std::uint64_t proc_status_bytes(const char* field) {
    std::ifstream in("/proc/self/status");
    std::string line;
    const std::size_t n = std::strlen(field);
    while (std::getline(in, line))
        if (line.compare(0, n, field) == 0 && line.size() > n && line[n] == ':')
            return std::strtoull(line.c_str() + n + 1, nullptr, 10) * 1024;
    return 0;
}
std::uint64_t rss_bytes() { return proc_status_bytes("VmRSS"); }

double mib(double bytes) { return bytes / (1024.0 * 1024.0); }

std::vector<model::Term> terms_of(const features::FeatureBag& bag) {
    std::vector<model::Term> terms;
    terms.reserve(bag.size());
    for (const auto& e : bag.entries()) terms.push_back({e.id, e.count, features::is_header_feature(bag.text(e))});
    return terms;
}

double percentile(std::vector<double> v, double p) {
    if (v.empty()) return 0.0;
    std::sort(v.begin(), v.end());
    return v[static_cast<std::size_t>(std::llround(p * static_cast<double>(v.size() - 1)))];
}

double mean(const std::vector<double>& v) {
    double sum = 0.0;
    for (double x : v) sum += x;
    return v.empty() ? 0.0 : sum / static_cast<double>(v.size());
}

// ---- (a) model size ---------------------------------------------------------

// The corpus model's counts (boolean: a feature counts once per message of its
// class) and the terms of ~1000 messages spread evenly over the sorted listing.
struct Prepared {
    model::Counts corpus_counts;
    std::vector<std::vector<model::Term>> sample;
    std::vector<std::string> sample_raw;  // the same messages, for the whole path
};

Prepared prepare(const std::vector<CorpusFile>& files, const engine::Settings& settings,
                 const features::Contacts& contacts, std::size_t sample_size) {
    Prepared out;
    const std::size_t step = std::max<std::size_t>(1, files.size() / sample_size);
    for (std::size_t i = 0; i < files.size(); ++i) {
        const bool spam = files[i].label == Label::spam;
        const std::string raw = read_file(files[i].path);
        const auto parsed = mime::parse(raw, settings.limits);
        const auto bag = features::extract(parsed, nullptr, &contacts, settings.features);
        auto& counts = out.corpus_counts;
        (spam ? counts.messages.spam : counts.messages.ham) += 1;
        for (const auto& e : bag.entries()) {
            auto& c = counts.features[e.id];
            (spam ? c.spam : c.ham) += 1;
            (spam ? counts.feature_totals.spam : counts.feature_totals.ham) += 1;
        }
        if (i % step == 0 && out.sample.size() < sample_size) {
            out.sample.push_back(terms_of(bag));
            out.sample_raw.push_back(raw);
        }
    }
    return out;
}

// The sample's feature ids, the most widespread first, so a model too small for
// all of them still holds the ones most messages look up.
std::vector<model::FeatureId> sample_ids(const std::vector<std::vector<model::Term>>& sample) {
    std::unordered_map<model::FeatureId, std::uint32_t> df;
    for (const auto& terms : sample)
        for (const auto& t : terms) ++df[t.id];
    std::vector<std::pair<model::FeatureId, std::uint32_t>> v(df.begin(), df.end());
    std::sort(v.begin(), v.end(), [](const auto& a, const auto& b) {
        return a.second != b.second ? a.second > b.second : a.first < b.first;
    });
    std::vector<model::FeatureId> ids;
    ids.reserve(v.size());
    for (const auto& [id, n] : v) ids.push_back(id);
    return ids;
}

// `distinct` features: the real ids (as many as fit) and fixed-seed random ids,
// inserted in a shuffled order so the real ones end up scattered through the
// table's memory as they would in a model learned from mail, not packed together.
void synthesize(model::Counts& counts, std::size_t distinct, const std::vector<model::FeatureId>& real,
                const model::ClassCounts& messages) {
    std::mt19937_64 rng(20240601);  // fixed seed: the same model every run
    std::vector<model::FeatureId> ids(real.begin(), real.begin() + static_cast<std::ptrdiff_t>(std::min(distinct, real.size())));
    ids.reserve(distinct);
    while (ids.size() < distinct) ids.push_back(rng());
    std::shuffle(ids.begin(), ids.end(), rng);
    counts.messages = messages;
    counts.features.reserve(distinct);
    auto add = [&](model::FeatureId id) {
        const std::uint64_t r = rng();
        model::ClassCounts c{r % 16, (r >> 8) % 16};
        if (c.spam == 0 && c.ham == 0) c.ham = 1;
        if (counts.features.emplace(id, c).second) {
            counts.feature_totals.spam += c.spam;
            counts.feature_totals.ham += c.ham;
        }
    };
    for (const model::FeatureId id : ids) add(id);
    while (counts.features.size() < distinct) add(rng());  // a random id collided
}

void model_size(const Prepared& prepared, const engine::Settings& settings, const features::Contacts& contacts) {
    const auto real = sample_ids(prepared.sample);
    std::size_t terms_total = 0;
    for (const auto& t : prepared.sample) terms_total += t.size();
    std::printf("\n(a) Model size: scoring %zu corpus messages (%.0f terms each on average, %zu distinct ids).\n"
                "    Every synthetic model holds those ids (the most widespread first when they do not all\n"
                "    fit), inserted in a shuffled order among the random ids. Timed: model::score() per\n"
                "    message, 3 passes over the sample after one warm-up pass. MiB = VmRSS growth.\n\n",
                prepared.sample.size(),
                prepared.sample.empty() ? 0.0 : static_cast<double>(terms_total) / static_cast<double>(prepared.sample.size()),
                real.size());
    std::printf("%10s %10s %12s %12s %12s %14s %8s %10s %10s %10s %11s %11s\n", "features", "counts s", "counts MiB",
                "snapshot s", "snap MiB", "bytes/feature", "hit %", "mean us", "p50 us", "p99 us", "msg mean us",
                "msg p99 us");
    std::vector<std::pair<std::size_t, std::pair<double, double>>> whole_by_size;  // features -> (mean, p99)

    for (const std::size_t distinct : {std::size_t{10'000}, std::size_t{100'000}, std::size_t{1'000'000},
                                       std::size_t{10'000'000}}) {
        malloc_trim(0);
        const std::uint64_t rss0 = rss_bytes();
        auto t0 = Clock::now();
        auto counts = std::make_unique<model::Counts>();
        synthesize(*counts, distinct, real, prepared.corpus_counts.messages);
        const double counts_s = seconds_since(t0);
        const std::uint64_t rss1 = rss_bytes();

        t0 = Clock::now();
        auto snapshot = std::make_unique<model::Snapshot>(*counts, model::Parameters{});
        const double snapshot_s = seconds_since(t0);
        const std::uint64_t rss2 = rss_bytes();
        counts.reset();  // only the snapshot is needed to score
        malloc_trim(0);

        std::size_t lookups = 0, hits = 0;
        double sink = 0.0;
        for (const auto& terms : prepared.sample) {  // warm-up pass, and the hit rate
            for (const auto& t : terms) hits += snapshot->weight(t.id).has_value() ? 1 : 0;
            lookups += terms.size();
            sink += model::score(terms, *snapshot).log_odds;
        }
        std::vector<double> us;
        us.reserve(prepared.sample.size() * 3);
        for (int pass = 0; pass < 3; ++pass) {
            for (const auto& terms : prepared.sample) {
                const auto t = Clock::now();
                const model::Score s = model::score(terms, *snapshot);
                us.push_back(seconds_since(t) * 1e6);
                sink += s.log_odds;
            }
        }
        // The whole classification of each message (parse, extract, score), as mailsiftd does it.
        std::vector<double> whole;
        whole.reserve(prepared.sample_raw.size());
        std::vector<model::Term> terms;
        for (const auto& raw : prepared.sample_raw) {
            const auto t = Clock::now();
            const auto parsed = mime::parse(raw, settings.limits);
            const auto bag = features::extract(parsed, nullptr, &contacts, settings.features);
            terms = terms_of(bag);
            sink += model::score(terms, *snapshot).log_odds;
            whole.push_back(seconds_since(t) * 1e6);
        }
        whole_by_size.push_back({distinct, {mean(whole), percentile(whole, 0.99)}});
        const double snap_bytes = static_cast<double>(rss2) - static_cast<double>(rss1);
        std::printf("%10zu %10.3f %12.1f %12.3f %12.1f %14.1f %8.1f %10.2f %10.2f %10.2f %11.2f %11.2f\n",
                    snapshot->vocabulary(), counts_s, mib(static_cast<double>(rss1) - static_cast<double>(rss0)),
                    snapshot_s, mib(snap_bytes), snap_bytes / static_cast<double>(distinct),
                    lookups ? 100.0 * static_cast<double>(hits) / static_cast<double>(lookups) : 0.0, mean(us),
                    percentile(us, 0.50), percentile(us, 0.99), mean(whole), percentile(whole, 0.99));
        if (std::isnan(sink)) std::printf("(NaN log-odds)\n");
        snapshot.reset();
        malloc_trim(0);
    }
    if (whole_by_size.size() == 4) {
        const auto& [m5, p5] = whole_by_size[1].second;
        const auto& [m7, p7] = whole_by_size[3].second;
        std::printf("\n    whole-message classification, 10^7 vs 10^5 features: mean %.2fx, p99 %.2fx\n", m7 / m5, p7 / p5);
    }
    std::printf("\n    counts: building the synthetic model::Counts; snapshot: model::Snapshot(counts, Parameters{})\n"
                "    while the Counts are alive (freed before scoring); bytes/feature: snapshot bytes per feature\n"
                "    (small models partly reuse freed heap, so their MiB are approximate); hit %%: the sample's\n"
                "    lookups found in the model. Peak VmHWM of the process so far: %.0f MiB.\n",
                mib(static_cast<double>(proc_status_bytes("VmHWM"))));
}

// ---- (b) message size -------------------------------------------------------

constexpr const char* words[] = {
    "the",      "meeting",  "report",   "attached", "please",   "review",   "budget",    "quarter",
    "project",  "schedule", "free",     "offer",    "money",    "click",    "here",      "limited",
    "time",     "winner",   "account",  "update",   "server",   "release",  "patch",     "build",
    "customer", "invoice",  "payment",  "discount", "order",    "shipping", "delivery",  "unsubscribe",
    "mailing",  "list",     "weekly",   "summary",  "thanks",   "regards",  "tomorrow",  "office",
    "security", "password", "verify",   "bank",     "transfer", "urgent",   "important", "information",
    "service",  "network",  "software", "version",  "download", "install",  "support",   "question",
    "answer",   "please",   "contact",  "friend",   "family",   "weekend",  "price",     "guarantee",
};
constexpr std::size_t word_count = sizeof(words) / sizeof(words[0]);

// Lines of about 70 characters of words from the list until `bytes` are written.
void append_words(std::string& out, std::size_t bytes, std::mt19937_64& rng) {
    const std::size_t end = out.size() + bytes;
    std::size_t line = 0;
    while (out.size() < end) {
        const char* w = words[rng() % word_count];
        out += w;
        line += std::strlen(w);
        if (line >= 70) {
            out += "\r\n";
            line = 0;
        } else {
            out += ' ';
            ++line;
        }
    }
    out += "\r\n";
}

void append_base64(std::string& out, std::size_t raw_bytes, std::mt19937_64& rng) {
    static constexpr char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    std::size_t col = 0;
    for (std::size_t i = 0; i < raw_bytes; i += 3) {
        const std::uint64_t r = rng();
        const std::uint32_t v = static_cast<std::uint32_t>(r & 0xFFFFFF);
        const std::size_t n = std::min<std::size_t>(3, raw_bytes - i);
        out += alphabet[(v >> 18) & 63];
        out += alphabet[(v >> 12) & 63];
        out += n > 1 ? alphabet[(v >> 6) & 63] : '=';
        out += n > 2 ? alphabet[v & 63] : '=';
        col += 4;
        if (col >= 76) {
            out += "\r\n";
            col = 0;
        }
    }
    if (col) out += "\r\n";
}

std::string headers(const char* content_type) {
    std::string h;
    h += "From: Sender Example <sender@example.com>\r\n";
    h += "To: recipient@example.org\r\n";
    h += "Subject: Quarterly report and budget review\r\n";
    h += "Date: Mon, 03 Jun 2024 10:00:00 +0000\r\n";
    h += "Message-ID: <bench-scale@example.com>\r\n";
    h += "MIME-Version: 1.0\r\n";
    h += "Content-Type: ";
    h += content_type;
    h += "\r\n\r\n";
    return h;
}

// About `target` bytes of text/plain, words only.
std::string plain_message(std::size_t target) {
    std::mt19937_64 rng(target);
    std::string m = headers("text/plain; charset=us-ascii");
    append_words(m, target > m.size() + 2 ? target - m.size() - 2 : 1, rng);
    return m;
}

// About `target` bytes of multipart/mixed: a short text part (at most 2 KiB)
// and a base64 application/pdf attachment for the rest.
std::string multipart_message(std::size_t target) {
    std::mt19937_64 rng(target + 1);
    const char* boundary = "=_bench_scale_boundary_0123456789";
    std::string m = headers("multipart/mixed; boundary=\"=_bench_scale_boundary_0123456789\"");
    m += "This is a multi-part message in MIME format.\r\n\r\n";
    m += std::string("--") + boundary + "\r\nContent-Type: text/plain; charset=us-ascii\r\n\r\n";
    const std::size_t remaining = target > m.size() + 400 ? target - m.size() - 400 : 64;
    append_words(m, std::min<std::size_t>(2048, remaining / 4 + 1), rng);
    m += std::string("\r\n--") + boundary +
         "\r\nContent-Type: application/pdf; name=\"report.pdf\"\r\n"
         "Content-Transfer-Encoding: base64\r\n"
         "Content-Disposition: attachment; filename=\"report.pdf\"\r\n\r\n";
    const std::size_t tail = std::strlen(boundary) + 8;
    const std::size_t encoded = target > m.size() + tail ? target - m.size() - tail : 4;
    append_base64(m, encoded * 3 / 4 * 76 / 78, rng);  // 76 base64 characters + CRLF per line
    m += std::string("--") + boundary + "--\r\n";
    return m;
}

std::string size_label(std::size_t bytes) {
    if (bytes >= 1024 * 1024) return std::to_string(bytes / (1024 * 1024)) + " MiB";
    return std::to_string(bytes / 1024) + " KiB";
}

void message_size(const model::Snapshot& snapshot, const engine::Settings& settings,
                  const features::Contacts& contacts) {
    std::printf("\n(b) Message size: generated messages through mime::parse, features::extract and model::score\n"
                "    against the corpus model. Median of the repetitions (at least 3, and at least 0.5 s).\n");
    const auto& l = settings.limits;
    std::printf("    Limits applied: max_message_bytes=%zu (default %zu, raised so 10 MiB is parsed whole),\n"
                "    max_depth=%zu, max_parts=%zu, max_headers=%zu, max_header_bytes=%zu; features: defaults\n"
                "    (max_features=%zu per message, max_token_bytes=%zu, word_pairs=%s).\n\n",
                l.max_message_bytes, mime::Limits{}.max_message_bytes, l.max_depth, l.max_parts, l.max_headers,
                l.max_header_bytes, settings.features.max_features, settings.features.max_token_bytes,
                settings.features.word_pairs ? "on" : "off");
    std::printf("%-9s %-8s %11s %5s %9s %10s %10s %10s %10s %10s %9s %s\n", "kind", "nominal", "bytes", "reps",
                "features", "parse ms", "extract ms", "score ms", "total ms", "MiB/s", "msg/s", "limits hit");

    for (const char* kind : {"plain", "multipart"}) {
        for (const std::size_t target : {std::size_t{1} << 10, std::size_t{10} << 10, std::size_t{100} << 10,
                                         std::size_t{1} << 20, std::size_t{10} << 20}) {
            const std::string raw = std::strcmp(kind, "plain") == 0 ? plain_message(target) : multipart_message(target);
            std::vector<double> parse_ms, extract_ms, score_ms, total_ms;
            std::size_t features = 0, limits_hit = 0;
            const auto start = Clock::now();
            std::vector<model::Term> terms;
            while (total_ms.size() < 3 || (seconds_since(start) < 0.5 && total_ms.size() < 100000)) {
                const auto t0 = Clock::now();
                const auto parsed = mime::parse(raw, settings.limits);
                const auto t1 = Clock::now();
                const auto bag = features::extract(parsed, nullptr, &contacts, settings.features);
                const auto t2 = Clock::now();
                terms.clear();
                for (const auto& e : bag.entries())
                    terms.push_back({e.id, e.count, features::is_header_feature(bag.text(e))});
                const model::Score s = model::score(terms, snapshot);
                const auto t3 = Clock::now();
                auto ms = [](Clock::time_point a, Clock::time_point b) {
                    return std::chrono::duration<double, std::milli>(b - a).count();
                };
                parse_ms.push_back(ms(t0, t1));
                extract_ms.push_back(ms(t1, t2));
                score_ms.push_back(ms(t2, t3));
                total_ms.push_back(ms(t0, t3));
                features = bag.size();
                limits_hit = parsed.limits_hit.size();
                if (std::isnan(s.log_odds)) std::printf("(NaN log-odds)\n");
            }
            const double total = percentile(total_ms, 0.5);
            std::printf("%-9s %-8s %11zu %5zu %9zu %10.3f %10.3f %10.3f %10.3f %10.1f %9.0f %s\n", kind,
                        size_label(target).c_str(), raw.size(), total_ms.size(), features,
                        percentile(parse_ms, 0.5), percentile(extract_ms, 0.5), percentile(score_ms, 0.5), total,
                        mib(static_cast<double>(raw.size())) / (total / 1000.0), 1000.0 / total,
                        limits_hit ? "yes" : "none");
        }
    }
}

}  // namespace

int main(int argc, char** argv) {
    fs::path corpus_dir = "../shared/corpus/spamassassin";
    for (int i = 1; i < argc; ++i) {
        if (!take_corpus_option(argc, argv, i, corpus_dir)) {
            std::fprintf(stderr, "usage: mailsift-bench-scale [--corpus DIR]\n");
            return 2;
        }
    }

    engine::Settings settings;  // built-in defaults
    const NoContacts contacts;
    std::vector<CorpusFile> files;
    list_labelled(corpus_dir, false, files);
    std::string source = corpus_dir.string();
    if (files.empty()) {
        const fs::path src = mailsift_source_dir();
        std::fprintf(stderr, "mailsift-bench-scale: no corpus at %s; using the committed fixtures in %s and %s\n",
                     corpus_dir.string().c_str(), (src / "tests/data/messages").string().c_str(),
                     (src / "tests/data/corpus").string().c_str());
        list_labelled(src / "tests/data/messages", true, files);
        list_labelled(src / "tests/data/corpus", true, files);
        source = "fixtures (tests/data/messages, tests/data/corpus)";
    }
    if (files.empty()) {
        std::fprintf(stderr, "mailsift-bench-scale: no labelled messages found\n");
        return 1;
    }

    auto t0 = Clock::now();
    Prepared prepared = prepare(files, settings, contacts, 1000);
    std::printf("mailsift-bench-scale\ncorpus: %s: %zu labelled messages (%llu spam, %llu ham), %zu distinct features;"
                " extracted in %.1f s\nengine settings: built-in defaults (model::Parameters{}, features::Options{},"
                " mime::Limits{})\n",
                source.c_str(), files.size(), static_cast<unsigned long long>(prepared.corpus_counts.messages.spam),
                static_cast<unsigned long long>(prepared.corpus_counts.messages.ham),
                prepared.corpus_counts.features.size(), seconds_since(t0));
    std::fflush(stdout);

    model_size(prepared, settings, contacts);
    std::fflush(stdout);

    const model::Snapshot corpus_model(prepared.corpus_counts, model::Parameters{});
    prepared = Prepared{};
    settings.limits.max_message_bytes = 16 * 1024 * 1024;
    message_size(corpus_model, settings, contacts);
    return 0;
}
