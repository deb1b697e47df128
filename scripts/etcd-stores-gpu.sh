#!/bin/sh
# Create, release and list on bbolt, a one-member and a three-member etcd,
# on the GPU machine (its CPUs and disk), where nothing can be installed:
# the etcd server travels with the test binary.
#   go test -c -o .gpu/core.test ./core && cp /usr/bin/etcd .gpu/etcd   # here
#   scripts/etcd-stores-gpu.sh .gpu                                     # there
set -eu
dir=${1:?usage: etcd-stores-gpu.sh DIR_WITH_core.test_AND_etcd}
echo "host $(hostname), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
export CHRONOS_ETCD="$dir/etcd" CHRONOS_REQUIRE_ETCD=1
"$dir/core.test" -test.run '^$' -test.bench 'BenchmarkStores$' -test.benchtime 300x -test.count 3
