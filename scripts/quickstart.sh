#!/usr/bin/env bash
# Installs what is missing, builds, trains a small model from the shipped
# fixtures into a local SQLite file, and runs mailsiftd in the foreground on
# inet:127.0.0.1:8891 (Ctrl-C stops it). Point Postfix at it with
#   smtpd_milters = inet:127.0.0.1:8891
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$(nproc)" --target mailsift mailsiftd
db=${MAILSIFT_DB:-$PWD/build/quickstart.db}
listen=${MAILSIFT_LISTEN:-inet:127.0.0.1:8891}
m=tests/data/messages
build/src/cli/mailsift --db "$db" learn --spam $m/spam_money_offer.eml $m/spam_cheap_pills.eml $m/spam_investment.eml
build/src/cli/mailsift --db "$db" learn --ham $m/ham_meeting_notes.eml $m/ham_patch_review.eml $m/ham_build_report.eml
build/src/cli/mailsift --db "$db" classify $m/mbox_two_messages.mbox
echo "starting mailsiftd on $listen with $db (train more with: build/src/cli/mailsift --db $db learn ...)"
exec build/src/daemon/mailsiftd --foreground --db "$db" --listen "$listen"
