"""Flow control between one fast sender and the bus: a client that pipelines
far more frames than the bus delivers per consumer and loop turn (256) must
not overflow a small consumer queue. The bridge takes at most one frame
budget (256) per connection per turn, also across the turn in which a
paused connection finishes its buffered frames and resumes reading, so one
sender cannot outrun one consumer; with bus.consumer_queue_max 600 every
frame arrives, in order."""

import sys
import threading
import unittest

import bt
from bt import BridgeClient

N = 20000


class Flow(unittest.TestCase):
    node = None

    @classmethod
    def setUpClass(cls):
        cls.node = bt.start_node("flow", bridge={
            "inbound": [{}], "outbound": [{}],
            "write_queue_bytes": 64 * 1024 * 1024},
            bus={"consumer_queue_max": 600})

    @classmethod
    def tearDownClass(cls):
        code = cls.node.stop()
        if code != 0:
            raise AssertionError("ebnode exited with %r" % code)

    def test_one_sender_cannot_overflow_one_consumer(self):
        consumer = bt.connect(self.node)
        sender = bt.connect(self.node)
        try:
            consumer.register("flow")
            consumer.sync()
            sender.sync()
            for kind in ("send", "publish"):
                data = b"".join(BridgeClient.encode(
                    {"type": kind, "address": "flow", "body": i})
                    for i in range(N))
                w = threading.Thread(target=sender.send_raw, args=(data,),
                                     daemon=True)
                w.start()
                for i in range(N):
                    f = consumer.recv_frame(bt.scaled(10))
                    self.assertEqual((f["type"], f["body"]),
                                     ("message", i), kind)
                w.join(bt.scaled(10))
                self.assertFalse(w.is_alive())
            self.assertEqual(consumer.sync(), [])
            # The bus counted no drop.
            host, port = self.node.admin
            st, body = bt.ebtest.admin_request(host, port, "GET",
                                               "/subscriptions")
            self.assertEqual(st, 200)
            sys.stderr.write("flow: totals %r\n" % body.get("totals"))
            self.assertEqual(body["totals"]["dropped"], 0)
        finally:
            sender.close()
            consumer.close()


if __name__ == "__main__":
    unittest.main()
