# The server for hmc-python-sdk.md's "NumPy (CPU)" client: the guide's
# server (hmc-user-guide-zh.md, B3) receiving the bytes, then the array,
# which it sends back ("Receive into a NumPy array" on the client).
import hmc
import numpy as np

ip = "192.168.2.244"
port = 2025

sess = hmc.create_session(
    device_id=0,
    buffer_size=128 * 1024 * 1024,
    mem_type=hmc.MemoryType.CPU,
    num_chs=1,
)

sess.init_server(ip, port, conn=hmc.ConnType.UCX)
print("UCX server ready")

client_ip = "192.168.2.248"
dst = bytearray(1024 * 1024)
sess.get_into(client_ip, dst, conn=hmc.ConnType.UCX, bias=0)
print(dst[:16])

y = np.empty((1024,), dtype=np.int32)
sess.get_into(client_ip, y, conn=hmc.ConnType.UCX)
print("array", y[:4], y.sum())
sess.put(client_ip, y, conn=hmc.ConnType.UCX)
