// Trainer: featurize messages and record them in store transactions.
#include <algorithm>
#include <cmath>
#include <string>

#include "mailsift/engine/filter.hpp"
#include "mailsift/features/feature_hash.hpp"
#include "mailsift/features/slots.hpp"
#include "mailsift/mime/message.hpp"

namespace mailsift::engine {

bool known_beyond_margin(const model::Snapshot& model, double log_odds, bool spam, double margin) {
    if (margin <= 0 || model.messages().spam == 0 || model.messages().ham == 0) return false;
    const bool right = spam ? log_odds > 0 : log_odds < 0;
    return right && std::abs(log_odds) >= margin;
}

Trainer::Trainer(store::Database& db, Settings settings)
    : db_(db), settings_(std::move(settings)), contacts_(db_.load_contacts()) {}

Trainer::~Trainer() = default;  // an uncommitted batch rolls back

void Trainer::open_batch() {
    if (!batch_) {
        batch_ = std::make_unique<store::TrainingBatch>(db_);
        in_batch_ = 0;
    }
}

void Trainer::commit() {
    if (batch_) {
        batch_->commit();
        batch_.reset();
        in_batch_ = 0;
        committed_ = counts_;
    }
}

store::LearnResult Trainer::learn_terms(const store::Digest& digest, const std::vector<store::TrainTerm>& terms,
                                       std::string_view from_address, store::Class c, std::int64_t now,
                                       const store::TrainingBatch::LinearStep* linear) {
    open_batch();
    const store::LearnResult r = batch_->learn(digest, c, terms, now, linear);
    if (linear != nullptr && r != store::LearnResult::already_learned) linear_->apply(linear->slots, linear->step);
    if (r != store::LearnResult::already_learned && c == store::Class::ham && !from_address.empty()) {
        // "Have you corresponded before?": senders of good mail become contacts.
        batch_->add_contact(from_address, "learned-ham", now);
    }
    switch (r) {
        case store::LearnResult::learned: ++counts_.learned; break;
        case store::LearnResult::already_learned: ++counts_.already_learned; break;
        case store::LearnResult::moved: ++counts_.moved; break;
    }
    if (++in_batch_ >= settings_.batch_messages) commit();
    return r;
}

Trainer::LearnOutcome Trainer::learn(std::string_view raw, std::size_t size_bytes, store::Class c, std::int64_t now) {
    return learn_prepared(prepare(raw, size_bytes), c, now);
}

Trainer::Prepared Trainer::prepare(std::string_view raw, std::size_t size_bytes) const {
    Prepared p;
    if (const auto problem = check_message(raw, size_bytes, settings_.limits); refused(problem)) {
        p.problem = problem;
        return p;
    }
    // Too large: learned on the prefix that was read, as mailsiftd scores it.
    const mime::ParsedMessage parsed = mime::parse(raw, settings_.limits);
    prepare_parsed(raw, parsed, p);
    return p;
}

void Trainer::prepare_parsed(std::string_view raw, const mime::ParsedMessage& parsed, Prepared& p) const {
    // Truncated MIME is learned on what was read: broken multiparts are real
    // mail (much of it spam), and mailsiftd scores them the same way.
    p.bag = features::extract(parsed, nullptr, &contacts_, settings_.features);
    // Sorting here, on the preparing thread, spares the single writing thread the work.
    const auto& entries = p.bag.entries();
    p.order.resize(entries.size());
    for (std::uint32_t i = 0; i < p.order.size(); ++i) p.order[i] = i;
    std::sort(p.order.begin(), p.order.end(), [&](std::uint32_t a, std::uint32_t b) { return entries[a].id < entries[b].id; });
    const auto signature = message_signature(parsed.headers);  // one message with its scan
    p.digest = signature ? *signature : message_digest(raw);
    const auto* from = parsed.find("From");
    if (from != nullptr) p.from_address = features::address_in(from->value);
    if (settings_.scorer == Scorer::linear) features::message_slots(raw, p.bag, settings_.slots, p.slots);
}

model::Snapshot& Trainer::selection_model() {
    if (!selection_) {
        commit();  // the model is read in a transaction of its own
        std::optional<model::Snapshot::Builder> builder;
        const auto totals = db_.visit_counts(
            settings_.model.term_frequency, [&](std::size_t n) { builder.emplace(settings_.model, n); },
            [&](model::FeatureId id, model::ClassCounts counts) { builder->add(id, counts); });
        selection_ = std::move(*builder).finish(totals.messages, totals.feature_totals);
    }
    return *selection_;
}

void Trainer::load_linear_models() {
    if (settings_.scorer != Scorer::linear) return;
    selection_model();
    linear_model();
}

model::LinearModel& Trainer::linear_model() {
    if (!linear_) {
        commit();  // read in a transaction of its own
        std::uint64_t sequence = 0;
        linear_.emplace(*load_linear(db_, settings_, nullptr, 0, sequence));
    }
    return *linear_;
}

store::TrainingBatch::LinearStep Trainer::linear_step(const std::vector<model::Term>& terms,
                                                      std::vector<model::Slot> slots, bool spam) {
    // The naive-Bayes input as scoring would see it now, before this message is counted.
    const double nb = linear_nb_input(model::score(terms, selection_model()).log_odds, settings_);
    model::LinearModel& m = linear_model();
    store::TrainingBatch::LinearStep st;
    st.hash_bits = settings_.linear.hash_bits;
    st.step = m.step(m.score(slots, nb), spam);
    st.slots = std::move(slots);
    return st;
}

Trainer::LearnOutcome Trainer::learn_prepared(const Prepared& p, store::Class c, std::int64_t now, bool selective) {
    if (p.problem != MessageProblem::none) return {p.problem, {}};
    load_linear_models();
    const auto& entries = p.bag.entries();
    // The linear scorer learns every message (its gradient is small where it is
    // already right), so the counts beside it do too: no thick threshold.
    const bool linear = settings_.scorer == Scorer::linear;
    // What scoring sees, when there is a selection model to score with or to keep in step.
    const bool selecting = selective && settings_.train_margin > 0 && !linear;
    const std::vector<model::Term> model_terms =
        selecting || selection_ || linear ? scoring_terms(p.bag) : std::vector<model::Term>{};
    if (selecting) {
        // Thick threshold (TONE): learn errors and what scored within the margin,
        // not what the model already knows. A message learned before is left to
        // the store, which says "already learned" or moves it.
        model::Snapshot& m = selection_model();
        open_batch();
        if (!batch_->learned_class(p.digest)) {
            const double log_odds = model::score(model_terms, m).log_odds;
            if (known_beyond_margin(m, log_odds, c == store::Class::spam, settings_.train_margin)) {
                ++counts_.confident;
                return {MessageProblem::none, store::LearnResult::already_learned, true};
            }
        }
    }
    std::vector<store::TrainTerm> terms;
    terms.reserve(p.bag.size());
    for (std::uint32_t i : p.order) terms.push_back({entries[i].id, entries[i].count, p.bag.text(entries[i])});
    std::optional<store::TrainingBatch::LinearStep> step;
    if (linear) step = linear_step(model_terms, p.slots, c == store::Class::spam);
    const store::LearnResult r = learn_terms(p.digest, terms, p.from_address, c, now, step ? &*step : nullptr);
    if (selection_ && r != store::LearnResult::already_learned) {
        // Keep the selection model in step (a move takes the message out of the other class).
        if (r == store::LearnResult::moved) selection_->unlearn(model_terms, c != store::Class::spam);
        selection_->learn(model_terms, c == store::Class::spam);
    }
    return {MessageProblem::none, r};
}

bool Trainer::confirmed_only(model::Verdict said, store::Class c) const {
    // Train on error with a thick threshold: a confident verdict that was right
    // teaches nothing new; errors and everything scored unsure are trained.
    return settings_.train_on_error && said == (c == store::Class::spam ? model::Verdict::spam : model::Verdict::ham);
}

Trainer::CorrectOutcome Trainer::learn_scan(const store::Scan& scan, store::Class c, std::int64_t now) {
    // This correction is the latest word on the scan: one deferred earlier must not undo it.
    open_batch();
    batch_->drop_deferred_correction(scan.id);
    if (confirmed_only(scan.verdict, c)) {
        CorrectOutcome o;
        o.by_signature = true;
        o.confirmed = true;
        return o;
    }
    const auto lines = parse_feature_lines(scan.features);
    std::vector<store::TrainTerm> terms;
    terms.reserve(lines.size());
    std::string from;
    for (const auto& [text, n] : lines) {
        terms.push_back({features::feature_id(text), n, text});
        if (text.rfind("hdr:from:", 0) == 0) from = text.substr(9);
    }
    std::optional<store::TrainingBatch::LinearStep> step;
    if (settings_.scorer == Scorer::linear) {
        // A scan keeps the features, not the message: the linear scorer learns their slots, no 4-grams.
        std::vector<model::Term> model_terms;
        std::vector<model::Slot> slots;
        model_terms.reserve(terms.size());
        slots.reserve(terms.size());
        for (const auto& t : terms) {
            model_terms.push_back({t.id, t.count, features::is_header_feature(t.text)});
            slots.push_back(features::feature_slot(t.id, settings_.slots.bits));
        }
        std::sort(slots.begin(), slots.end());
        slots.erase(std::unique(slots.begin(), slots.end()), slots.end());
        step = linear_step(model_terms, std::move(slots), c == store::Class::spam);
    }
    // Keyed by the signature: correcting the same scan again is a no-op, the other way moves it.
    const store::LearnResult r = learn_terms(scan.id, terms, from, c, now, step ? &*step : nullptr);
    if (r != store::LearnResult::already_learned) batch_->record_correction(scan.verdict, c, now);
    return {MessageProblem::none, r, true, false};
}

Trainer::CorrectOutcome Trainer::correct(std::string_view raw, std::size_t size_bytes, store::Class c, std::int64_t now) {
    if (const auto p = check_message(raw, size_bytes, settings_.limits); refused(p)) return {p, {}, false};
    load_linear_models();
    // A tagged message is one message with its scan: both are learned under the
    // signature, so whichever comes first is the one training and the other finds it.
    const mime::ParsedMessage parsed = mime::parse(raw, settings_.limits);
    const std::optional<store::Digest> signature = message_signature(parsed.headers);
    if (signature) {
        if (const auto scan = db_.find_scan(*signature)) return learn_scan(*scan, c, now);
    }
    // No scan (not written yet, pruned, or none): the message as it is. When mailsiftd
    // tagged it, its verdict comes from the message's own X-Mailsift-Status.
    std::optional<model::Verdict> said;
    if (const auto* h = signature ? parsed.find("X-Mailsift-Status") : nullptr) said = verdict_of_status(h->value);
    if (said && confirmed_only(*said, c)) return {MessageProblem::none, store::LearnResult::already_learned, false, true};
    if (signature) {
        open_batch();
        batch_->drop_deferred_correction(*signature);  // as in learn_scan: this one is the latest
    }
    Prepared p;
    prepare_parsed(raw, parsed, p);
    const LearnOutcome o = learn_prepared(p, c, now, /*selective=*/false);  // a correction is always trained
    if (said && o.result != store::LearnResult::already_learned) batch_->record_correction(*said, c, now);
    return {o.problem, o.result, false};
}

std::optional<Trainer::CorrectOutcome> Trainer::correct_signature(const store::Digest& id, store::Class c,
                                                                   std::int64_t now) {
    load_linear_models();
    const auto scan = db_.find_scan(id);
    if (!scan) return std::nullopt;
    return learn_scan(*scan, c, now);
}

Trainer::CorrectOutcome Trainer::correct_or_defer_signature(const store::Digest& id, store::Class c,
                                                             std::int64_t now) {
    load_linear_models();  // before the write lock: loading them commits
    open_batch();  // the write lock first: the recorder cannot write the scan between the look and the keep
    if (const auto scan = db_.find_scan(id)) return learn_scan(*scan, c, now);
    batch_->defer_correction(id, c, now);
    CorrectOutcome o;
    o.by_signature = true;
    o.deferred = true;
    return o;
}

std::size_t Trainer::apply_deferred_corrections(std::int64_t now) {
    commit();
    if (db_.has_deferred_corrections()) load_linear_models();  // not between taking and training
    // Each transaction takes corrections and trains them together: fewer than
    // batch_messages, so that learn_terms never commits between the two.
    const std::size_t per_batch = std::max<std::size_t>(1, settings_.batch_messages - 1);
    std::size_t total = 0;
    for (;;) {
        open_batch();
        const auto ready = batch_->take_ready_corrections(per_batch);
        for (const auto& [scan, c] : ready) learn_scan(scan, c, now);
        commit();
        total += ready.size();
        if (ready.size() < per_batch) return total;
    }
}

store::UnlearnResult Trainer::unlearn(std::string_view raw, store::Class c) {
    open_batch();
    const store::UnlearnResult r = batch_->unlearn(message_identity(raw), c);
    if (r == store::UnlearnResult::unlearned) {
        ++counts_.unlearned;
    } else {
        ++counts_.not_learned;
    }
    if (++in_batch_ >= settings_.batch_messages) commit();
    return r;
}

}  // namespace mailsift::engine
