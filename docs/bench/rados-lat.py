#!/usr/bin/python3
"""rados-lat.py -- write new objects to a Ceph pool through librados, a
fixed number in flight for a fixed time, and print rados bench's summary
lines plus the 99th percentile latency, which `rados bench` does not
report. recovery-vs-ceph.sh uses it for Ceph's client load, so that its
p99 stands beside `shoal bench rados`'s.

    /usr/bin/python3 docs/bench/rados-lat.py --conf ceph.conf --pool rbench \\
        --seconds 20 -b 65536 -t 16 --run-name load

Needs Debian's python3-rados (installed with ceph); run it with the system
python3, which has that module.
"""
import argparse
import os
import threading
import time

import rados


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--conf", required=True, help="ceph.conf")
    ap.add_argument("--pool", required=True)
    ap.add_argument("--seconds", type=float, default=20)
    ap.add_argument("-b", "--block-size", type=int, default=65536, help="object size, bytes")
    ap.add_argument("-t", "--concurrent-ios", type=int, default=16, help="writes in flight")
    ap.add_argument("--run-name", default="rados_lat", help="object name prefix")
    a = ap.parse_args()

    cluster = rados.Rados(conffile=a.conf)
    cluster.connect()
    ioctx = cluster.open_ioctx(a.pool)
    data = os.urandom(a.block_size)
    cond = threading.Condition()
    lats, errors, inflight = [], [0], [0]

    def finished(start):
        def cb(comp):
            lat = time.monotonic() - start
            with cond:
                lats.append(lat)
                if comp.get_return_value() < 0:
                    errors[0] += 1
                inflight[0] -= 1
                cond.notify()
        return cb

    t0 = time.monotonic()
    end = t0 + a.seconds
    i = 0
    while time.monotonic() < end:
        with cond:
            while inflight[0] >= a.concurrent_ios:
                cond.wait()
            inflight[0] += 1
        ioctx.aio_write_full("%s_object%d" % (a.run_name, i), data, oncomplete=finished(time.monotonic()))
        i += 1
    with cond:
        while inflight[0] > 0:
            cond.wait()
    took = time.monotonic() - t0
    ioctx.close()
    cluster.shutdown()

    lats.sort()
    n = len(lats)
    p99 = lats[min(n - 1, int(0.99 * n))] if n else 0
    print("Total time run:         %.4f" % took)
    print("Total writes made:      %d" % n)
    print("Write size:             %d" % a.block_size)
    print("Bandwidth (MB/sec):     %.3f" % (n * a.block_size / took / (1 << 20)))
    print("Average IOPS:           %d" % round(n / took))
    print("Average Latency(s):     %.6f" % (sum(lats) / n if n else 0))
    print("p99 latency(s):         %.6f" % p99)
    print("Max latency(s):         %.6f" % (lats[-1] if n else 0))
    print("Errors:                 %d" % errors[0])


if __name__ == "__main__":
    main()
