// systemd readiness notification (sd_notify protocol) without libsystemd:
// one datagram to $NOTIFY_SOCKET. Does nothing when not run by systemd.
#pragma once

#include <string_view>

namespace mailsift::daemon {

void notify_systemd(std::string_view state);  // e.g. "READY=1", "STOPPING=1"

}  // namespace mailsift::daemon
