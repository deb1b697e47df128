#!/bin/sh
# The keeper under a member's flood, on the GPU machine (its CPUs, not its
# GPU): another user's create p50 under a flood of creates and a flood of
# refused releases, each against the create alone, ROUNDS rounds.
#   go test -c -o .gpu/keeper.test ./core/keeper   # here, then on the machine:
#   scripts/keeper-flood-gpu.sh .gpu/keeper.test 3
# As root: the test runs the flood as nobody and the victim as daemon.
set -eu
bin=${1:?usage: keeper-flood-gpu.sh KEEPER_TEST_BINARY [ROUNDS]}
rounds=${2:-3}
echo "host $(hostname), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
i=1
while [ "$i" -le "$rounds" ]; do
	for kind in create refused; do
		echo "== round $i, flood of $kind"
		KEEPER_FIGURES=1 KEEPER_CREATES=300 KEEPER_FLOOD_KIND=$kind "$bin" -test.count=1 -test.run '^TestKeeperFloodFigure$' -test.v 2>&1 |
			grep -E "alone|flood of|bookings live|FAIL|panic" || true
	done
	i=$((i + 1))
done
