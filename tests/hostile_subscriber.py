"""A hostile event subscriber, as a program of its own (libzmq may crash a process whose
XSUB keeps being cut off mid-send: it must not be the test's): an XSUB that sends
`--small` distinct subscriptions of `--size` bytes, then `--huge` ones of 1 MiB, and
prints a line after each phase, waiting for a line on stdin before it goes on."""

import argparse
import sys
import time

import zmq


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("endpoint")
    parser.add_argument("--small", type=int, default=20_000)
    parser.add_argument("--size", type=int, default=200)
    parser.add_argument("--huge", type=int, default=10)
    args = parser.parse_args()
    sock = zmq.Context.instance().socket(zmq.XSUB)
    sock.setsockopt(zmq.LINGER, 0)
    sock.connect(args.endpoint)
    time.sleep(0.2)
    for i in range(args.small):
        sock.send(b"\x01" + (b"%08d" % i * (args.size // 8 + 1))[:args.size])
    print("small sent", flush=True)
    sys.stdin.readline()
    for i in range(args.huge):
        sock.send(b"\x01" + bytes([65 + i % 26]) * (1 << 20))
        time.sleep(0.1)
    print("huge sent", flush=True)
    sys.stdin.readline()


if __name__ == "__main__":
    main()
