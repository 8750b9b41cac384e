# hmc-readme.md 3.2 (client), the sender side of 3.3 and 4.1 (NumPy), as
# written there (only the addresses change), with the tags of our
# protocol: wait for the server's tag 1 before reusing offset 0; tag 2: done.
import hmc
import numpy as np

server_ip = "192.168.2.244"
my_ip = "192.168.2.248"

sess = hmc.create_session(mem_type=hmc.MemoryType.CPU, local_ip=my_ip)

sess.connect(
    peer_id=0,
    self_id=1,
    peer_ip=server_ip,
    data_port=2025,
    ctrl_tcp_port=5001,
    conn=hmc.ConnType.UCX,
)

payload = b"hello hmc"

# stage into local ConnBuffer
n = sess.buf.put(payload, offset=0)

# put local [0, n) -> remote [0, n)
sess.put_remote(server_ip, 2025, local_off=0, remote_off=0, nbytes=n, conn=hmc.ConnType.UCX)
print("sent", n, "bytes")

# sender side
sess.ctrl_send(peer=0, tag=1)
assert sess.ctrl_recv(peer=0) == 1     # our protocol: offset 0 is free again

x = np.arange(1024, dtype=np.int32)

n = sess.buf.put(x, offset=0)
sess.put_remote(server_ip, 2025, local_off=0, remote_off=0, nbytes=n, conn=hmc.ConnType.UCX)

y = np.empty_like(x)
sess.get_remote(server_ip, 2025, local_off=0, remote_off=0, nbytes=y.nbytes, conn=hmc.ConnType.UCX)
sess.buf.get_into(y, nbytes=y.nbytes, offset=0)
print("numpy round trip", "ok" if (x == y).all() else "MISMATCH")

sess.ctrl_send(peer=0, tag=2)
