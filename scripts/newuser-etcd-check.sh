#!/bin/bash
# The new-user check of a lab on etcd: three local members, two simulated
# hosts (gpuA, gpuB) each with root's monitor, two users (nobody, daemon,
# both in group gpu); the leader is killed half way. As root, in a private
# mount namespace so that /etc/chronos is a scratch one:
#   make build && mkdir -p /tmp/nu-bin && cp bin/chronos /tmp/nu-bin/
#   unshare -m --propagation private bash scripts/newuser-etcd-check.sh
set -u
mount -t tmpfs -o mode=0755 tmpfs /etc/chronos 2>/dev/null || { mkdir -p /etc/chronos; mount -t tmpfs -o mode=0755 tmpfs /etc/chronos; }
mkdir -p /var/lib/chronos /run/chronos
mount -t tmpfs -o mode=0755 tmpfs /var/lib/chronos; mount -t tmpfs -o mode=0755 tmpfs /run/chronos
B=/tmp/nu-bin/chronos
D=$(mktemp -d /tmp/nu-etcd.XXXX); chmod 755 $D
P=(23791 23792 23793); Q=(23801 23802 23803)
cl="m1=http://127.0.0.1:${Q[0]},m2=http://127.0.0.1:${Q[1]},m3=http://127.0.0.1:${Q[2]}"
for i in 0 1 2; do
  n=m$((i+1))
  etcd --name $n --data-dir $D/$n --listen-client-urls http://127.0.0.1:${P[$i]} --advertise-client-urls http://127.0.0.1:${P[$i]} \
    --listen-peer-urls http://127.0.0.1:${Q[$i]} --initial-advertise-peer-urls http://127.0.0.1:${Q[$i]} --initial-cluster $cl \
    --initial-cluster-state new > $D/$n.log 2>&1 &
  echo $! > $D/$n.pid
done
sleep 3
EP="etcd://127.0.0.1:${P[0]},127.0.0.1:${P[1]},127.0.0.1:${P[2]}"
echo "\$ chronos init --store $EP --group gpu"; $B init --store $EP --group gpu; echo "[exit $?]"
ls -la /etc/chronos
as() { u=$1; h=$2; shift 2; echo "\$ ($u on $h) chronos $*"; runuser -u "$u" -- env CHRONOS_HOST=$h CHRONOS_BACKEND=sim $B "$@"; echo "[exit $?]"; }
echo "--- root's monitors on gpuA and gpuB"
CHRONOS_HOST=gpuA CHRONOS_BACKEND=sim $B --monitor > $D/monA.log 2>&1 & MA=$!
CHRONOS_HOST=gpuB CHRONOS_BACKEND=sim $B --monitor > $D/monB.log 2>&1 & MB=$!
sleep 2
as nobody gpuA create 0 25% 10m
as daemon gpuB create 0 50% 20s
as daemon gpuA list
as daemon gpuA release 1
as nobody gpuB list
as nobody gpuB backends | tail -8
leader=$(for i in 0 1 2; do curl -s http://127.0.0.1:${P[$i]}/metrics | grep -q '^etcd_server_is_leader 1' && echo $i; done)
echo "--- killing the leader, member m$((leader+1))"
kill -9 $(cat $D/m$((leader+1)).pid)
sleep 0.2
as nobody gpuA create 0 10% 5m
as daemon gpuB list
echo "--- waiting for daemon's 20 s booking on gpuB to end"
sleep 22
as nobody gpuA events | tail -6
as nobody gpuA release 1
as nobody gpuA list --all | tail -5
kill $MA $MB; wait $MA $MB 2>/dev/null
echo "--- monitor logs"; tail -5 $D/monA.log; tail -5 $D/monB.log
for i in 1 2 3; do kill $(cat $D/m$i.pid) 2>/dev/null; done
wait
