#!/usr/bin/env python3
"""Writes the seed corpus of web_fuzz (tests/fuzz/corpus/web).

The input format is described at the top of tests/fuzz/web_fuzz.c: byte 0
opens connections A and B (route A | route B << 3), byte 1 splits reads,
then records (ctl, length, data). Run from anywhere:
    python3 tests/fuzz/gen_web_corpus.py
"""
import json
import os
import struct

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus", "web")

# routes (byte 0)
NONE, RAW_WS, SOCKJS_WS, INFO, XHR_STREAM, XHR_POLL, XHR_OPTIONS = range(7)
# record kinds (ctl & 7)
RAW, WS, SEND, RECV, TURNS, BEAT, CONN, SOCKJS = range(8)
# WebSocket frame variants (kind WS)
TEXT, BINARY, TEXT_MORE, CONT_MORE, CONT, CLOSE, PING, PONG = range(8)
B = 0x40


def rec(kind, data=b"", variant=0, conn=0):
    ctl = kind | (variant << 3) | conn
    if len(data) > 255:
        return bytes([ctl | 0x80]) + struct.pack(">H", len(data)) + data
    return bytes([ctl, len(data)]) + data


def head(a, b=NONE, split=0):
    return bytes([a | (b << 3), split])


REG = b'{"type":"register","address":"a"}'
SEND_A = b'{"type":"send","address":"a","body":{"n":1},"replyAddress":"r"}'
PUB_A = b'{"type":"publish","address":"a","body":"x","headers":{"h":"v"}}'
PING_F = b'{"type":"ping"}'
WS_KEY = b"dGhlIHNhbXBsZSBub25jZQ=="


def masked(b0, payload, key=b"\x01\x02\x03\x04"):
    n = len(payload)
    if n < 126:
        h = bytes([b0, 0x80 | n])
    else:
        h = bytes([b0, 0x80 | 126]) + struct.pack(">H", n)
    return h + key + bytes(c ^ key[i & 3] for i, c in enumerate(payload))


def upgrade(path):
    return (b"GET " + path + b" HTTP/1.1\r\nHost: h\r\nUpgrade: websocket\r\n"
            b"Connection: Upgrade\r\nSec-WebSocket-Key: " + WS_KEY +
            b"\r\nSec-WebSocket-Version: 13\r\n\r\n")


def sockjs(*frames):
    return json.dumps([f.decode() for f in frames]).encode()


SEEDS = {
    # raw WebSocket: register, send to itself, publish, ping, close 1000
    "raw_ws": head(RAW_WS) + rec(WS, REG) + rec(WS, SEND_A) + rec(TURNS, variant=3)
    + rec(WS, PUB_A) + rec(WS, b"hi", PING) + rec(TURNS, variant=2)
    + rec(WS, b"\x03\xe8bye", CLOSE),
    # raw WebSocket: a fragmented message, split reads with turns
    "raw_ws_frag": head(RAW_WS, split=0x83) + rec(WS, REG[:10], TEXT_MORE)
    + rec(WS, b"", PING) + rec(WS, REG[10:20], CONT_MORE) + rec(WS, REG[20:], CONT)
    + rec(WS, SEND_A) + rec(TURNS, variant=3) + rec(CONN, variant=1),
    # SockJS websocket: register + send in one array, heartbeat pass
    "sockjs_ws": head(SOCKJS_WS) + rec(WS, sockjs(REG, SEND_A))
    + rec(TURNS, variant=3) + rec(SOCKJS, PUB_A) + rec(BEAT, variant=1)
    + rec(SOCKJS, PING_F) + rec(WS, b"\x03\xe8", CLOSE),
    # SockJS websocket with invalid UTF-8 and a bad close code
    "sockjs_bad": head(SOCKJS_WS, split=5) + rec(SOCKJS, REG)
    + rec(WS, b'["\xff\xfe"]') + rec(WS, b"\x00\x05", CLOSE),
    # xhr_streaming on A, xhr_send on B
    "xhr_stream": head(XHR_STREAM, NONE) + rec(SEND, REG, variant=1, conn=B)
    + rec(SEND, sockjs(SEND_A, PUB_A), conn=B) + rec(TURNS, variant=4)
    + rec(BEAT, variant=1) + rec(SEND, PING_F, variant=1, conn=B)
    + rec(CONN, variant=1) + rec(BEAT, variant=4),
    # xhr polling on A, re-polled; a second session s1
    "xhr_poll": head(XHR_POLL, XHR_OPTIONS) + rec(SEND, REG, variant=1, conn=B)
    + rec(RECV, variant=1) + rec(SEND, SEND_A, variant=1, conn=B)
    + rec(TURNS, variant=2) + rec(RECV, variant=1)
    + rec(RECV, variant=2, conn=B) + rec(SEND, b"[1]", variant=2, conn=B)
    + rec(BEAT, variant=5),
    # plain HTTP on A: info, OPTIONS, 404, then a SockJS upgrade and
    # masked frames written out in full
    "http": head(NONE) + rec(RAW, b"GET /eventbus/info HTTP/1.1\r\nHost: h\r\n\r\n"
                            b"OPTIONS /eventbus/info HTTP/1.1\r\nOrigin: x\r\n\r\n"
                            b"GET /nope HTTP/1.1\r\n\r\n")
    + rec(RAW, upgrade(b"/eventbus/1/2/websocket"))
    + rec(RAW, masked(0x81, sockjs(REG))) + rec(RAW, masked(0x81, sockjs(SEND_A)))
    + rec(TURNS, variant=2),
    # chunked xhr_send and a too-long header
    "http_chunked": head(XHR_STREAM, NONE)
    + rec(RAW, b"POST /eventbus/000/s0/xhr_send HTTP/1.1\r\n"
          b"Transfer-Encoding: chunked\r\n\r\n" + b"%x\r\n" % len(sockjs(REG))
          + sockjs(REG) + b"\r\n0\r\n\r\n", conn=B)
    + rec(RAW, b"GET /eventbus/info HTTP/1.1\r\nX: " + b"y" * 1100 + b"\r\n\r\n",
          conn=B),
    # a detached xhr session whose client stops polling: its queue passes
    # write_queue_max_bytes (2048) and the bridge closes it
    "xhr_backlog": head(XHR_POLL, NONE) + rec(SEND, REG, variant=1, conn=B)
    + rec(SEND, sockjs(*([PUB_A] * 15)), conn=B) + rec(TURNS, variant=3)
    + rec(SEND, sockjs(*([PUB_A] * 15)), conn=B) + rec(TURNS, variant=3)
    + rec(RECV, variant=1),
    # an oversize raw message (over max_frame_bytes 1024)
    "raw_oversize": head(RAW_WS) + rec(WS, b'{"type":"send","address":"a","body":"'
                                       + b"x" * 1100 + b'"}'),
}


def main():
    os.makedirs(OUT, exist_ok=True)
    for name, data in sorted(SEEDS.items()):
        with open(os.path.join(OUT, name), "wb") as f:
            f.write(data)


if __name__ == "__main__":
    main()
