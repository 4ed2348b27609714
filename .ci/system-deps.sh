#!/usr/bin/env bash
# Debian packages the course needs beyond Python:
#   dataset-fashion-mnist  the Fashion-MNIST IDX files (D2L 11.8's data set)
#   chromium               headless checks of the rendered book
#   bubblewrap             the sandbox the autograder runs student code in
#   postgresql             the PostgreSQL gradebook's tests (a throwaway cluster made with initdb)
#   fonts-noto-cjk         the Chinese edition of the chapter-at-a-glance page and its figures
# Called by .ci/run and by make's bootstrap. Installs them where apt-get is
# available and we are root; otherwise says what to do and carries on.
set -u
PACKAGES="dataset-fashion-mnist chromium bubblewrap libseccomp2 postgresql fonts-noto-cjk"
missing=""
for p in $PACKAGES; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
  echo "system-deps: installing$missing"
  apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q $missing >/dev/null \
    && exit 0
  echo "system-deps: apt-get could not install$missing" >&2
  exit 1
fi
cat >&2 <<MSG
system-deps: these Debian packages are missing:$missing
  On Debian/Ubuntu run:  sudo apt-get update && sudo apt-get install$missing
  Elsewhere: Fashion-MNIST loads from a data directory you name or downloads (see README);
  the browser checks of the book and the sandboxed grader are skipped without them.
MSG
exit 0
