#!/bin/sh
# Create, release and list on bbolt, a one-member and a three-member etcd,
# on the GPU machine (its CPUs and disk), where nothing can be installed:
# the etcd server travels with the test binary. Given a second test binary
# (an earlier build), the two run in turns, three rounds each, in one call.
#   go test -c -o .gpu/core.test ./core && cp /usr/bin/etcd .gpu/etcd   # here
#   scripts/etcd-stores-gpu.sh .gpu [.gpu/core-old.test]                # there
# (binaries may travel gzipped, DIR/*.gz, to stay within what a call carries)
set -eu
dir=${1:?usage: etcd-stores-gpu.sh DIR_WITH_core.test_AND_etcd [OLD_core.test]}
old=${2:-}
for z in "$dir"/*.gz; do [ -e "$z" ] && gunzip -f "$z"; done
chmod +x "$dir"/* 2>/dev/null || true
echo "host $(hostname), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
export CHRONOS_ETCD="$dir/etcd" CHRONOS_REQUIRE_ETCD=1
if [ -z "$old" ]; then
	"$dir/core.test" -test.run '^$' -test.bench 'BenchmarkStores$' -test.benchtime 300x -test.count 3
	exit
fi
for round in 1 2 3; do
	for build in "$old" "$dir/core.test"; do
		echo "== round $round: $build"
		"$build" -test.run '^$' -test.bench 'BenchmarkStores/etcd' -test.benchtime 300x -test.count 1
	done
done
