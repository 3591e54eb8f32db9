// Trainer: featurize messages and record them in store transactions.
#include <algorithm>
#include <cmath>
#include <string>

#include "mailsift/engine/contacts.hpp"
#include "mailsift/engine/model_settings.hpp"
#include "mailsift/engine/model_source.hpp"
#include "mailsift/engine/scan_record.hpp"
#include "mailsift/engine/signature.hpp"
#include "mailsift/engine/trainer.hpp"
#include "mailsift/engine/user_layers.hpp"
#include "mailsift/features/feature_hash.hpp"
#include "mailsift/features/slots.hpp"
#include "mailsift/features/view.hpp"
#include "mailsift/mime/message.hpp"

namespace mailsift::engine {

bool known_beyond_margin(const model::Snapshot& model, double log_odds, bool spam, double margin) {
    if (margin <= 0 || model.messages().spam == 0 || model.messages().ham == 0) return false;
    const bool right = spam ? log_odds > 0 : log_odds < 0;
    return right && std::abs(log_odds) >= margin;
}

Trainer::Trainer(store::Database& db, Settings settings, Reads reads) : db_(db), reads_(reads) {
    ModelSettings kept = model_settings(db_, settings);
    settings_ = std::move(kept.settings);
    setting_notes_ = std::move(kept.notes);
    if (kept.recorded.empty()) settings_to_record_ = model_settings_text(settings_);
    contacts_ = db_.load_contacts();
}

Trainer::~Trainer() = default;  // an uncommitted batch rolls back

void Trainer::open_batch() {
    if (!batch_) {
        batch_ = std::make_unique<store::TrainingBatch>(db_);
        if (!settings_to_record_.empty()) batch_->keep_model_settings(settings_to_record_);
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
                                       const store::TrainingBatch::LinearStep* linear, store::CorrectionUndo* undo) {
    open_batch();
    const store::LearnResult r = batch_->learn(digest, c, terms, now, linear);
    if (linear != nullptr && r != store::LearnResult::already_learned) {
        linear_->apply(linear->slots, linear->step);
        if (undo != nullptr) {
            undo->hash_bits = linear->hash_bits;
            undo->feature = linear->step.feature;
            undo->nb_weight = linear->step.nb_weight;
            undo->slots.assign(linear->slots.begin(), linear->slots.end());
        }
    }
    if (r != store::LearnResult::already_learned && c == store::Class::ham && !from_address.empty()) {
        // "Have you corresponded before?": senders of good mail become contacts.
        if (batch_->add_contact(from_address, "learned-ham", now) && undo != nullptr) undo->contact = from_address;
        if (one_message_) new_contacts_.emplace_back(from_address);
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
    const StoredContacts contacts(contacts_);
    p.bag = features::extract(parsed, nullptr, &contacts, settings_.features);
    // Sorting here, on the preparing thread, spares the single writing thread the work.
    const auto& entries = p.bag.entries();
    p.order.resize(entries.size());
    for (std::uint32_t i = 0; i < p.order.size(); ++i) p.order[i] = i;
    std::sort(p.order.begin(), p.order.end(), [&](std::uint32_t a, std::uint32_t b) { return entries[a].id < entries[b].id; });
    const auto signature = message_signature(parsed.headers);  // one message with its scan
    if (signature) {
        p.digest = *signature;
    } else {
        auto digests = message_digests(raw);
        p.digest = digests.now;
        p.earlier_digest = digests.earlier;
    }
    p.from_address = layer_sender(parsed);
    if (settings_.scorer == Scorer::linear) {
        features::message_view(raw, settings_.slots.ngram_bytes, p.prefix);
        features::message_slots(p.prefix, p.bag, settings_.slots, p.slots);
    }
}

std::vector<model::Slot> Trainer::personal_slots(std::string_view sender, std::string_view user) const {
    if (user.empty()) user = user_;
    if (settings_.per_user == PerUser::off || !valid_user(user)) return {};
    return features::personal_slots(user, sender, settings_.slots.bits);
}

model::Snapshot Trainer::load_counts() {
    commit();  // the model is read in a transaction of its own
    if (reads_ == Reads::rows) {
        // The totals and the vocabulary; each feature's row when it is first needed (cover()).
        const auto now = db_.counts_of({}, settings_.model.term_frequency);
        return model::Snapshot::Builder(settings_.model, 0)
            .finish(now.totals.messages, now.totals.feature_totals, static_cast<std::size_t>(now.vocabulary));
    }
    std::optional<model::Snapshot::Builder> builder;
    const auto totals = db_.visit_counts(
        settings_.model.term_frequency, [&](std::size_t n) { builder.emplace(settings_.model, n); },
        [&](model::FeatureId id, model::ClassCounts counts) { builder->add(id, counts); });
    return std::move(*builder).finish(totals.messages, totals.feature_totals);
}

void Trainer::cover(model::Snapshot& counts, std::unordered_set<model::FeatureId>& covered,
                    std::span<const model::Term> terms) {
    if (reads_ != Reads::rows) return;
    std::vector<model::FeatureId> ids;
    for (const auto& t : terms) {
        if (covered.insert(t.id).second) ids.push_back(t.id);
    }
    if (ids.empty()) return;
    // Rows this trainer has not changed: what the store holds is what the counts
    // held when it started (a batch's own changes are written at its commit).
    std::vector<std::optional<model::ClassCounts>> rows;
    if (batch_) {
        rows = batch_->stored_counts(ids, settings_.model.term_frequency);
    } else {
        for (const auto& f : db_.counts_of(ids, settings_.model.term_frequency).features) {
            rows.push_back(f.present ? std::optional(f.counts) : std::nullopt);
        }
    }
    for (std::size_t i = 0; i < ids.size(); ++i) {
        if (rows[i]) counts.add_known(ids[i], *rows[i]);
    }
}

model::Snapshot& Trainer::selection_model(std::span<const model::Term> terms) {
    if (!selection_) {
        selection_ = load_counts();
        covered_selection_.clear();
    }
    cover(*selection_, covered_selection_, terms);
    return *selection_;
}

const model::Snapshot& Trainer::known_model(std::span<const model::Term> terms) {
    // A command of one message: the counts as it found them are the counts now.
    if (one_message_ && selection_) return selection_model(terms);
    if (!known_) {
        // Before anything is learned: the linear scorer keeps selection_ in step, so take a copy.
        if (selection_) {
            known_ = *selection_;
            covered_known_ = covered_selection_;
        } else {
            known_ = load_counts();
            covered_known_.clear();
        }
    }
    cover(*known_, covered_known_, terms);
    return *known_;
}

void Trainer::load_linear_models(bool selective) {
    if (settings_.scorer != Scorer::linear) return;
    selection_model();
    if (selective && settings_.train_margin > 0) known_model();  // a copy of it: the counts are read once
    linear_model();
}

void Trainer::begin_command() {
    one_message_ = true;
    known_.reset();
    covered_known_.clear();
    linear_learned_ = 0;  // a command's own changes (refit_linear)
    // What the store holds once the previous command committed.
    for (auto& a : new_contacts_) contacts_.add(std::move(a));
    new_contacts_.clear();
}

Combined Trainer::score(const Prepared& p) {
    load_linear_models();
    const model::Snapshot& counts = selection_model(scoring_terms(p.bag));
    const model::LinearModel* linear = settings_.scorer == Scorer::linear ? &linear_model() : nullptr;
    const std::vector<model::Slot> personal = linear ? personal_slots(p.from_address) : std::vector<model::Slot>{};
    if (personal.empty()) return combine(p.bag, p.slots, counts, linear, settings_);
    std::vector<model::Slot> slots = p.slots;
    for (const auto j : personal) features::insert_slot(j, slots);
    return combine(p.bag, slots, counts, linear, settings_);
}

model::LinearModel& Trainer::linear_model() {
    if (!linear_) {
        commit();  // read in a transaction of its own
        store::LinearWeights w;
        std::uint64_t sequence = 0;
        LinearCache* const cache = linear_cache_;
        const bool cached = cache != nullptr && cache->weights && cache->weights->parameters() == settings_.linear;
        auto loaded = load_linear(db_, settings_, cached ? cache->weights.get() : nullptr, cached ? cache->sequence : 0,
                                  sequence, &w);
        if (cache != nullptr) {
            linear_.emplace(*loaded);  // this trainer's steps go to its own copy
            cache->weights = std::move(loaded);
            cache->sequence = sequence;
        } else {
            // Moved out, not copied: the table is 2^hash_bits floats (1 MiB by default).
            linear_.emplace(std::move(*loaded));
        }
        linear_seen_[0] = w.seen_ham;
        linear_seen_[1] = w.seen_spam;
        linear_dropped_ = w.samples_dropped;
        linear_unrefitted_ = w.samples_version() > w.refit_mark ? w.samples_version() - w.refit_mark : 0;
    }
    return *linear_;
}

namespace {

// A deterministic draw for a message: its digest mixed with `salt` (splitmix64).
std::uint64_t draw(const store::Digest& d, std::uint64_t salt) {
    std::uint64_t z = salt * features::golden_gamma;
    for (std::size_t i = 0; i < d.size(); ++i) z ^= std::uint64_t{d[i]} << (8 * (i % 8));
    return features::mix64(z);
}

std::vector<model::Term> sample_terms(const store::LinearSample& s) {
    // Header flags matter only to header_length_norm_features, and a sample does not keep them.
    std::vector<model::Term> terms;
    terms.reserve(s.terms.size());
    for (const auto& [id, n] : s.terms) terms.push_back({id, n, false});
    return terms;
}

}  // namespace

void Trainer::rehearse(const store::Digest& digest, std::string_view prefix, store::Class c,
                       store::CorrectionUndo* undo) {
    const auto& lp = settings_.linear;
    const int mine = c == store::Class::spam ? 1 : 0;
    const std::uint64_t n = ++linear_seen_[mine];
    open_batch();  // learn_terms may have committed a full batch
    std::optional<std::uint64_t> position;
    if (n <= lp.rehearsal) {
        position = n - 1;
    } else if (const std::uint64_t j = draw(digest, n) % n; j < lp.rehearsal) {
        position = j;  // Vitter's algorithm R: every message offered is kept with the same chance
    }
    batch_->offer_linear_sample(lp.hash_bits, c, position, digest, prefix);
    const store::Class other = c == store::Class::spam ? store::Class::ham : store::Class::spam;
    const std::uint64_t others = std::min<std::uint64_t>(linear_seen_[1 - mine], lp.rehearsal);
    if (others == 0) return;
    model::LinearModel& m = linear_model();
    thread_local std::vector<model::Slot> slots;
    for (std::size_t r = 0; r < lp.replays; ++r) {
        const auto sample = batch_->linear_sample(other, draw(digest, 0x5eed + r) % others);
        if (!sample) continue;  // never kept there, or its message unlearned or moved since
        features::message_slots(sample->prefix, sample->terms, settings_.slots, slots);
        const auto terms = sample_terms(*sample);
        const double nb = linear_nb_input(model::score(terms, selection_model(terms)).log_odds, settings_);
        const model::LinearScore s = m.score(slots, nb);
        const bool spam = other == store::Class::spam;
        if ((spam ? s.z() : -s.z()) >= lp.replay_margin) continue;  // known well enough
        store::TrainingBatch::LinearStep step;
        step.hash_bits = lp.hash_bits;
        step.step = m.step(s, spam);
        step.slots = std::move(slots);  // lent to the step, and taken back for the next replay
        batch_->add_linear(step);
        m.apply(step.slots, step.step);
        if (undo != nullptr) undo->replays.push_back({step.step.feature, step.step.nb_weight, step.slots});
        slots = std::move(step.slots);
    }
}

bool Trainer::refit_due(RefitPoint at, std::uint64_t unrefitted, std::uint64_t held) {
    if (unrefitted == 0) return false;
    if (at == RefitPoint::settled) return true;
    return unrefitted >= refit_after || unrefitted * 10 >= held;
}

std::size_t Trainer::refit_linear() {
    const auto& lp = settings_.linear;
    if (settings_.scorer != Scorer::linear || lp.epochs == 0) return 0;
    if (!linear_ && linear_learned_ == 0) return 0;  // learned nothing, and read nothing of what others left
    linear_model();
    const std::uint64_t held = std::min<std::uint64_t>(linear_seen_[0], lp.rehearsal) +
                               std::min<std::uint64_t>(linear_seen_[1], lp.rehearsal);
    // A command's own changes; and, once it corrected, what other writers left
    // unrefitted too: corrections are mostly spam left in the inbox, and the
    // steps on them drift the weights toward spam until a refit (refit_due).
    const std::uint64_t others = corrected_ ? linear_unrefitted_ : 0;
    if (!refit_due(RefitPoint::command_end, others + linear_learned_, held)) return 0;
    return refit(/*exclusive=*/false);
}

std::size_t Trainer::refit_linear_if_behind() {
    if (settings_.scorer != Scorer::linear || settings_.linear.epochs == 0) return 0;
    commit();
    const store::LinearWeights state = db_.linear_state();
    const std::uint64_t unrefitted =
        state.samples_version() > state.refit_mark ? state.samples_version() - state.refit_mark : 0;
    if (!refit_due(RefitPoint::settled, unrefitted, 0)) return 0;
    linear_.reset();  // the weights as they are now, with their counts
    return refit(/*exclusive=*/true);
}

std::size_t Trainer::refit(bool exclusive) {
    const auto& lp = settings_.linear;
    commit();
    // The weights and the samples' version read before the samples: the mark
    // below is the version of the samples read, or older (then a later refit
    // comes again).
    model::LinearModel& m = linear_model();
    const std::uint64_t mark = linear_seen_[0] + linear_seen_[1] + linear_dropped_;
    const std::vector<store::LinearSample> samples = db_.linear_samples();
    const bool both = std::any_of(samples.begin(), samples.end(), [](const auto& s) { return s.c == store::Class::spam; }) &&
                      std::any_of(samples.begin(), samples.end(), [](const auto& s) { return s.c == store::Class::ham; });
    if (!both) return 0;
    // The naive-Bayes input of each sample: the counts do not change while
    // refitting. Each sample's terms built as it is scored, not all held at once
    // (8,000 samples of a few hundred terms: tens of megabytes, in mailsiftd).
    if (reads_ == Reads::rows) {
        std::vector<model::Term> all;  // every sample's rows in one read
        for (const auto& s : samples) {
            const auto t = sample_terms(s);
            all.insert(all.end(), t.begin(), t.end());
        }
        selection_model(all);
    }
    std::vector<double> nb;
    nb.reserve(samples.size());
    for (const auto& s : samples) {
        nb.push_back(linear_nb_input(model::score(sample_terms(s), selection_model()).log_odds, settings_));
    }
    const std::vector<float> before(m.weights().begin(), m.weights().end());
    const double bias = m.bias(), nb_weight = m.nb_weight();
    // The passes start from the weights without the last refit's own change:
    // this refit replaces it rather than adds to it. Logistic regression
    // without a penalty grows its weights with every pass over samples it
    // separates; mailsiftd refits after every correction, and refits piled on
    // one another made its scores overconfident on mail it had not learned
    // (docs/accuracy.md, issue 42). The online steps learned since stay.
    if (const auto last = db_.linear_refit_layer(); last && last->hash_bits == lp.hash_bits) {
        const auto w = m.weights();
        for (const auto& d : last->slots) w[d.slot] -= d.delta;
        m.set_state(m.bias() - last->bias, m.nb_weight() - last->nb_weight);
    }
    const std::vector<float> start(m.weights().begin(), m.weights().end());
    const double start_bias = m.bias(), start_nb_weight = m.nb_weight();
    std::vector<std::size_t> order(samples.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    store::Digest seed{};
    std::uint64_t salt = linear_seen_[0] * 0x100000001b3ULL + linear_seen_[1];
    std::vector<model::Slot> slots;
    for (std::size_t e = 0; e < lp.epochs; ++e) {
        for (std::size_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[draw(seed, ++salt) % i]);
        for (const std::size_t i : order) {
            features::message_slots(samples[i].prefix, samples[i].terms, settings_.slots, slots);
            m.learn(slots, nb[i], samples[i].c == store::Class::spam);
        }
    }
    std::vector<float> delta(before.size());
    store::RefitLayer layer{lp.hash_bits, m.bias() - start_bias, m.nb_weight() - start_nb_weight, {}};
    const auto after = m.weights();
    for (std::size_t j = 0; j < delta.size(); ++j) {
        delta[j] = after[j] - before[j];
        if (const float own = after[j] - start[j]; own != 0.0f) layer.slots.push_back({static_cast<std::uint32_t>(j), own});
    }
    open_batch();
    batch_->add_linear_weights(lp.hash_bits, std::move(delta), m.bias() - bias, m.nb_weight() - nb_weight, mark,
                               exclusive, std::move(layer));
    linear_learned_ = 0;
    linear_unrefitted_ = 0;
    try {
        commit();
    } catch (const store::RefitSuperseded&) {
        batch_.reset();   // rolled back: the other writer's refit stands
        linear_.reset();  // this one's weights are not the store's; read them again when needed
        return 0;
    }
    return samples.size();
}

std::size_t Trainer::finish() {
    commit();
    return refit_linear();
}

store::TrainingBatch::LinearStep Trainer::linear_step(const std::vector<model::Term>& terms,
                                                      std::vector<model::Slot> slots,
                                                      std::vector<model::Slot> personal, bool spam,
                                                      std::optional<store::TrainingBatch::LinearStep>* layer) {
    // The naive-Bayes input as scoring would see it now, before this message is counted.
    const double nb = linear_nb_input(model::score(terms, selection_model(terms)).log_odds, settings_);
    model::LinearModel& m = linear_model();
    store::TrainingBatch::LinearStep st;
    st.hash_bits = settings_.linear.hash_bits;
    // The site steps as it would with per_user off: from its own score, over
    // its own slots, so that it learns from a user's correction what it learns
    // from anyone's. The user's layer takes a step of its own from the score
    // the user saw, the site's and theirs: what the site leaves wrong for them.
    const model::LinearScore site = m.score(slots, nb);
    st.step = m.step(site, spam);
    st.slots = std::move(slots);
    if (!personal.empty() && layer != nullptr) {
        // The same learner's step over the layer's inputs with its step size:
        // the user's score for this sender moves by at most per_user_step.
        model::LinearParameters lp = settings_.linear;
        lp.step = settings_.per_user_step;
        model::LinearScore one = site;
        for (const auto j : personal) {
            if (!std::binary_search(st.slots.begin(), st.slots.end(), j)) one.features += m.weight(j);
        }
        one.slots = personal.size() - 1;  // the bias, one more input to the site's step, is not the layer's
        store::TrainingBatch::LinearStep l;
        l.hash_bits = st.hash_bits;
        l.step = model::find_learner(lp.learner)->step(one, spam, lp);
        l.step.nb_weight = 0.0;
        l.step.moves_bias = false;
        // Decisive for the user (issue 58): the learner's step, or as much more
        // as puts this copy per_user_margin past the verdict's cutoff on their
        // side, whatever the site says of the sender (a passive-aggressive
        // step's margin, Crammer et al. 2006), at most per_user_cap in all.
        // Each of the layer's slots takes a share: the user's score moves by all.
        const double n = static_cast<double>(personal.size());
        const double move = layer_move(settings_, one.z(), spam, std::abs(static_cast<double>(l.step.feature)) * n);
        l.step.feature = static_cast<float>((spam ? move : -move) / n);
        l.slots = std::move(personal);
        *layer = std::move(l);
    }
    return st;
}

void Trainer::take_layer_step(const store::TrainingBatch::LinearStep& layer, std::string_view user,
                              std::string_view sender, store::CorrectionUndo* undo) {
    batch_->add_linear(layer);
    linear_->apply(layer.slots, layer.step);
    if (undo != nullptr) {
        undo->layer = {layer.step.feature, std::vector<std::uint32_t>(layer.slots.begin(), layer.slots.end()),
                       std::string(user), std::string(sender)};
    }
}

Trainer::LearnOutcome Trainer::learn_prepared(const Prepared& p, store::Class c, std::int64_t now, bool selective,
                                              store::CorrectionUndo* undo) {
    if (p.problem != MessageProblem::none) return {p.problem, {}};
    load_linear_models(selective);
    const store::Digest digest = stored_digest(p);
    const auto& entries = p.bag.entries();
    const bool linear = settings_.scorer == Scorer::linear;
    // What scoring sees, when there is a selection model to score with or to keep in step.
    const bool selecting = selective && settings_.train_margin > 0;
    const std::vector<model::Term> model_terms =
        selecting || selection_ || linear ? scoring_terms(p.bag) : std::vector<model::Term>{};
    if (selecting) {
        // Thick threshold (TONE): learn errors and what scored within the margin,
        // not what the model already knew when this command started. Not the
        // model as this command changes it: a batch is given at once, and the
        // order of its messages (a Junk folder first, then an inbox) must not
        // decide what is learned. A message learned before is left to the
        // store, which says "already learned" or moves it.
        known_model();  // loaded before the batch opens: loading commits
        open_batch();
        // Every row a learned message changes is read before it changes, so that a
        // row read later is one this trainer never touched (Reads::rows).
        const model::Snapshot& m = known_model(model_terms);
        if (!batch_->learned_class(digest)) {
            const double log_odds = model::score(model_terms, m).log_odds;
            if (known_beyond_margin(m, log_odds, c == store::Class::spam, settings_.train_margin)) {
                ++counts_.confident;
                if (linear) {
                    // The counts know it; the linear scorer still takes its (small) step, once.
                    std::optional<store::TrainingBatch::LinearStep> layer;
                    const auto step = linear_step(model_terms, p.slots, personal_slots(p.from_address),
                                                  c == store::Class::spam, &layer);
                    if (batch_->learn_uncounted(digest, c, step) != store::LearnResult::already_learned) {
                        linear_->apply(step.slots, step.step);
                        if (layer) take_layer_step(*layer, user_, p.from_address, nullptr);
                        ++linear_learned_;
                    }
                }
                return {MessageProblem::none, store::LearnResult::already_learned, true};
            }
        }
    }
    std::vector<store::TrainTerm> terms;
    terms.reserve(p.bag.size());
    for (std::uint32_t i : p.order) terms.push_back({entries[i].id, entries[i].count, p.bag.text(entries[i])});
    return {MessageProblem::none,
            train(digest, terms, model_terms, p.slots, user_, p.prefix, p.from_address, c, now, undo)};
}

store::LearnResult Trainer::train(const store::Digest& digest, const std::vector<store::TrainTerm>& terms,
                                  const std::vector<model::Term>& model_terms, std::vector<model::Slot> slots,
                                  std::string_view user, std::string_view view,
                                  std::string_view from_address, store::Class c, std::int64_t now,
                                  store::CorrectionUndo* undo) {
    const bool linear = settings_.scorer == Scorer::linear;
    if (user.empty()) user = user_;
    std::vector<model::Slot> personal = linear ? personal_slots(from_address, user) : std::vector<model::Slot>{};
    if (undo != nullptr && !personal.empty()) {
        // A correction of a user's copy: against another user's of the same sender, it cancels in the site.
        if (const auto r = learn_cancelling(digest, model_terms, slots, personal, user, from_address, c, now, *undo)) {
            return *r;
        }
    }
    std::optional<store::TrainingBatch::LinearStep> step, layer;
    if (linear) {
        step = linear_step(model_terms, std::move(slots), std::move(personal), c == store::Class::spam, &layer);
    }
    if (selection_) selection_model(model_terms);  // its rows as the store has them, before they change here
    const store::LearnResult r = learn_terms(digest, terms, from_address, c, now, step ? &*step : nullptr, undo);
    if (r == store::LearnResult::already_learned) return r;
    if (linear) {
        if (layer) take_layer_step(*layer, user, from_address, undo);
        ++linear_learned_;
        if (settings_.linear.rehearsal > 0) rehearse(digest, view, c, undo);
    }
    if (selection_) {
        // Keep the selection model in step (a move takes the message out of the other class).
        if (r == store::LearnResult::moved) selection_->unlearn(model_terms, c != store::Class::spam);
        selection_->learn(model_terms, c == store::Class::spam);
    }
    return r;
}

store::Digest Trainer::stored_digest(const Prepared& p) {
    if (!p.earlier_digest) return p.digest;
    open_batch();
    if (batch_->learned_class(p.digest) || !batch_->learned_class(*p.earlier_digest)) return p.digest;
    return *p.earlier_digest;
}

store::UnlearnResult Trainer::unlearn(std::string_view raw, store::Class c) {
    open_batch();
    // As learn_prepared() finds it: by its signature, else by its digest or the earlier one.
    store::Digest id{};
    if (const auto signature = message_signature(raw)) {
        id = *signature;
    } else {
        const auto digests = message_digests(raw);
        id = digests.now;
        if (digests.earlier && !batch_->learned_class(id) && batch_->learned_class(*digests.earlier)) id = *digests.earlier;
    }
    const store::UnlearnResult r = batch_->unlearn(id, c);
    if (r == store::UnlearnResult::unlearned) {
        ++counts_.unlearned;
    } else {
        ++counts_.not_learned;
    }
    if (++in_batch_ >= settings_.batch_messages) commit();
    return r;
}

}  // namespace mailsift::engine
