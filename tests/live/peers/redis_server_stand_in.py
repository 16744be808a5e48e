"""A `redis-server` stand-in (run by the `redis-server` script beside this file) that serves
`lockstep serve` instead, for test suites that start their own server (python-redis-lock's
conftest runs `redis-server --port 0 ... --unixsocket PATH` and talks to it over that Unix socket
only). Standard library only: it runs under `python -S`.

It starts `$LOCKSTEP_BIN serve --masters 1`, reads the master's TCP address from its banner, listens
on the `--unixsocket` path and relays every connection to that address, byte for byte, in both
directions. It prints Redis's "Ready to accept connections" line once it listens, as the suites
wait for it. SIGTERM or SIGINT stops `lockstep serve` and removes the socket. Every other option
(`--port`, `--save`, `--appendonly`, `--dir`) is accepted and left unused: lockstep's server keeps
nothing on disk here.
"""

import os
import signal
import socket
import subprocess
import sys
import threading


def option(args, name):
    if name in args:
        i = args.index(name)
        if i + 1 < len(args):
            return args[i + 1]
    return None


def relay(src, dst):
    try:
        while True:
            data = src.recv(65536)
            if not data:
                break
            dst.sendall(data)
    except OSError:
        pass
    for s in (dst, src):
        try:
            s.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


def serve_connection(client, address):
    try:
        host, port = address.rsplit(":", 1)
        upstream = socket.create_connection((host, int(port)))
    except OSError:
        client.close()
        return
    threading.Thread(target=relay, args=(client, upstream), daemon=True).start()
    threading.Thread(target=relay, args=(upstream, client), daemon=True).start()


def main():
    args = sys.argv[1:]
    if "--version" in args:
        print("Redis server v=lockstep-serve (stand-in: tests/live/peers/redis-server)")
        return 0
    path = option(args, "--unixsocket")
    binary = os.environ.get("LOCKSTEP_BIN")
    if not path or not binary:
        print("this redis-server stand-in needs --unixsocket PATH and LOCKSTEP_BIN", file=sys.stderr)
        return 2
    serve = subprocess.Popen(
        [binary, "serve", "--masters", "1"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        text=True,
    )
    address = None
    for line in serve.stdout:
        sys.stdout.write(line)
        words = line.split()
        if len(words) >= 2 and words[0] == "redis-1" and words[1].startswith("127.0.0.1:"):
            address = words[1]
        if line.startswith("serving "):
            break
    if address is None:
        print("lockstep serve printed no redis-1 address", file=sys.stderr)
        serve.kill()
        return 1
    # Whatever serve prints later (its stop line) goes on to our stdout.
    threading.Thread(
        target=lambda: [sys.stdout.write(l) for l in serve.stdout], daemon=True
    ).start()

    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    if os.path.exists(path):
        os.unlink(path)
    listener.bind(path)
    listener.listen(128)

    def stop(signum, _frame):
        serve.send_signal(signal.SIGTERM)
        try:
            serve.wait(timeout=10)
        except subprocess.TimeoutExpired:
            serve.kill()
        try:
            os.unlink(path)
        except OSError:
            pass
        sys.stdout.flush()
        os._exit(0)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    print(f"* lockstep serve at {address}, relayed from {path}")
    print("* Ready to accept connections unix", flush=True)
    while True:
        client, _ = listener.accept()
        serve_connection(client, address)


if __name__ == "__main__":
    sys.exit(main())
