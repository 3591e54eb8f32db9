#!/usr/bin/env bash
# docs_lint.sh REPO_ROOT — lints every man page in REPO_ROOT/man.
#
# For each page:
#   - groff: rendered with `groff -ww -man -z` for the utf8 and ascii devices
#     (what man(1) uses on UTF-8 and C-locale terminals); any warning fails;
#   - mandoc: `mandoc -T lint`, when mandoc is available (the Debian package
#     mandoc is installed when missing and we are root with apt-get). STYLE
#     messages are suggestions and are only counted in a note; WARNING and worse
#     (ERROR, UNSUPP, BADARG, SYSERR) fail, unless listed in ALLOWED below;
#   - .TH: title and section agree with the file name (mailsift.conf.5 ->
#     "MAILSIFT.CONF" 5);
#   - references to the project's own pages (.BR mailsift... (N)) name pages
#     that exist in man/.
# Prints "ok - PAGE" or "not ok - PAGE" with "# " diagnostics, then
# "N passed, M failed"; exits 1 if any page failed.
set -u

if [ $# -lt 1 ] || [ ! -d "$1/man" ]; then
    echo "usage: $0 REPO_ROOT   (REPO_ROOT/man must exist)" >&2
    exit 2
fi
root=$(cd "$1" && pwd)

# mandoc messages accepted although mandoc rates them WARNING, as
# "PAGE|TEXT": PAGE is the file name, TEXT a fixed string of the message.
# Each entry must say why it is not a defect; delete it once the page is fixed.
ALLOWED=(
    # "PAGE|message" entries for mandoc warnings that are known to be harmless.
    # Empty: every page lints clean.
)

install_if_missing() {  # COMMAND PACKAGE
    command -v "$1" >/dev/null 2>&1 && return 0
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        echo "# $1 not found: installing the Debian package $2"
        export DEBIAN_FRONTEND=noninteractive
        apt-get install -y -q --no-install-recommends "$2" >/dev/null 2>&1 ||
            { apt-get update -q >/dev/null 2>&1 &&
              apt-get install -y -q --no-install-recommends "$2" >/dev/null 2>&1; }
    fi
    command -v "$1" >/dev/null 2>&1
}

install_if_missing groff groff-base || { echo "# groff is required"; }
have_mandoc=yes
install_if_missing mandoc mandoc || { have_mandoc=no; echo "# mandoc not available: mandoc lint skipped"; }

passed=0
failed=0
shopt -s nullglob
pages=("$root"/man/*.[1-9])
if [ ${#pages[@]} -eq 0 ]; then
    echo "not ok - no man pages in $root/man"
    echo "0 passed, 1 failed"
    exit 1
fi

for page in "${pages[@]}"; do
    name=$(basename "$page")
    rel="man/$name"
    problems=()
    notes=()

    # groff: any output on standard error is a warning (-z discards the page).
    if command -v groff >/dev/null 2>&1; then
        for dev in utf8 ascii; do
            out=$(groff -ww -man -z -T"$dev" "$page" 2>&1)
            rc=$?
            if [ $rc -ne 0 ] || [ -n "$out" ]; then
                problems+=("groff -T$dev (exit $rc):")
                while IFS= read -r line; do problems+=("  $line"); done <<<"$out"
            fi
        done
    else
        problems+=("groff is not installed")
    fi

    # mandoc: "mandoc: FILE:LINE:COL: LEVEL: message..." per line.
    if [ "$have_mandoc" = yes ]; then
        out=$(mandoc -T lint "$page" 2>&1)
        rc=$?
        styles=0
        while IFS= read -r line; do
            [ -z "$line" ] && continue
            case "$line" in
                *": STYLE: "*) styles=$((styles + 1)); continue ;;
            esac
            allowed=no
            for entry in "${ALLOWED[@]}"; do
                if [ "${entry%%|*}" = "$name" ] && [[ "$line" == *": WARNING: ${entry#*|}"* ]]; then
                    allowed=yes
                fi
            done
            if [ $allowed = yes ]; then
                notes+=("accepted (see ALLOWED): $line")
            else
                problems+=("$line")
            fi
        done <<<"$out"
        # Exit status 3 and up means errors; they are also printed, but do not
        # rely on the text alone.
        if [ $rc -ge 3 ]; then problems+=("mandoc -T lint exited with $rc"); fi
        if [ $styles -gt 0 ]; then
            notes+=("$styles mandoc STYLE suggestion(s), accepted; see: mandoc -T lint $rel")
        fi
    fi

    # .TH TITLE SECTION must match NAME.SECTION.
    base=${name%.*}
    section=${name##*.}
    th=$(grep -m1 '^\.TH ' "$page")
    read -r _ th_title th_section _ <<<"$th"
    th_title=${th_title//\"/}
    th_section=${th_section//\"/}
    want_title=$(printf '%s' "$base" | tr '[:lower:]' '[:upper:]')
    if [ "$th_title" != "$want_title" ] || [ "$th_section" != "$section" ]; then
        problems+=(".TH says '$th_title $th_section', expected '$want_title $section'")
    fi

    # Cross-references to the project's pages must resolve within man/.
    while read -r ref_name ref_section; do
        [ -f "$root/man/$ref_name.$ref_section" ] ||
            problems+=("refers to $ref_name($ref_section), but man/$ref_name.$ref_section does not exist")
    done < <(sed -n 's/^\.BR \(mailsift[A-Za-z0-9._-]*\) (\([1-9]\)).*/\1 \2/p' "$page" | sort -u)

    if [ ${#problems[@]} -eq 0 ]; then
        echo "ok - $rel"
        passed=$((passed + 1))
    else
        echo "not ok - $rel"
        failed=$((failed + 1))
        for p in "${problems[@]}"; do echo "#   $p"; done
    fi
    for n in "${notes[@]}"; do echo "#   note: $n"; done
done

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
