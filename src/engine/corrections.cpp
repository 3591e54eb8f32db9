// Trainer's corrections: a verdict corrected by its scan (or the message,
// or a signature whose scan is still to come), recorded with what undoing it
// takes, and undone: the model put back as it was before the correction.
#include <chrono>
#include <string>
#include <thread>

#include "mailsift/engine/correction_owner.hpp"
#include "mailsift/engine/scan_record.hpp"
#include "mailsift/engine/signature.hpp"
#include "mailsift/engine/trainer.hpp"
#include "mailsift/engine/user_layers.hpp"
#include "mailsift/features/feature_hash.hpp"
#include "mailsift/features/slots.hpp"
#include "mailsift/features/view.hpp"
#include "mailsift/mime/date.hpp"
#include "mailsift/mime/message.hpp"

namespace mailsift::engine {

namespace {

// A scan's features as learned (`lines` must outlive them), and its sender.
// `envelope`: keep the envelope's facts (env:), which only the milter sees.
// Only the naive-Bayes scorer reads them (combine.hpp); the linear scorer's
// model leaves them out, as its scoring does, so that a correction by
// signature learns what a correction of the delivered copy learns, and a
// rehearsal sample's naive-Bayes input at a refit is the one scoring gives.
std::vector<store::TrainTerm> scan_terms(const std::vector<std::pair<std::string, std::uint32_t>>& lines,
                                         std::string* from, bool envelope) {
    std::vector<store::TrainTerm> terms;
    terms.reserve(lines.size());
    for (const auto& [text, n] : lines) {
        if (!envelope && features::milter_only(text)) continue;
        terms.push_back({features::feature_id(text), n, text});
        if (from == nullptr) continue;
        if (const auto sender = layer_sender_of(text)) *from = *sender;
    }
    return terms;
}

// Refused: `what` is another user's to change.
[[noreturn]] void not_yours(const store::Digest& id, const char* what) {
    throw NotYours("the message of signature " + signature_text(id) + " " + what +
                   "; only they, or an administrator, may change it (nothing was changed)");
}

}  // namespace

void Trainer::check_owner(const store::Scan& scan, std::string_view by) const {
    const auto acting = acting_for(by);
    if (!acting) return;  // an administrator's
    const auto user = recorded_user(scan.features);
    if (user && !owns(*acting, *user, settings_.per_user)) not_yours(scan.id, "was delivered to another user");
}

void Trainer::check_named_user() {
    // A layer is only for a user mailsiftd delivered to (issue 58): a name
    // given with --user that it never scored mail for starts none.
    if (settings_.scorer != Scorer::linear || settings_.per_user == PerUser::off || !valid_user(user_)) return;
    if (delivered_checked_ == user_) return;
    if (!db_.delivered_to(user_)) {
        throw NotYours("mailsiftd has delivered no mail to " + user_ +
                       "; a correction names a user it scored mail for (nothing was changed)");
    }
    delivered_checked_ = user_;
}

bool Trainer::confirmed_only(model::Verdict said, store::Class c) const {
    // Train on error with a thick threshold: a confident verdict that was right
    // teaches nothing new; errors and everything scored unsure are trained.
    return settings_.train_on_error && said == (c == store::Class::spam ? model::Verdict::spam : model::Verdict::ham);
}

Trainer::CorrectOutcome Trainer::learn_scan(const store::Scan& scan, store::Class c, std::int64_t now,
                                            std::string_view raw, const std::string* by) {
    check_owner(scan, by != nullptr ? *by : corrector_);  // before anything changes
    check_named_user();
    // This correction is the latest word on the scan: one deferred earlier must not undo it.
    open_batch();
    batch_->drop_deferred_correction(scan.id);
    const bool superseded = supersede(scan.id, c, raw, now);
    if (confirmed_only(scan.verdict, c)) {
        CorrectOutcome o;
        o.by_signature = true;
        o.confirmed = true;
        o.superseded = superseded;
        return o;
    }
    const auto lines = parse_feature_lines(scan.features);
    std::string from;
    const std::vector<store::TrainTerm> terms = scan_terms(lines, &from, settings_.scorer != Scorer::linear);
    // The features as combine() takes them: without the envelope.
    std::vector<model::Term> model_terms;
    std::vector<std::pair<std::uint64_t, std::uint32_t>> kept;
    model_terms.reserve(terms.size());
    kept.reserve(terms.size());
    for (const auto& t : terms) {
        if (features::milter_only(t.text)) continue;
        model_terms.push_back({t.id, t.count, features::is_header_feature(t.text)});
        kept.emplace_back(t.id, t.count);
    }
    // The slots the milter scored: the view the scan recorded and its features.
    // A scan recorded without a view (by an older mailsift): the view of the
    // message, when the correction has it, else the features alone.
    std::string view;
    std::vector<model::Slot> slots;
    std::optional<std::string> user;
    if (settings_.scorer == Scorer::linear) {
        if (auto recorded = recorded_view(scan.features)) {
            view = std::move(*recorded);
        } else {
            view = features::message_view(raw, settings_.slots.ngram_bytes);
        }
        features::message_slots(view, kept, settings_.slots, slots);
        // Whose copy it was: the user set here (an alias), else the one the scan was scored for.
        user = valid_user(user_) ? std::optional<std::string>(user_) : recorded_user(scan.features);
    }
    // Keyed by the signature: correcting the same scan again is a no-op, the other way moves it.
    store::CorrectionUndo undo;
    undo.was = batch_->learned_class(scan.id);
    const store::LearnResult r = train(scan.id, terms, model_terms, std::move(slots), user.value_or(""), view, from, c, now, &undo);
    if (r != store::LearnResult::already_learned) {
        batch_->record_correction({scan.verdict, c, now, scan.id, by != nullptr ? *by : corrector_, std::move(undo)});
        corrected_ = true;
    }
    return {MessageProblem::none, r, true, false, false, superseded};
}

Trainer::CorrectOutcome Trainer::correct(std::string_view raw, std::size_t size_bytes, store::Class c, std::int64_t now) {
    if (const auto p = check_message(raw, size_bytes, settings_.limits); refused(p)) return {p, {}, false};
    check_named_user();  // before anything changes
    load_linear_models();
    // A tagged message is one message with its scan: both are learned under the
    // signature, so whichever comes first is the one training and the other finds it.
    const mime::ParsedMessage parsed = mime::parse(raw, settings_.limits);
    const std::optional<store::Digest> signature = message_signature(parsed.headers);
    if (signature) {
        if (const auto scan = scan_for(*signature, parsed, now)) return learn_scan(*scan, c, now, raw);
    }
    // No scan (not written yet, pruned, or none): the message as it is. When mailsiftd
    // tagged it, its verdict comes from the message's own X-Mailsift-Status.
    std::optional<model::Verdict> said;
    if (const auto* h = signature ? parsed.find("X-Mailsift-Status") : nullptr) said = verdict_of_status(h->value);
    bool superseded = signature && supersede(*signature, c, raw, now);
    if (said && confirmed_only(*said, c)) {
        return {MessageProblem::none, store::LearnResult::already_learned, false, true, false, superseded};
    }
    if (signature) {
        open_batch();
        // As in learn_scan: this one is the latest; but not over another user's, waiting for their scan.
        const auto dropped = batch_->drop_deferred_correction(*signature);
        if (dropped && acting_for(corrector_) && !same_user(dropped->by, corrector_)) {
            not_yours(*signature, "waits for a correction another user asked for");
        }
    }
    Prepared p;
    prepare_parsed(raw, parsed, p);
    // Recorded when tagged, and when untagged for a named user (per_user): the
    // step it takes in their layer is then a correction of theirs, shown by
    // stats --user, undone by correct --undo of the message (keyed by its
    // digest) and taken back by forget-user. Otherwise learned by hand, as before.
    const bool recorded = said || (settings_.per_user != PerUser::off && valid_user(user_));
    store::CorrectionUndo undo;
    std::optional<store::Digest> key = signature;
    if (recorded) {
        open_batch();
        const store::Digest stored = stored_digest(p);
        if (!key) {
            key = stored;
            superseded = supersede(*key, c, raw, now);
            open_batch();
        }
        undo.was = batch_->learned_class(stored);
    }
    // A correction is always trained.
    const LearnOutcome o = learn_prepared(p, c, now, /*selective=*/false, recorded ? &undo : nullptr);
    if (o.result != store::LearnResult::already_learned) corrected_ = true;  // recorded or not (refit_linear)
    if (recorded && o.result != store::LearnResult::already_learned) {
        // Without its scan the signature is not the scan's key; still the history's, for a tagged message.
        // Untagged, mailsiftd said nothing of it: recorded as unsure.
        batch_->record_correction({said.value_or(model::Verdict::unsure), c, now, key, corrector_, std::move(undo)});
        corrected_ = true;
    }
    return {o.problem, o.result, false, false, false, superseded};
}

std::optional<store::Scan> Trainer::scan_for(const store::Digest& id, const mime::ParsedMessage& parsed,
                                             std::int64_t now) {
    auto scan = db_.find_scan(id);
    if (scan || scan_wait_.count() <= 0) return scan;
    // Delivered moments ago? The topmost Received: is the last hop's, the mailbox's.
    const auto* received = parsed.find("Received");
    const auto at = received != nullptr ? mime::received_time(received->value) : std::nullopt;
    const std::int64_t wait_s = (scan_wait_.count() + 999) / 1000;
    if (!at || *at > now + 60 || *at + wait_s <= now) return scan;  // long ago, or a clock we cannot trust
    // Not while holding the write lock mailsiftd's recorder needs to write the scan.
    commit();
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(*at + wait_s - now);
    while (!scan && std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        scan = db_.find_scan(id);
    }
    return scan;
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
    batch_->defer_correction(id, c, now, corrector_);
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
        for (const auto& r : ready) {
            try {
                learn_scan(r.scan, r.to, now, {}, &r.by);
            } catch (const NotYours&) {
                // Asked for by a user whose scan it is not (checked before learn_scan changed anything): dropped.
            }
        }
        commit();
        total += ready.size();
        if (ready.size() < per_batch) return total;
    }
}

Trainer::UndoOutcome Trainer::undo_signature(const store::Digest& id, std::int64_t now, std::string_view raw) {
    load_linear_models();  // before the write lock: loading them commits
    open_batch();
    UndoOutcome o;
    const auto acting = acting_for(corrector_);  // nullopt: an administrator, who may undo any
    // A correction still waiting for its scan has trained nothing: withdrawn, by
    // the user who asked for it (a refusal rolls the withdrawal back).
    if (const auto waiting = batch_->drop_deferred_correction(id)) {
        if (acting && !same_user(waiting->by, corrector_)) not_yours(id, "waits for a correction another user asked for");
        o.result = UndoOutcome::Result::withdrawn;
        o.to = waiting->to;
        return o;
    }
    const auto latest = batch_->latest_correction(id);
    if (!latest) return o;  // nothing
    o.to = latest->to;
    if (!latest->undo) {
        o.result = UndoOutcome::Result::not_undoable;
        return o;
    }
    if (!may_undo(id, *latest, acting)) not_yours(id, "has a correction made for another user");
    o.was = latest->undo->was;
    o.result = take_back(id, *latest, raw, now);
    return o;
}

bool Trainer::may_undo(const store::Digest& id, const store::CorrectionRecord& latest,
                       const std::optional<std::string>& acting) {
    if (!acting) return true;  // an administrator, who may undo any
    // The user whose layer it stepped, else whose scan it corrected, else whoever made it.
    const store::CorrectionUndo& u = *latest.undo;
    std::optional<std::string> owner;
    if (!u.layer.slots.empty()) {
        owner = u.layer.user;
    } else if (const auto scan = db_.find_scan(id)) {
        owner = recorded_user(scan->features);
    }
    return owner ? owns(*acting, *owner, settings_.per_user) : same_user(latest.by, corrector_);
}

Trainer::UndoOutcome::Result Trainer::take_back(const store::Digest& id, const store::CorrectionRecord& latest,
                                                std::string_view raw, std::int64_t now) {
    using R = UndoOutcome::Result;
    const store::CorrectionUndo& u = *latest.undo;
    if (!u.site_cancelled) {
        // Learned otherwise since (learn, unlearn): putting back what the
        // correction found would undo that too.
        if (batch_->learned_class(id) != latest.to) return R::changed;
        if (!take_back_site(id, latest.to, u, raw, now)) return R::scan_gone;
    }
    if (!u.layer.slots.empty()) {  // and the step in its user's layer: the slots alone
        store::TrainingBatch::LinearStep back;
        back.hash_bits = u.hash_bits != 0 ? u.hash_bits : settings_.linear.hash_bits;
        back.slots.assign(u.layer.slots.begin(), u.layer.slots.end());
        back.step.feature = -u.layer.feature;
        back.step.nb_weight = 0.0;
        back.step.moves_bias = false;
        batch_->add_linear(back);
        if (linear_) linear_->apply(back.slots, back.step);
    }
    batch_->mark_undone(latest.id, now, corrector_);
    corrected_ = true;
    ++in_batch_;
    return R::undone;
}

bool Trainer::supersede(const store::Digest& id, store::Class c, std::string_view raw, std::int64_t now) {
    // A message corrected one way and then the other (moved into Junk and back
    // out) is undone, then corrected afresh: what stands is the latest word on
    // it, one correction, as though the first had not been made, and flipping
    // it again and again grows neither the layer's steps nor the store.
    open_batch();
    const auto latest = batch_->latest_correction(id);
    if (!latest || latest->to == c || !latest->undo) return false;
    if (!may_undo(id, *latest, acting_for(corrector_))) return false;  // another user's: moved, as before
    return take_back(id, *latest, raw, now) == UndoOutcome::Result::undone;
}

std::vector<store::TrainTerm> Trainer::learned_terms(const store::Digest& id, std::string_view raw,
                                                     std::vector<std::pair<std::string, std::uint32_t>>& lines,
                                                     Prepared& p) {
    std::vector<store::TrainTerm> terms;
    if (const auto scan = db_.find_scan(id)) {
        lines = parse_feature_lines(scan->features);
        terms = scan_terms(lines, nullptr, settings_.scorer != Scorer::linear);
    } else if (!raw.empty()) {
        p = prepare(raw, raw.size());
        if (p.problem == MessageProblem::none) {
            for (std::uint32_t i : p.order) {
                const auto& e = p.bag.entries()[i];
                terms.push_back({e.id, e.count, p.bag.text(e)});
            }
        }
    }
    return terms;
}

bool Trainer::take_back_site(const store::Digest& id, store::Class to, const store::CorrectionUndo& u,
                             std::string_view raw, std::int64_t now) {
    if (!u.was) {
        batch_->unlearn(id, to);
    } else {
        // Moved back: the features the correction learned, from the scan, or from the message itself.
        std::vector<std::pair<std::string, std::uint32_t>> lines;  // what the terms' texts point into
        Prepared p;
        const auto terms = learned_terms(id, raw, lines, p);
        if (terms.empty()) return false;
        batch_->learn(id, *u.was, terms, now);
    }
    if (u.hash_bits != 0) {
        // The step it took, taken back: the same slots, the opposite step.
        store::TrainingBatch::LinearStep back;
        back.hash_bits = u.hash_bits;
        back.slots.assign(u.slots.begin(), u.slots.end());
        back.step.feature = -u.feature;
        back.step.nb_weight = -u.nb_weight;
        batch_->add_linear(back);
        if (linear_) linear_->apply(back.slots, back.step);
        for (const auto& replay : u.replays) {  // and the replays it took, each the same way
            back.slots.assign(replay.slots.begin(), replay.slots.end());
            back.step.feature = -replay.feature;
            back.step.nb_weight = -replay.nb_weight;
            batch_->add_linear(back);
            if (linear_) linear_->apply(back.slots, back.step);
        }
        // Its message's sample is out of use now: the next refit is without it.
        batch_->drop_linear_sample(u.hash_bits);
        ++linear_learned_;  // a change to refit, as a message learned is (refit_due)
    }
    if (!u.contact.empty()) batch_->remove_contact(u.contact);
    return true;
}

std::optional<store::CorrectionRecord> Trainer::opposite_correction(std::string_view sender, std::string_view user,
                                                                    store::Class c) {
    open_batch();
    auto found = batch_->standing_sender_corrections(sender);
    for (auto it = found.rbegin(); it != found.rend(); ++it) {
        const store::CorrectionUndo& u = *it->undo;
        if (it->to == c || u.site_cancelled || !it->signature || u.layer.user == user) continue;
        if (batch_->learned_class(*it->signature) != it->to) continue;  // learned otherwise since
        std::vector<std::pair<std::string, std::uint32_t>> lines;
        Prepared p;
        if (u.was && learned_terms(*it->signature, {}, lines, p).empty()) continue;  // cannot be moved back
        return std::move(*it);
    }
    return std::nullopt;
}

std::optional<store::LearnResult> Trainer::learn_cancelling(const store::Digest& digest,
                                                            const std::vector<model::Term>& model_terms,
                                                            std::vector<model::Slot>& slots,
                                                            std::vector<model::Slot>& personal, std::string_view user,
                                                            std::string_view from_address, store::Class c,
                                                            std::int64_t now, store::CorrectionUndo& undo) {
    // Opposite corrections of the same sender's mail by two users cancel in
    // the site model (issue 58), so that the site does not swing with whoever
    // corrected last and a user who never corrected keeps the verdict the site
    // gave before they disagreed: the other's site part is taken back, this
    // one's is never taken, and each user's layer decides their own copies.
    open_batch();
    if (const auto latest = batch_->latest_correction(digest);
        latest && latest->to == c && latest->undo && latest->undo->site_cancelled) {
        return store::LearnResult::already_learned;  // corrected so already: nothing twice
    }
    auto other = opposite_correction(from_address, user, c);
    if (!other) return std::nullopt;
    store::CorrectionUndo& theirs = *other->undo;
    if (!take_back_site(*other->signature, other->to, theirs, {}, now)) return std::nullopt;
    theirs.was.reset();
    theirs.feature = 0.0f;
    theirs.nb_weight = 0.0;
    theirs.slots.clear();
    theirs.replays.clear();
    theirs.contact.clear();
    theirs.site_cancelled = true;
    batch_->set_correction_undo(other->id, theirs);
    std::optional<store::TrainingBatch::LinearStep> layer;
    linear_step(model_terms, std::move(slots), std::move(personal), c == store::Class::spam, &layer);
    if (layer) take_layer_step(*layer, user, from_address, &undo);
    undo.was.reset();
    undo.site_cancelled = true;
    ++linear_learned_;
    if (++in_batch_ >= settings_.batch_messages) commit();
    return store::LearnResult::learned;
}

std::vector<store::CorrectionRecord> Trainer::forget_user(std::string_view user) {
    open_batch();
    auto forgotten = batch_->forget_layer(user);
    if (linear_) {
        for (const auto& r : forgotten) {
            model::LinearStep back;
            back.feature = -r.undo->layer.feature;
            back.moves_bias = false;
            linear_->apply(r.undo->layer.slots, back);
        }
    }
    ++in_batch_;
    return forgotten;
}

Trainer::UndoOutcome Trainer::undo(std::string_view raw, std::int64_t now) {
    const std::optional<store::Digest> signature = message_signature(raw);
    if (signature) return undo_signature(*signature, now, raw);
    // Untagged: a correction of it for a user is keyed by its digest (correct()), or the earlier one.
    load_linear_models();  // before the write lock: loading them commits
    open_batch();
    const auto digests = message_digests(raw);
    store::Digest id = digests.now;
    if (digests.earlier && !batch_->latest_correction(id) && batch_->latest_correction(*digests.earlier)) {
        id = *digests.earlier;
    }
    UndoOutcome o = undo_signature(id, now, raw);
    if (o.result == UndoOutcome::Result::nothing) o.result = UndoOutcome::Result::untagged;
    return o;
}

const char* undo_problem(Trainer::UndoOutcome::Result r) {
    using R = Trainer::UndoOutcome::Result;
    switch (r) {
        case R::nothing: return "no correction of this message to undo";
        case R::not_undoable:
            return "its correction was recorded by a mailsift from before undo and cannot be undone; correct it instead";
        case R::changed:
            return "learned otherwise since its correction (learn or unlearn); left as it is: correct it instead";
        case R::scan_gone:
            return "its scan has expired (signature_days); give the message itself to undo its correction";
        case R::untagged: return "no X-Mailsift-Signature: mailsiftd did not tag it, so no correction of it is recorded "
                                 "('mailsift unlearn' forgets a message learned by hand)";
        case R::undone:
        case R::withdrawn: break;
    }
    return "";
}

}  // namespace mailsift::engine
