#!/usr/bin/env python3
"""Bytes in, the same bytes out (issue 17), against three real ebnode
processes and a real ZooKeeper.

Node a leads and routes; a client sends ingress requests to follower b's
bridge; node c (not eligible) holds the only consumer of the route target,
a bridge client. The route is a body-field rule ("kind" equals "\u00e9"),
so the leader reads that one field from the bytes. Checks, per body:

- the consumer on c receives the body as exactly the bytes the client
  wrote (0.1, 1e-7, 1.0E10, -0, integers past 64 bits, "\\u00e9" as those
  6 bytes, surrogate pairs, "\\/");
- the sender's acknowledgement is the leader's template ack, and every
  request is answered.

Before issue 17 the follower and the leader parsed and re-encoded every
body: 0.1 arrived as 0.10000000000000001, 1e-7 as 9.9999999999999995e-08,
"\\u00e9" as the raw UTF-8 bytes, and a long integer was refused.
"""
import json
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import ebtest  # noqa: E402

BODIES = [
    rb'{"kind":"\u00e9","v":0.1}',
    rb'{"kind":"\u00e9","v":1e-7}',
    rb'{"kind":"\u00e9","v":1.0E10}',
    rb'{"kind":"\u00e9","v":12345678901234567890123}',
    rb'{"kind":"\u00e9","v":-12345678901234567890123.000e+0001}',
    rb'{"kind":"\u00e9","v":[-0,0.10,2E-3,"\u00e9","\ud83d\ude00","a\/b"]}',
    rb'{"kind":"\u00e9","v":{"nested":{"k":"\u00E9\n\"x\""}}}',
    '{"kind":"\u00e9","v":"caf\u00e9 \u20ac"}'.encode("utf-8"),
    rb'{"v":0.1,"kind":"\u00e9","v":1e-7}',
]


def node_config(root, name, **extra):
    cfg = ebtest.cluster_config(
        root, name,
        bridge={"inbound": [{"address": "external.ingress"}],
                "outbound": [{"address": "orders"}]},
        ingress={"routes": [{"field": "kind", "equals": "\u00e9",
                             "to": "orders"}]})
    return ebtest.merge(cfg, extra)


def member_spans(payload):
    """The top-level members of a frame as {key: value bytes}, the value
    bytes cut from the payload as they are (not re-encoded)."""
    text = payload.decode("utf-8")
    dec = json.JSONDecoder()
    spans = {}
    i = text.index("{") + 1
    while True:
        while text[i] in " \t\r\n,":
            i += 1
        if text[i] == "}":
            return spans
        key, i = dec.raw_decode(text, i)
        while text[i] in " \t\r\n:":
            i += 1
        _, end = dec.raw_decode(text, i)
        spans[key] = text[i:end].encode("utf-8")
        i = end


class Bytes(unittest.TestCase):
    def test_bodies_byte_exact_through_a_follower(self):
        root = ebtest.unique_root()
        a = ebtest.EbNode(node_config(root, "a"), name="a")
        self.addCleanup(a.close)
        ebtest.wait_until(lambda: ebtest.admin_request(
            *a.admin, "GET", "/leader")[0] == 200, 20, "a leads")
        b = ebtest.EbNode(node_config(root, "b"), name="b")
        self.addCleanup(b.close)
        c = ebtest.EbNode(node_config(root, "c", node={"eligible": False}),
                          name="c")
        self.addCleanup(c.close)
        consumer = ebtest.BridgeClient(*c.bridge)
        self.addCleanup(consumer.close)
        consumer.register("orders")
        client = ebtest.BridgeClient(*b.bridge)
        self.addCleanup(client.close)

        def frame(body, reply):
            return (b'{"type":"send","address":"external.ingress",'
                    b'"replyAddress":"' + reply.encode() + b'","body":' +
                    body + b'}')

        def probe():
            client.send_frame(frame(rb'{"kind":"\u00e9","probe":1}', "p"))
            f = client.recv_frame(timeout=5)
            return f.get("type") == "message"
        ebtest.wait_until(probe, 30, "ingress routed end to end")
        # Drop the probes' deliveries.
        while True:
            try:
                consumer.recv_frame_bytes(timeout=1)
            except TimeoutError:
                break

        for n, body in enumerate(BODIES):
            client.send_frame(frame(body, "r%d" % n))
        got = []
        for _ in BODIES:
            got.append(member_spans(consumer.recv_frame_bytes(timeout=10)))
        acks = {}
        for _ in BODIES:
            payload = client.recv_frame_bytes(timeout=10)
            f = json.loads(payload)
            self.assertEqual(f["type"], "message", f)
            acks[f["address"]] = member_spans(payload)["body"]
        # In order (one sender, one address), each byte-exact.
        for n, body in enumerate(BODIES):
            print("sent %-60s got %s" % (body.decode("utf-8"),
                                          got[n]["body"].decode("utf-8")))
            self.assertEqual(got[n]["body"], body)
            ack = json.loads(acks["r%d" % n])
            self.assertEqual(ack["status"], "ok")
            self.assertEqual(ack["to"], "orders")
            self.assertRegex(acks["r%d" % n].decode(),
                             r'^\{"status":"ok","epoch":\d+,"seq":\d+,'
                             r'"to":"orders"\}$')
            hdr = json.loads(got[n]["headers"])
            self.assertEqual(hdr["ebnode.entry"], "b", hdr)
        # A body the field rule does not match is answered, not routed.
        client.send_frame(frame(rb'{"kind":"e","v":0.1}', "nomatch"))
        f = client.recv_frame(timeout=10)
        self.assertEqual(f["type"], "err", f)
        self.assertEqual(f["address"], "nomatch")


if __name__ == "__main__":
    unittest.main(verbosity=2)
