#!/usr/bin/env bash
# Builds the Debian package of mailsift into build-deb/ and lints it:
#   scripts/package.sh                 build-deb/mailsift_VERSION_ARCH.deb
#   scripts/package.sh --version V     the same at version V (lower, to test upgrades)
#   scripts/package.sh --no-lint       skip lintian
#   scripts/package.sh --print-version print VERSION and stop
# VERSION is the one in CMakeLists.txt's project(); the package is native, so
# debian/changelog is written here from it (it is not kept in git). Installs the
# build dependencies from Debian when missing (apt-get, root or sudo). The build
# runs in build-deb/src/ so the source tree stays clean; a second run reuses its
# compiled objects. Then: sudo apt install ./build-deb/mailsift_*.deb
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
version="" lint=1 print=0
while [ $# -gt 0 ]; do
    case $1 in
        --version) version=$2; shift 2 ;;
        --no-lint) lint=0; shift ;;
        --print-version) print=1; shift ;;
        -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
        *) echo "package.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
    esac
done
[ -n "$version" ] || version=$(sed -n 's/^project(mailsift VERSION \([0-9][0-9.]*\).*/\1/p' "$repo/CMakeLists.txt")
[ -n "$version" ] || { echo "package.sh: no version in CMakeLists.txt's project()" >&2; exit 1; }
if [ "$print" = 1 ]; then echo "$version"; exit 0; fi

# What building the package needs: the build's own dependencies and Debian's tools.
"$repo/scripts/deps.sh" --package

out=$repo/build-deb
src=$out/src/mailsift
mkdir -p "$src"
# A fresh copy of the sources (git's files when this is a clone), keeping only
# the previous build's objects (obj-*), so that a second build is incremental.
find "$src" -mindepth 1 -maxdepth 1 ! -name 'obj-*' -exec rm -rf {} +
if git -C "$repo" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    (cd "$repo" && git ls-files -z --cached --others --exclude-standard | grep -zv '^build-deb/' |
        tar --null -T - -cf -) | tar -xf - -C "$src"
    commit=$(git -C "$repo" rev-parse --short HEAD)
else
    tar -C "$repo" --exclude='./build*' --exclude='./.git' -cf - . | tar -xf - -C "$src"
    commit="not a git clone"
fi
cat >"$src/debian/changelog" <<END
mailsift ($version) unstable; urgency=medium

  * Built by scripts/package.sh from the source tree (commit $commit).

 -- mailsift maintainers <maintainers@users.noreply.a-seed-e22b8512.example>  $(date -R)
END

options="parallel=$(nproc)"
[ -z "${DEB_BUILD_OPTIONS:-}" ] || options="$DEB_BUILD_OPTIONS $options"
(cd "$src" && DEB_BUILD_OPTIONS=$options dpkg-buildpackage -b -us -uc -nc)
arch=$(dpkg-architecture -qDEB_HOST_ARCH)
for f in "$out/src/mailsift_${version}_${arch}".* "$out/src/mailsift-dbgsym_${version}_${arch}.deb"; do
    [ -e "$f" ] && mv -f "$f" "$out/"
done
deb=$out/mailsift_${version}_${arch}.deb
[ -f "$deb" ] || { echo "package.sh: $deb was not built" >&2; exit 1; }
if [ "$lint" = 1 ]; then
    # Errors and warnings fail; overrides, each with its reason, are in debian/.
    lintian --fail-on error,warning "$deb"
fi
echo "built $deb"
