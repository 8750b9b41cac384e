# hmc-python-sdk.md: the client sends bytes ("Client (send bytes)"), then
# "Send a NumPy array" and "Receive into a NumPy array", as written there.
import hmc
import numpy as np

server_ip = "192.168.2.244"
port = 2025

sess = hmc.create_session(mem_type=hmc.MemoryType.CPU)
sess.connect(server_ip, port, conn=hmc.ConnType.UCX)

payload = b"hello hmc"
sess.put(server_ip, payload, conn=hmc.ConnType.UCX)

x = np.arange(1024, dtype=np.int32)
sess.put(server_ip, x, conn=hmc.ConnType.UCX)

y = np.empty((1024,), dtype=np.int32)
sess.get_into(server_ip, y, conn=hmc.ConnType.UCX)   # size inferred from y.nbytes
print("round trip", "ok" if (x == y).all() else "MISMATCH")
