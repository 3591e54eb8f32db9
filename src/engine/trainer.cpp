// Trainer: featurize messages and record them in store transactions.
#include <string>

#include "mailsift/engine/filter.hpp"
#include "mailsift/features/feature_hash.hpp"
#include "mailsift/mime/message.hpp"

namespace mailsift::engine {

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
    }
}

Trainer::LearnOutcome Trainer::learn(std::string_view raw, std::size_t size_bytes, store::Class c, std::int64_t now) {
    if (const auto p = check_message(raw, size_bytes, settings_.limits); p != MessageProblem::none) return {p, {}};
    const mime::ParsedMessage parsed = mime::parse(raw, settings_.limits);
    // A cut-off message would teach the model a fragment; ask for the whole one.
    if (parsed.truncated) return {MessageProblem::truncated_mime, {}};
    const features::FeatureBag bag = features::extract(parsed, nullptr, &contacts_, settings_.features);
    std::vector<store::TrainTerm> terms;
    terms.reserve(bag.size());
    for (const auto& e : bag.entries()) terms.push_back({e.id, e.count, bag.text(e)});

    open_batch();
    const store::LearnResult r = batch_->learn(message_digest(raw), c, terms, now);
    if (r != store::LearnResult::already_learned && c == store::Class::ham) {
        // "Have you corresponded before?": senders of good mail become contacts.
        if (const auto* from = parsed.find("From")) {
            const std::string address = features::address_in(from->value);
            if (!address.empty()) batch_->add_contact(address, "learned-ham", now);
        }
    }
    switch (r) {
        case store::LearnResult::learned: ++counts_.learned; break;
        case store::LearnResult::already_learned: ++counts_.already_learned; break;
        case store::LearnResult::moved: ++counts_.moved; break;
    }
    if (++in_batch_ >= settings_.batch_messages) commit();
    return {MessageProblem::none, r};
}

store::UnlearnResult Trainer::unlearn(std::string_view raw, store::Class c) {
    open_batch();
    const store::UnlearnResult r = batch_->unlearn(message_digest(raw), c);
    if (r == store::UnlearnResult::unlearned) {
        ++counts_.unlearned;
    } else {
        ++counts_.not_learned;
    }
    if (++in_batch_ >= settings_.batch_messages) commit();
    return r;
}

}  // namespace mailsift::engine
