// mailsift-bench-micro — Google Benchmark timings of one message through each
// stage of the pipeline: MIME parse, feature extraction, scoring, and the three
// together; and the linear scorer's stages (its slots: byte 4-grams and the
// bag's features; its score over them), for three corpus messages chosen by size (10th percentile, median,
// 99th percentile of the sorted corpus listing).
//
// usage: mailsift-bench-micro [--corpus DIR] [Google Benchmark flags...]
//
// The model scored against is trained in memory on every labelled message of
// the corpus (boolean counts, default parameters). When DIR holds no files the
// committed fixtures under tests/data/ are used instead, and stderr says so.
// A benchmark, not a test: it prints numbers.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "bench_corpus.hpp"
#include "mailsift/engine/settings.hpp"
#include "mailsift/features/extractor.hpp"
#include "mailsift/features/slots.hpp"
#include "mailsift/mime/message.hpp"
#include "mailsift/model/linear.hpp"
#include "mailsift/model/naive_bayes.hpp"

namespace {

namespace fs = std::filesystem;
using namespace mailsift;

using namespace mailsift::bench;

struct Corpus {
    std::string description;
    std::vector<CorpusFile> files;  // sorted by path
};


Corpus load_corpus(const fs::path& dir) {
    Corpus c;
    list_files(dir, false, c.files);
    if (!c.files.empty()) {
        c.description = dir.string();
        return c;
    }
    const fs::path src = mailsift_source_dir();
    std::fprintf(stderr, "mailsift-bench-micro: no corpus at %s; using the committed fixtures in %s and %s\n",
                 dir.string().c_str(), (src / "tests/data/messages").string().c_str(),
                 (src / "tests/data/corpus").string().c_str());
    list_files(src / "tests/data/messages", true, c.files);
    list_files(src / "tests/data/corpus", true, c.files);
    c.description = "fixtures (tests/data/messages, tests/data/corpus)";
    return c;
}

std::vector<model::Term> terms_of(const features::FeatureBag& bag) {
    std::vector<model::Term> terms;
    terms.reserve(bag.size());
    for (const auto& e : bag.entries()) terms.push_back({e.id, e.count, features::is_header_feature(bag.text(e))});
    return terms;
}

// Boolean counts: a feature counts once per message of its class.
model::Counts train(const Corpus& corpus, const engine::Settings& settings, const features::Contacts& contacts) {
    model::Counts counts;
    for (const auto& f : corpus.files) {
        if (f.label == Label::unknown) continue;
        const bool spam = f.label == Label::spam;
        const std::string raw = read_file(f.path);
        const auto parsed = mime::parse(raw, settings.limits);
        const auto bag = features::extract(parsed, nullptr, &contacts, settings.features);
        (spam ? counts.messages.spam : counts.messages.ham) += 1;
        for (const auto& e : bag.entries()) {
            auto& c = counts.features[e.id];
            (spam ? c.spam : c.ham) += 1;
            (spam ? counts.feature_totals.spam : counts.feature_totals.ham) += 1;
        }
    }
    return counts;
}

struct Chosen {
    std::string tag;  // "p10", "p50", "p99"
    CorpusFile file;
    std::string raw;
    mime::ParsedMessage parsed;
    features::FeatureBag bag;
    std::vector<model::Term> terms;
};

// Every benchmark reports the message's bytes and one item (message) per iteration.
void account(benchmark::State& state, const Chosen& m) {
    state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) * static_cast<std::int64_t>(m.raw.size()));
    state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()));
    state.counters["msg_bytes"] = static_cast<double>(m.raw.size());
    state.counters["features"] = static_cast<double>(m.bag.size());
}

}  // namespace

int main(int argc, char** argv) {
    fs::path corpus_dir = "../shared/corpus/spamassassin";
    // --corpus is ours; everything else goes to Google Benchmark.
    int kept = 1;
    for (int i = 1; i < argc; ++i) {
        if (!take_corpus_option(argc, argv, i, corpus_dir)) argv[kept++] = argv[i];
    }
    argc = kept;
    argv[argc] = nullptr;

    benchmark::Initialize(&argc, argv);
    if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 2;

    static const engine::Settings settings;  // built-in defaults: limits, feature options
    static const NoContacts contacts;
    static const Corpus corpus = load_corpus(corpus_dir);
    if (corpus.files.empty()) {
        std::fprintf(stderr, "mailsift-bench-micro: no messages found\n");
        return 1;
    }

    const model::Counts counts = train(corpus, settings, contacts);
    // The linear scorer trained by one pass over the corpus, so that its table
    // is written memory (an untouched one reads the zero page, all in cache).
    static model::LinearModel trained_linear(settings.linear);
    {
        std::vector<model::Slot> slots;
        for (const auto& f : corpus.files) {
            if (f.label == Label::unknown) continue;
            const std::string raw = read_file(f.path);
            const auto bag = features::extract(mime::parse(raw, settings.limits), nullptr, &contacts, settings.features);
            features::message_slots(raw, bag, settings.slots, slots);
            trained_linear.learn(slots, 0.0, f.label == Label::spam);
        }
    }
    static const model::LinearModel& linear = trained_linear;
    static const model::Snapshot snapshot(counts, model::Parameters{});
    std::fprintf(stderr, "corpus: %s: %zu files; model: %llu spam + %llu ham messages, %zu features\n",
                 corpus.description.c_str(), corpus.files.size(),
                 static_cast<unsigned long long>(snapshot.messages().spam),
                 static_cast<unsigned long long>(snapshot.messages().ham), snapshot.vocabulary());

    // Percentiles of the size distribution; ties in size broken by path, so the choice is stable.
    std::vector<const CorpusFile*> by_size;
    for (const auto& f : corpus.files) by_size.push_back(&f);
    std::stable_sort(by_size.begin(), by_size.end(),
                     [](const CorpusFile* a, const CorpusFile* b) { return a->size < b->size; });
    static std::vector<Chosen> chosen;
    chosen.reserve(3);
    for (const auto& [tag, p] : {std::pair{"p10", 0.10}, std::pair{"p50", 0.50}, std::pair{"p99", 0.99}}) {
        const auto idx = static_cast<std::size_t>(std::llround(p * static_cast<double>(by_size.size() - 1)));
        Chosen c;
        c.tag = tag;
        c.file = *by_size[idx];
        c.raw = read_file(c.file.path);
        c.parsed = mime::parse(c.raw, settings.limits);
        c.bag = features::extract(c.parsed, nullptr, &contacts, settings.features);
        c.terms = terms_of(c.bag);
        std::fprintf(stderr, "%s: %s (%zu bytes, %zu features)\n", tag, c.file.path.string().c_str(), c.raw.size(),
                     c.bag.size());
        chosen.push_back(std::move(c));
    }

    // The linear scorer over every corpus message in turn: its table probes miss
    // the cache as they would in the daemon, which one message repeated hides.
    struct Prepared {
        std::string raw;
        features::FeatureBag bag;
        std::vector<model::Term> terms;
    };
    static std::vector<Prepared> all;
    for (const auto& f : corpus.files) {
        Prepared p;
        p.raw = read_file(f.path);
        p.bag = features::extract(mime::parse(p.raw, settings.limits), nullptr, &contacts, settings.features);
        p.terms = terms_of(p.bag);
        all.push_back(std::move(p));
    }
    // The corpus benchmarks report the mean message's bytes and features: the CSV
    // reporter (micro.sh) needs the same counters in every run.
    static double mean_bytes = 0, mean_features = 0;
    for (const Prepared& p : all) {
        mean_bytes += static_cast<double>(p.raw.size()) / static_cast<double>(all.size());
        mean_features += static_cast<double>(p.bag.size()) / static_cast<double>(all.size());
    }
    static const auto account_corpus = [](benchmark::State& state) {
        state.SetBytesProcessed(static_cast<std::int64_t>(static_cast<double>(state.iterations()) * mean_bytes));
        state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()));
        state.counters["msg_bytes"] = mean_bytes;
        state.counters["features"] = mean_features;
    };
    benchmark::RegisterBenchmark("score_corpus/naive_bayes", [](benchmark::State& state) {
        std::size_t i = 0;
        for (auto _ : state) {
            const Prepared& p = all[i++ % all.size()];
            auto s = model::score(p.terms, snapshot);
            benchmark::DoNotOptimize(s);
        }
        account_corpus(state);
    });
    benchmark::RegisterBenchmark("score_corpus/linear_with_slots", [](benchmark::State& state) {
        std::size_t i = 0;
        std::vector<model::Slot> slots;
        for (auto _ : state) {
            const Prepared& p = all[i++ % all.size()];
            features::message_slots(p.raw, p.bag, settings.slots, slots);
            auto z = linear.score(slots, 1.0).z();
            benchmark::DoNotOptimize(z);
        }
        account_corpus(state);
    });

    for (const Chosen& m : chosen) {
        const std::string suffix = "/" + m.tag + "_" + std::to_string(m.raw.size()) + "B";
        benchmark::RegisterBenchmark(("parse" + suffix).c_str(), [&m](benchmark::State& state) {
            for (auto _ : state) {
                auto parsed = mime::parse(m.raw, settings.limits);
                benchmark::DoNotOptimize(parsed);
            }
            account(state, m);
        });
        benchmark::RegisterBenchmark(("extract" + suffix).c_str(), [&m](benchmark::State& state) {
            for (auto _ : state) {
                auto bag = features::extract(m.parsed, nullptr, &contacts, settings.features);
                benchmark::DoNotOptimize(bag);
            }
            account(state, m);
        });
        benchmark::RegisterBenchmark(("score" + suffix).c_str(), [&m](benchmark::State& state) {
            for (auto _ : state) {
                auto s = model::score(m.terms, snapshot);
                benchmark::DoNotOptimize(s);
            }
            account(state, m);
        });
        benchmark::RegisterBenchmark(("slots" + suffix).c_str(), [&m](benchmark::State& state) {
            std::vector<model::Slot> slots;
            for (auto _ : state) {
                features::message_slots(m.raw, m.bag, settings.slots, slots);
                benchmark::DoNotOptimize(slots.data());
            }
            // No counter of its own: the CSV reporter (micro.sh) needs the same counters in every run.
            account(state, m);
        });
        benchmark::RegisterBenchmark(("linear_score" + suffix).c_str(), [&m](benchmark::State& state) {
            std::vector<model::Slot> slots;
            features::message_slots(m.raw, m.bag, settings.slots, slots);
            for (auto _ : state) {
                auto z = linear.score(slots, 1.0).z();
                benchmark::DoNotOptimize(z);
            }
            account(state, m);
        });
        benchmark::RegisterBenchmark(("full" + suffix).c_str(), [&m](benchmark::State& state) {
            std::vector<model::Term> terms;
            for (auto _ : state) {
                const auto parsed = mime::parse(m.raw, settings.limits);
                const auto bag = features::extract(parsed, nullptr, &contacts, settings.features);
                terms.clear();
                for (const auto& e : bag.entries())
                    terms.push_back({e.id, e.count, features::is_header_feature(bag.text(e))});
                auto s = model::score(terms, snapshot);
                benchmark::DoNotOptimize(s);
            }
            account(state, m);
        });
    }

    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    return 0;
}
