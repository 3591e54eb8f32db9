// `mailsift correct` through mailsiftd's correction socket; see correction_client.hpp.
#include "correction_client.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <utility>

namespace mailsift::cli {
namespace {

// A connected socket, or -1 with `why` set.
int open_connection(const std::string& path, std::string& why) {
    sockaddr_un address{};
    if (path.size() >= sizeof address.sun_path) {
        why = "the path is too long for a unix socket";
        return -1;
    }
    const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        why = std::strerror(errno);
        return -1;
    }
    address.sun_family = AF_UNIX;
    std::memcpy(address.sun_path, path.c_str(), path.size() + 1);
    if (::connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0) {
        why = std::strerror(errno);
        ::close(fd);
        return -1;
    }
    // mailsiftd answers within its own deadline (30 s a read) plus the time a
    // commit takes; this only keeps a hung daemon from hanging a mail client's pipe.
    timeval limit{120, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof limit);
    ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &limit, sizeof limit);
    return fd;
}

void write_all(int fd, const std::string& bytes) {
    std::size_t done = 0;
    while (done < bytes.size()) {
        const ssize_t n = ::send(fd, bytes.data() + done, bytes.size() - done, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) throw std::runtime_error(std::string("sending to mailsiftd: ") + std::strerror(errno));
        done += static_cast<std::size_t>(n);
    }
}

// Everything mailsiftd says, up to its closing the connection.
std::string read_answer(int fd) {
    std::string answer;
    char buffer[4096];
    for (;;) {
        const ssize_t n = ::read(fd, buffer, sizeof buffer);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) throw std::runtime_error(std::string("waiting for mailsiftd's answer: ") + std::strerror(errno));
        if (n == 0) return answer;
        answer.append(buffer, static_cast<std::size_t>(n));
        if (answer.size() > engine::max_correction_answer_bytes) throw std::runtime_error("mailsiftd's answer is too long");
    }
}

}  // namespace

std::optional<CorrectionClient> CorrectionClient::connect(const std::string& path, engine::CorrectionAction action,
                                                          std::size_t max_message_bytes, OnResult on_result,
                                                          std::string& why) {
    const int fd = open_connection(path, why);
    if (fd < 0) return std::nullopt;
    return CorrectionClient(path, action, max_message_bytes, std::move(on_result), fd);
}

CorrectionClient::CorrectionClient(std::string path, engine::CorrectionAction action, std::size_t max_message_bytes,
                                   OnResult on_result, int first_connection)
    : path_(std::move(path)),
      max_body_bytes_(engine::max_correction_body_bytes(max_message_bytes)),
      on_result_(std::move(on_result)),
      connection_(first_connection) {
    request_.action = action;
}

CorrectionClient::CorrectionClient(CorrectionClient&& other) noexcept
    : path_(std::move(other.path_)),
      max_body_bytes_(other.max_body_bytes_),
      on_result_(std::move(other.on_result_)),
      connection_(std::exchange(other.connection_, -1)),
      request_(std::move(other.request_)),
      labels_(std::move(other.labels_)),
      body_bytes_(other.body_bytes_),
      answered_(other.answered_) {}

CorrectionClient::~CorrectionClient() {
    if (connection_ >= 0) ::close(connection_);
}

void CorrectionClient::add(std::string label, engine::CorrectionInput input) {
    const std::size_t bytes = input.raw.size() + 64;
    if (!request_.inputs.empty() &&
        (request_.inputs.size() == engine::max_correction_inputs || body_bytes_ + bytes > max_body_bytes_)) {
        send();
    }
    body_bytes_ += bytes;
    request_.inputs.push_back(std::move(input));
    labels_.push_back(std::move(label));
}

void CorrectionClient::finish() {
    if (!request_.inputs.empty()) send();
}

void CorrectionClient::send() {
    int fd = std::exchange(connection_, -1);
    if (fd < 0) {
        std::string why;
        fd = open_connection(path_, why);
        if (fd < 0) throw std::runtime_error("cannot reach mailsiftd at " + path_ + ": " + why);
    }
    struct Closer {
        int fd;
        ~Closer() { ::close(fd); }
    } closer{fd};
    write_all(fd, engine::encode_request(request_));
    ::shutdown(fd, SHUT_WR);
    const std::string text = read_answer(fd);
    if (text.empty()) {
        throw std::runtime_error("mailsiftd at " + path_ +
                                 " closed the connection without answering (stopping?); the corrections sent may "
                                 "or may not have been made: correct again to be sure");
    }
    engine::CorrectionAnswer answer;
    try {
        answer = engine::parse_answer(text, request_.inputs.size());
    } catch (const engine::WireError& e) {
        throw std::runtime_error("mailsiftd at " + path_ + " answered off the format (" + e.what() + ")");
    }
    if (answer.refused.starts_with("not permitted: ")) throw NotPermitted("mailsiftd made no correction: " + answer.refused);
    if (!answer.refused.empty()) throw std::runtime_error("mailsiftd made no correction: " + answer.refused);
    for (std::size_t i = 0; i < answer.results.size(); ++i) on_result_(labels_[i], answer.results[i]);
    answered_ += answer.results.size();
    request_.inputs.clear();
    labels_.clear();
    body_bytes_ = 0;
}

}  // namespace mailsift::cli
