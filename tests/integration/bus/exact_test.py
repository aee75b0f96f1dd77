"""Bodies pass byte for byte (issue 23): frames written as the official
clients write them (Python's json.dumps with its default ", " and ": ",
pretty-printed JSON, numbers in every form, escapes, \\u0000, integers past
64 bits) reach a consumer on another node, and one on the same node, with
the body's bytes exactly as sent; replies likewise; header values keep
\\u0000 and numbers as written. Two real nodes on a real ZooKeeper.
"""

import json
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                ".."))
import ebtest  # noqa: E402
from bus_cluster_test import Cluster, barrier  # noqa: E402

BODIES = [
    b'{"a": 0.1, "b": 1e-07, "c": 10000000000.0, "e": "\\u00e9"}',
    b'0.1',
    b'1e-07',
    b'1.0E10',
    b'-0',
    b'12345678901234567890',
    b'-123456789012345678901234567890.25e-300',
    b'"\\u00e9"',
    b'"\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"',
    b'"a\\u0000b"',
    b'"\\ud83d\\ude00 \\/ \\n"',
    b'{"k": 1, "k": 2}',
    json.dumps({"nested": {"deep": [1, 2.50, {"x": None}]}},
               indent=2).encode(),
    b'[ 1 ,\n\t[ { "x" : null } ] ]',
]


def body_of(payload):
    """The body bytes of a message or err frame the node wrote."""
    start = payload.index(b'"body":') + len(b'"body":')
    end = payload.rindex(b',"send":')
    return payload[start:end]


def frame(kind, address, body, reply=None, headers=b'{}'):
    """A frame as Python's client writes it: ", " and ": " separators."""
    text = b'{"type": "%s", "address": "%s", "headers": %s, "body": %s' % (
        kind.encode(), address.encode(), headers, body)
    if reply is not None:
        text += b', "replyAddress": "%s"' % reply.encode()
    return text + b'}'


def recv_msg(client, address):
    while True:
        p = client.recv_frame_bytes(timeout=5)
        f = json.loads(p.decode("utf-8"))
        if f.get("type") == "message" and f.get("address") == address:
            return p, f


class ExactTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.cl = Cluster(2)
        cls.sender = cls.cl.client(0)
        cls.local = cls.cl.client(0)
        cls.remote = cls.cl.client(1)
        for i, c in enumerate((cls.local, cls.remote)):
            c.register("exact.pub")
            barrier(cls.sender, c, "barrier.%d" % i)
        cls.remote.register("exact.svc")
        barrier(cls.sender, cls.remote, "barrier.svc")

    @classmethod
    def tearDownClass(cls):
        cls.cl.close()

    def test_publish_local_and_remote(self):
        for body in BODIES:
            self.sender.send_frame(frame("publish", "exact.pub", body))
            for c in (self.local, self.remote):
                p, _ = recv_msg(c, "exact.pub")
                self.assertEqual(body_of(p), body, p)

    def test_request_and_reply_across_nodes(self):
        for i, body in enumerate(BODIES):
            self.sender.send_frame(
                frame("send", "exact.svc", body, reply="r%d" % i))
            p, f = recv_msg(self.remote, "exact.svc")
            self.assertEqual(body_of(p), body, p)
            # The reply carries the next body back, as written.
            back = BODIES[(i + 1) % len(BODIES)]
            self.remote.send_frame(frame("send", f["replyAddress"], back))
            p, _ = recv_msg(self.sender, "r%d" % i)
            self.assertEqual(body_of(p), back, p)

    def test_header_values(self):
        self.sender.send_frame(frame(
            "send", "exact.svc", b'1',
            headers=b'{"z": "a\\u0000b", "n": 1e-07, "o": { "k" : [ 1 ] },'
                    b' "t": true, "gone": null}'))
        _, f = recv_msg(self.remote, "exact.svc")
        self.assertEqual(f["headers"], {"z": "a\u0000b", "n": "1e-07",
                                        "o": '{"k":[1]}', "t": "true"})


if __name__ == "__main__":
    unittest.main(verbosity=2)
