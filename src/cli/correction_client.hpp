// `mailsift correct`'s side of mailsiftd's correction socket (correct_socket;
// the bytes: engine/correction_wire.hpp): inputs gathered into requests of at
// most max_correction_inputs and the body a request may hold, each sent on a
// connection of its own, and answered once mailsiftd has committed it.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "mailsift/engine/correction_wire.hpp"

namespace mailsift::cli {

// mailsiftd refused the request as not the caller's to make (another user's
// scan or correction, or --user from an untrusted caller); nothing was applied.
class NotPermitted : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

class CorrectionClient {
public:
    // Each input's result, with the label it was given, in input order.
    using OnResult = std::function<void(const std::string& label, const engine::CorrectionResult&)>;
    // Connects (and checks that something listens) once; nullopt, with `why`
    // set, when nothing takes corrections at `path`.
    static std::optional<CorrectionClient> connect(const std::string& path, engine::CorrectionAction action,
                                                   std::size_t max_message_bytes, OnResult on_result, std::string& why);
    // Whose copies the inputs are (correct --user); mailsiftd keys its layer with its own per_user.
    void set_user(std::string user) { request_.user = std::move(user); }
    // Queues one input; sends a full request. Throws std::runtime_error when
    // mailsiftd refuses or cannot be reached (what was answered before stands).
    void add(std::string label, engine::CorrectionInput input);
    // Sends what is queued.
    void finish();
    std::size_t answered() const { return answered_; }

private:
    CorrectionClient(std::string path, engine::CorrectionAction action, std::size_t max_message_bytes, OnResult on_result,
                     int first_connection);
    void send();

    std::string path_;
    std::size_t max_body_bytes_;
    OnResult on_result_;
    int connection_ = -1;  // the first request's, made by connect(); later ones connect again
    engine::CorrectionRequest request_;
    std::vector<std::string> labels_;
    std::size_t body_bytes_ = 0, answered_ = 0;

public:
    CorrectionClient(CorrectionClient&& other) noexcept;
    CorrectionClient& operator=(CorrectionClient&&) = delete;
    ~CorrectionClient();
};

}  // namespace mailsift::cli
