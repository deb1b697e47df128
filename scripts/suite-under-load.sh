#!/usr/bin/env bash
# The whole suite, run back to back N times (10 unless given) with two CPU
# hogs beside it, as the tests-pass-at-any-time issue asks: every run must
# pass. Prints each run's wall time and result, and a summary; exits 1 when
# any run failed (its log is kept in $LOGDIR).
#
#   scripts/suite-under-load.sh [N]      (make test-loaded)
set -u
cd "$(dirname "$0")/.."
runs=${1:-10}
LOGDIR=${LOGDIR:-$(mktemp -d /tmp/chronos-loaded-XXXXXX)}
if command -v stress-ng >/dev/null; then
  stress-ng --cpu 2 --timeout 0 >/dev/null 2>&1 &
else
  { yes >/dev/null & yes >/dev/null & wait; } &
fi
hogs=$!
trap 'kill -- -$hogs 2>/dev/null; kill $hogs 2>/dev/null; pkill -P $hogs 2>/dev/null' EXIT
failed=0
for i in $(seq 1 "$runs"); do
  start=$(date +%s)
  if CHRONOS_REQUIRE_ETCD=1 go test -race -count=1 -timeout 20m -parallel 4 ./... >"$LOGDIR/run$i.log" 2>&1; then
    result=pass
  else
    result=FAIL
    failed=$((failed + 1))
  fi
  echo "run $i: $result in $(( $(date +%s) - start )) s$( [ $result = FAIL ] && echo " ($LOGDIR/run$i.log: $(grep -E -- '^--- FAIL' "$LOGDIR/run$i.log" | tr '\n' ' '))")"
done
echo "$((runs - failed)) passed, $failed failed"
[ "$failed" = 0 ]
