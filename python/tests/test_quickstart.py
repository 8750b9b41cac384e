# SPDX-License-Identifier: MIT
"""Two Python processes on loopback: the reference's quick-start flow in
both calling styles, and the reference documents' examples as written
(python/examples/), with only their addresses changed."""

import os
import re
import tempfile
import unittest

from support import EXAMPLES, LOOPBACK, PEERS, Peer, free_port, try_import

np = try_import("numpy")

SIZES = [1, 7, 4096, 65537, (1 << 20) + 3, 8 << 20]     # as in peers/flow.py
ARRAY_BYTES = 512 * 300 * 8


def run_pair(server_args, client_args):
    """Start the server, wait until it is ready, run the client; both
    (status, output)."""
    server = Peer(server_args)
    try:
        server.expect("ready")
        client = Peer(client_args)
        try:
            client_result = client.finish(timeout=120)
        finally:
            client.kill()
        return server.finish(timeout=60), client_result
    finally:
        server.kill()


@unittest.skipIf(np is None, "NumPy is not installed")
class FlowTest(unittest.TestCase):
    def flow(self, style, back):
        port = free_port()
        script = os.path.join(PEERS, "flow.py")
        (s_rc, s_out), (c_rc, c_out) = run_pair(
            [script, "server", style, str(port)],
            [script, "client", style, str(port)])
        self.assertEqual((s_rc, c_rc), (0, 0),
                         "server:\n%s\nclient:\n%s" % (s_out, c_out))
        self.assertNotIn("FAIL", s_out + c_out)
        verified = [int(m) for m in re.findall(r"^verified (\d+)$",
                                               s_out + "\n" + c_out, re.M)]
        # 6 byte strings and the array one way, (some of) the array back
        self.assertEqual(sum(verified), sum(SIZES) + ARRAY_BYTES + back)

    def test_ip_keyed(self):
        self.flow("ip", ARRAY_BYTES // 2)       # every other column

    def test_rank_keyed(self):
        self.flow("rank", ARRAY_BYTES)


class ExamplesTest(unittest.TestCase):
    """The documents' code with their addresses replaced by loopback ones."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)
        self.addresses = {"192.168.2.244": LOOPBACK,
                          "192.168.2.248": LOOPBACK}
        for port in ("2025", "2026", "5001"):
            self.addresses[port] = str(free_port())

    def localized(self, name):
        """python/examples/@name with its addresses replaced."""
        with open(os.path.join(EXAMPLES, name)) as f:
            code = f.read()
        for old, new in self.addresses.items():
            code = re.sub(r"\b%s\b" % re.escape(old), new, code)
        path = os.path.join(self.tmp.name, name)
        with open(path, "w") as f:
            f.write(code)
        return path

    def pair(self, server, client):
        (s_rc, s_out), (c_rc, c_out) = run_pair([self.localized(server)],
                                                [self.localized(client)])
        self.assertEqual((s_rc, c_rc), (0, 0),
                         "server:\n%s\nclient:\n%s" % (s_out, c_out))
        return s_out, c_out

    def test_sdk_ucx_server_and_client(self):
        s_out, _ = self.pair("sdk_server.py", "sdk_client.py")
        self.assertIn("UCX server ready", s_out)
        self.assertIn(r"bytearray(b'hello hmc\x00\x00\x00\x00\x00\x00\x00')",
                      s_out)

    @unittest.skipIf(np is None, "NumPy is not installed")
    def test_sdk_numpy(self):
        s_out, c_out = self.pair("sdk_numpy_server.py",
                                 "sdk_numpy_client.py")
        self.assertIn("array [0 1 2 3] 523776", s_out)
        self.assertIn("round trip ok", c_out)

    @unittest.skipIf(np is None, "NumPy is not installed")
    def test_readme_rank_keyed(self):
        s_out, c_out = self.pair("readme_server.py", "readme_client.py")
        self.assertIn("received b'hello hmc'", s_out)
        self.assertIn("sent 9 bytes", c_out)
        self.assertIn("numpy round trip ok", c_out)


if __name__ == "__main__":
    unittest.main()
