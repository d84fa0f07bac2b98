#!/usr/bin/env python3
"""gen_corpus_appif.py - writes the seed corpus of fuzz_appif (tests/fuzz/corpus/appif/): programs
of operations that reach each request type of the dataplane's app interface. The encoding is the
harness's (tests/fuzz/fuzz_appif.c): a first byte (connections - 1 in % 3, bit 2 zero-copy frames,
bits 3-4 both set: a port with little room), then per operation a byte op + 13 * client and its
arguments. Run from the repository root: python3 tests/fuzz/gen_corpus_appif.py"""
import os
import struct

N_OPS = 13
HEAD = 288  # offsetof(struct appmsg, u)
(SEND, LISTEN, ORDER, CTL, RAW, READ, CONN, TIME, DATA, SACK, ABORT, MISC, REPEAT) = range(13)
H1, H2, H0, NOHOST = 0, 1, 3, 4  # SEND destinations


def op(code, client=0):
    return bytes([code + N_OPS * client])


def u16(v):
    return struct.pack('<H', v)


def send(client, dst, size, mode=0, bytes_=None, offset=None, chan=0, id_=None, steps=None,
         start=None, big=False):
    """SEND of a buffer of size bytes (mode: 0 sealed, 4 unsealed, 5 half, 6 none, 7 pipe);
    bytes_ None: the rest of the buffer after offset."""
    f = mode | (0x08 if bytes_ is None else 0) | (0x10 if offset is not None else 0) \
        | (0x20 if id_ is not None else 0) | (0x40 if chan >= 4 else 0) | (0x80 if steps else 0)
    f2 = (1 if big else 0) | (4 if id_ is not None and id_ >= 0x100 else 0) | (8 if start else 0)
    b = op(SEND, client) + bytes([dst, f, f2]) + u16(size)
    if offset is not None:
        b += u16(offset)
    b += u16(bytes_ or 0)
    if id_ is not None:
        b += bytes([id_ & 0xff])
    b += u16(chan) if chan >= 4 else bytes([chan])
    if steps:
        b += bytes([len(steps)])
        for at_us, gbps8 in steps:
            b += u16(at_us) + bytes([gbps8])
    if start:
        b += u16(start)
    return b


def listen(client, chan):
    """LISTEN on chan (0-3, or 128-255 and above: out of range)."""
    return op(LISTEN, client) + (bytes([chan]) if chan < 4 else bytes([chan & 0xff, chan >> 8]))


def listen_announced(client, chan):
    """LISTEN on chan 0-3 taking only announced transfers (APPMSG_LISTEN_ANNOUNCED)."""
    return op(LISTEN, client) + bytes([0x40 | chan])


def announce(k, chan, standing=None):
    """The scheduler's expect of pool transfer k (its peer: h1 for even k, h2 for odd) on chan
    0-3, or with standing True/False every transfer of that peer on chan."""
    mode = (2 if k % 2 == 0 else 3) | chan << 6
    if standing is not None:
        mode |= 4 | (8 if standing else 0)
    return op(MISC) + bytes([0xc0, k, mode])


def order(client, chan, ids, flags=0):
    return op(ORDER, client) + bytes([flags | len(ids) << 2, chan]) + bytes(ids)


def ctl(client, text):
    t = text.encode()
    return op(CTL, client) + bytes([len(t) - 1]) + t


def read(client, n=0):
    return op(READ, client) + bytes([n])


def time(us10=100, hold_1s=False, big=0):
    if big:
        return op(TIME) + bytes([1 | (2 if hold_1s else 0), big])
    return op(TIME) + bytes([2 if hold_1s else 0]) + u16(us10)


def data(k, total, chan=0, mode=0, sel=0):
    """DATA of pool transfer k (peer h1 for k < 8) of total bytes: mode 0 every segment,
    1 only segment sel, 2 all but the last."""
    return op(DATA) + bytes([k, mode, chan, sel]) + u16(total - 1)


def sack(k=0, done=True):
    return op(SACK) + bytes([k, 1 if done else 2, 0])


def abort(k, outgoing=False):
    return op(ABORT) + bytes([k, 2 if outgoing else 0])


seeds = {
    'send-remote-acked': bytes([0]) + send(0, H1, 4000) + time() + sack(0) + time() + read(0),
    'send-refused': bytes([0]) + send(0, H1, 4000, mode=4) + send(0, H2, 100, mode=6, bytes_=50)
    + send(0, H1, 100, mode=7, bytes_=50) + send(0, H1, 100, bytes_=200) + send(0, H1, 100, chan=99)
    + send(0, NOHOST, 100) + send(0, H1, 100, mode=5) + send(0, H0, 100, offset=10) + read(0),
    'send-local-delivered': bytes([1]) + listen(0, 1) + send(1, H0, 3000, chan=1) + read(1) + read(0),
    'peer-data-listen': bytes([0]) + listen(0, 0) + data(0, 5000) + time() + read(0),
    'commit-order': bytes([0]) + listen(0, 0) + order(0, 0, [1, 0]) + data(0, 2000) + read(0)
    + data(1, 3000) + time() + read(0),
    'order-skip-abort-hold': bytes([0]) + listen(0, 2) + order(0, 2, [2, 3, 4]) + abort(2)
    + data(3, 100, chan=2) + order(0, 2, [4], flags=2) + data(5, 100, chan=2, mode=2)
    + time(big=20, hold_1s=True) + read(0),
    'ctl-echo-too-long': bytes([1]) + ctl(0, 'e{"type":"hello"}') + ctl(1, 'L') + ctl(0, '{"x":1}')
    + read(0) + read(1),
    'raw-garbage-typed': bytes([2]) + op(RAW, 0) + bytes([1 | 42 << 1 & 0x1e]) + bytes(HEAD)
    + op(RAW, 1) + bytes([0]) + u16(7) + b'garbage' + read(0) + read(1) + op(CONN, 1) + read(1),
    'backlog-overflow': bytes([0]) + op(MISC) + bytes([0]) + op(REPEAT, 0) + bytes([20])
    + op(CTL, 0) + bytes([0xff]) + read(0),
    'backlog-errors': bytes([1]) + op(MISC) + bytes([0]) + op(REPEAT, 1) + bytes([4])
    + listen(1, 200) + read(1, 3) + op(REPEAT, 1) + bytes([2]) + order(1, 0, [1] * 7) + read(1),
    'restart-midflight': bytes([1]) + send(0, H2, 20000, steps=[(0, 8), (500, 0)])
    + listen(1, 0) + data(8, 4000, mode=2) + op(MISC) + bytes([3]) + read(0) + read(1),
    'close-cancels-send': bytes([0]) + send(0, H1, 30000, start=50) + time() + op(CONN, 0)
    + op(CONN, 0) + send(0, H2, 1000) + read(0),
    'zero-copy-partial-timeout': bytes([4]) + send(0, H1, 60000, offset=1000, big=True, bytes_=40000)
    + time() + sack(0, done=False) + time(big=40) + read(0),
    'dup-ids-too-many': bytes([0]) + send(0, H1, 1000, id_=5) + send(0, H2, 1000, id_=5)
    + b''.join(send(0, H1 + i % 2, 2000) for i in range(18)) + abort(0, outgoing=True) + read(0),
    'announced-only': bytes([0]) + listen_announced(0, 1) + announce(0, 1) + data(0, 5000, chan=1)
    + data(2, 3000, chan=1) + time(big=20) + data(4, 4000, chan=1, mode=2) + announce(4, 1)
    + data(4, 4000, chan=1) + announce(1, 1, standing=True) + data(1, 2000, chan=1)
    + announce(6, 2) + data(6, 1000, chan=1) + time(big=20) + read(0),
}

out = 'tests/fuzz/corpus/appif'
os.makedirs(out, exist_ok=True)
for name, blob in seeds.items():
    with open(os.path.join(out, name), 'wb') as f:
        f.write(blob)
print(f'{len(seeds)} seeds in {out}')
