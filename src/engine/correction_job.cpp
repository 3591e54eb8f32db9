// One input of `mailsift correct` applied to the model; see correction_job.hpp.
#include "mailsift/engine/correction_job.hpp"

namespace mailsift::engine {

const char* to_string(CorrectionAction a) {
    switch (a) {
        case CorrectionAction::spam: return "spam";
        case CorrectionAction::ham: return "ham";
        case CorrectionAction::undo: return "undo";
    }
    return "?";
}

CorrectionResult apply_correction(Trainer& trainer, CorrectionAction action, const CorrectionInput& input,
                                  std::int64_t now) {
    CorrectionResult r;
    if (action == CorrectionAction::undo) {
        r.undo = true;
        r.undone = input.signature ? trainer.undo_signature(*input.signature, now) : trainer.undo(input.raw, now);
        return r;
    }
    const store::Class to = action == CorrectionAction::spam ? store::Class::spam : store::Class::ham;
    r.correct = input.signature ? trainer.correct_or_defer_signature(*input.signature, to, now)
                                : trainer.correct(input.raw, input.size_bytes, to, now);
    return r;
}

}  // namespace mailsift::engine
