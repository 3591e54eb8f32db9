#!/usr/bin/env bash
# license_check.sh REPO_ROOT — the license is where users and Debian look for it:
#   - LICENSE at the top is the Apache License 2.0 as published (Debian's
#     /usr/share/common-licenses/Apache-2.0, byte for byte, where that exists);
#   - debian/copyright is machine-readable (DEP-5), its "Files: *" paragraph says
#     "License: Apache-2.0", and a stand-alone "License: Apache-2.0" paragraph
#     holds the license's notice;
#   - the README says it.
# Prints "ok - ..." or "not ok - ..." per check; exits 1 if any failed.
set -u
if [ $# -ne 1 ] || [ ! -d "$1" ]; then
    echo "usage: $0 REPO_ROOT" >&2
    exit 2
fi
root=$1
failed=0
ok() { echo "ok - $1"; }
not_ok() { echo "not ok - $1"; failed=1; }

if [ -f "$root/LICENSE" ] && head -n 4 "$root/LICENSE" | grep -q 'Apache License' &&
    head -n 4 "$root/LICENSE" | grep -q 'Version 2.0, January 2004' &&
    grep -q 'END OF TERMS AND CONDITIONS' "$root/LICENSE"; then
    ok "LICENSE holds the Apache License, Version 2.0"
else
    not_ok "LICENSE exists and holds the Apache License, Version 2.0"
fi
if [ -f /usr/share/common-licenses/Apache-2.0 ]; then
    cmp -s "$root/LICENSE" /usr/share/common-licenses/Apache-2.0 &&
        ok "LICENSE is the text as published (Debian's common-licenses/Apache-2.0)" ||
        not_ok "LICENSE is the text as published (differs from /usr/share/common-licenses/Apache-2.0)"
fi

copyright=$root/debian/copyright
# The paragraphs of debian/copyright, one per line, fields joined with "|".
paragraphs=$(awk 'BEGIN { RS = ""; FS = "\n" } { p = ""; for (i = 1; i <= NF; i++) if ($i !~ /^[ \t]/) p = p "|" $i; print p "|" }' "$copyright" 2>/dev/null)
if head -n 1 "$copyright" 2>/dev/null | grep -qx 'Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/'; then
    ok "debian/copyright is in the machine-readable format (DEP-5)"
else
    not_ok "debian/copyright starts with the DEP-5 Format line"
fi
if grep -q '|Files: \*|' <<<"$paragraphs" && grep '|Files: \*|' <<<"$paragraphs" | grep -q '|License: Apache-2.0|'; then
    ok "debian/copyright licenses \"Files: *\" under Apache-2.0"
else
    not_ok "debian/copyright's \"Files: *\" paragraph says \"License: Apache-2.0\""
fi
if grep -qx '|License: Apache-2.0|' <<<"$paragraphs" && grep -q '/usr/share/common-licenses/Apache-2.0' "$copyright"; then
    ok "debian/copyright has the Apache-2.0 license paragraph, pointing to common-licenses"
else
    not_ok "debian/copyright has a stand-alone \"License: Apache-2.0\" paragraph naming /usr/share/common-licenses/Apache-2.0"
fi
if grep -q 'Apache License, Version 2.0' "$root/README.md"; then
    ok "the README names the license"
else
    not_ok "the README names the license"
fi
exit $failed
