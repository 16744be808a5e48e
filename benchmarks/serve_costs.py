#!/usr/bin/env python3
"""Costs that must not grow with the data, measured on a running server (lockstep serve or
redis-server): a SET while one client is blocked on 1,000,000 keys, LPOP/RPUSH on a
1,000,000-element list, and SWAPDB over 100,000 keys. Prints one line per measure, in
microseconds per operation (median of the runs).

Usage: serve_costs.py PORT [--keys N]   (needs redis-py: pip install redis)
"""
import argparse
import socket
import statistics
import time

import redis


def resp(*args):
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        a = a if isinstance(a, bytes) else str(a).encode()
        out.append(b"$%d\r\n%s\r\n" % (len(a), a))
    return b"".join(out)


def median_us(fn, runs):
    samples = []
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - t) * 1e6)
    return statistics.median(samples)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("port", type=int)
    p.add_argument("--keys", type=int, default=1_000_000)
    a = p.parse_args()
    r = redis.Redis(port=a.port)
    r.flushall()
    # One client blocked in BLPOP on N keys (sent raw: the command is large).
    blocked = socket.create_connection(("127.0.0.1", a.port))
    blocked.sendall(resp("BLPOP", *[f"bk:{i}" for i in range(a.keys)], 0))
    while True:
        info = r.info("clients")
        if info.get("blocked_clients", 0) >= 1:
            break
        time.sleep(0.05)
    set_us = median_us(lambda: r.set("other", "v"), 2000)
    print(f"SET with one client blocked on {a.keys} keys: {set_us:.1f} us")
    r.rpush("bk:7", "x")  # wakes it
    blocked.recv(65536)
    blocked.close()
    # A long list: both ends.
    pipe = r.pipeline(transaction=False)
    for chunk in range(0, a.keys, 10_000):
        pipe.rpush("long", *range(chunk, chunk + 10_000))
    pipe.execute()
    pop_us = median_us(lambda: (r.lpop("long"), r.rpush("long", "z")), 2000)
    print(f"LPOP+RPUSH on a {a.keys}-element list: {pop_us:.1f} us")
    # SWAPDB with many keys in both databases.
    pipe = r.pipeline(transaction=False)
    for i in range(100_000):
        pipe.set(f"k{i}", i)
    pipe.execute()
    swap_us = median_us(lambda: r.swapdb(0, 1), 50)
    print(f"SWAPDB with 100000 keys: {swap_us:.1f} us")
    r.flushall()


if __name__ == "__main__":
    main()
