#!/usr/bin/env bash
# Dependencies point one way (../shared/DESIGN.md, issue 59 item 5): each
# module's sources and headers include only the modules listed for it here.
# The store knows nothing of MIME or features (contacts are handed to the
# features module by the engine: engine/contacts.hpp); the milter stands
# alone; the engine knows no socket, daemon or command line.
#
# usage: dependencies.sh SOURCE_DIR
# Prints each include that breaks the rule and exits 1; exits 0 when none does.
set -euo pipefail
root=${1:?usage: dependencies.sh SOURCE_DIR}

declare -A allowed=(
    [mime]=""
    [model]=""
    [milter]=""
    [features]="mime"
    [store]="model"
    [engine]="mime features model store"
    [evaluation]="engine features mime model store"
    [console]="engine features mime model store"
    [daemon]="console engine features milter mime model store"
    [cli]="console engine evaluation features mime model store"
)

bad=0 checked=0
for module in "${!allowed[@]}"; do
    dirs=()
    [[ -d $root/src/$module ]] && dirs+=("$root/src/$module")
    [[ -d $root/include/mailsift/$module ]] && dirs+=("$root/include/mailsift/$module")
    ((${#dirs[@]})) || { echo "no sources for module '$module' under $root" >&2; exit 1; }
    while IFS=: read -r file line text; do
        used=$(sed -E 's|.*#include *"mailsift/([a-z_]+)/.*|\1|' <<<"$text")
        [[ $used == "$module" || " ${allowed[$module]} " == *" $used "* ]] && continue
        echo "not ok: ${file#"$root"/}:$line: $module includes $used ($text)"
        bad=1
    done < <(grep -rnE '^[[:space:]]*#[[:space:]]*include[[:space:]]*"mailsift/[a-z_]+/' "${dirs[@]}" || true)
    checked=$((checked + 1))
done
# Every module under src/ is in the table, so that a new one is not left unchecked.
for d in "$root"/src/*/; do
    m=$(basename "$d")
    [[ -v "allowed[$m]" ]] || { echo "not ok: module '$m' (src/$m) has no rule in tests/dependencies.sh"; bad=1; }
done
((bad == 0)) && echo "ok: $checked modules include only what they may"
exit "$bad"
