#!/usr/bin/env bash
# Stripped sizes of what goes on a board: for x86-64 from the stock
# toolchain's release build in target/release (CI's; the record-only
# binary copied there as rtrec-record-only, .ci/run), for aarch64 and
# armv7 from scripts/cross.sh's builds (rustc 1.85) in target/debian, and
# the "(board)" rows from scripts/board-build.sh's in target/board. The
# record-only binary of the ARM targets is the board build's only
# (scripts/cross.sh does not build it). A file not built prints "-" and
# is not checked:
#
#   scripts/footprint.sh           # prints the table
#   scripts/footprint.sh --check   # and fails when one grew more than 10 %
#                                  # past the figure documented in docs/embedded.md,
#                                  # or past its budget below
#
# The documented figures are the table under "Stripped sizes" in
# docs/embedded.md (bytes); after an intended growth, update them there.
set -euo pipefail
cd "$(dirname "$0")/.."
check=0
[ "${1:-}" = --check ] && check=1

# target triple, strip tool, column name
targets=(
  "x86_64-unknown-linux-gnu strip x86-64"
  "aarch64-unknown-linux-gnu aarch64-linux-gnu-strip aarch64"
  "armv7-unknown-linux-gnueabihf arm-linux-gnueabihf-strip armv7"
)
# build, artifact file, row name (the rest of the line)
artifacts=(
  "release rtrec full"
  "release rtrec-record-only record-only"
  "release librtrec.so librtrec.so"
  "board rtrec record-only (board)"
  "board librtrec.so librtrec.so (board)"
)
# artifact BUILD TRIPLE FILE: where that build leaves it.
artifact() {
  case $1 in
    release) if [ "$2" = x86_64-unknown-linux-gnu ]; then echo "target/release/$3"; else echo "target/debian/$2/release/$3"; fi ;;
    board) echo "target/board/$2/release-small/$3" ;;
  esac
}
# Budgets, whatever the documented figure: the board build's record-only
# binary under 1 MB and its C library under 500 KB on aarch64 (issue 20's
# targets, docs/embedded.md "Under 1 MB, position-independent"). The
# binary grows in 64 KiB steps, less than the 10 % margin, so the margin
# alone would let it past 1 MB. Row, column, bytes.
budgets=(
  "record-only (board)|aarch64|1000000"
  "librtrec.so (board)|aarch64|500000"
)
doc=docs/embedded.md
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failed=0
printf '%-22s %10s %10s %10s\n' "" x86-64 aarch64 armv7
for a in "${artifacts[@]}"; do
  read -r build file row <<<"$a"
  line=$(printf '%-22s' "$row")
  for t in "${targets[@]}"; do
    read -r triple strip col <<<"$t"
    f=$(artifact "$build" "$triple" "$file")
    if [ ! -f "$f" ]; then
      line+=$(printf ' %10s' -)
      continue
    fi
    "$strip" -o "$tmp/s" "$f"
    size=$(stat -c %s "$tmp/s")
    line+=$(printf ' %10s' "$size")
    # The documented figure: the row `| row | x86-64 | aarch64 | armv7 |`.
    col_n=$(case $col in x86-64) echo 3 ;; aarch64) echo 4 ;; armv7) echo 5 ;; esac)
    # Only the table under "### Stripped sizes" (other tables name `full` too).
    want=$(awk -F'|' -v r="\`$row\`" -v c="$col_n" '/^### Stripped sizes/ {on = 1}
      on && index($2, r) {gsub(/[ ,]/, "", $c); print $c; exit}' "$doc")
    if [ "$check" = 1 ]; then
      # A dash: not documented on purpose (a build CI does not make, such
      # as the ARM record-only binary outside the board build), so a file
      # left in a target directory by an older build is not judged.
      if [ "$want" = "–" ] || [ "$want" = - ]; then
        :
      elif ! [[ "$want" =~ ^[0-9]+$ ]]; then
        echo "footprint.sh: $doc documents no size for $row on $col" >&2
        failed=1
      elif [ "$size" -gt $((want + want / 10)) ]; then
        echo "footprint.sh: $row on $col is $size bytes stripped, more than 10 % past the documented $want (docs/embedded.md)" >&2
        failed=1
      fi
      for b in "${budgets[@]}"; do
        IFS='|' read -r b_row b_col b_max <<<"$b"
        if [ "$b_row" = "$row" ] && [ "$b_col" = "$col" ] && [ "$size" -gt "$b_max" ]; then
          echo "footprint.sh: $row on $col is $size bytes stripped, past its budget of $b_max (docs/embedded.md)" >&2
          failed=1
        fi
      done
    fi
  done
  echo "$line"
done
exit $failed
