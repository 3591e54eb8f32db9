// The console's audit line (audit.hpp).
#include "mailsift/console/audit.hpp"

namespace mailsift::console {

namespace {

bool word_char(char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
           c == ':' || c == '@' || c == '/' || c == '+' || c == '-';
}

}  // namespace

std::string audit_word(std::string_view value) {
    if (value.empty()) return "-";
    std::string out;
    for (const char c : value.substr(0, 64)) out.push_back(word_char(c) ? c : '?');
    return out;
}

std::string audit_target(std::string_view value) {
    if (value.empty()) return "-";
    std::string out;
    for (const char c : value.substr(0, max_audit_target)) {
        out.push_back(word_char(c) || c == '=' || c == '&' || c == '%' || c == ',' ? c : '?');
    }
    if (value.size() > max_audit_target) out += "...";
    return out;
}

std::string audit_line(const AuditEvent& e) {
    std::string line = "console audit: event=" + audit_word(e.event) + " outcome=" + audit_word(e.outcome) +
                       " account=" + audit_word(e.account) + " role=" + audit_word(e.role) +
                       " client=" + audit_word(e.client);
    if (!e.forwarded.empty()) line += " forwarded=" + audit_word(e.forwarded);
    line += " target=" + audit_target(e.target);
    return line;
}

}  // namespace mailsift::console
