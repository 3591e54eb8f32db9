#!/usr/bin/env bash
# Installs what is missing, builds, and runs the CLI's main job on the shipped
# fixtures: learn spam and ham into a local database, then classify and explain.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMAILSIFT_BUILD_TESTS=OFF >/dev/null
cmake --build build -j"$(nproc)" --target mailsift
db=${MAILSIFT_DB:-$PWD/build/quickstart.db}
m=tests/data/messages
set -x
build/src/cli/mailsift --db "$db" learn --spam $m/spam_money_offer.eml $m/spam_cheap_pills.eml $m/spam_investment.eml
build/src/cli/mailsift --db "$db" learn --ham $m/ham_meeting_notes.eml $m/ham_patch_review.eml $m/ham_build_report.eml
build/src/cli/mailsift --db "$db" classify $m/mbox_two_messages.mbox
build/src/cli/mailsift --db "$db" explain $m/spam_money_offer.eml
build/src/cli/mailsift --db "$db" stats
