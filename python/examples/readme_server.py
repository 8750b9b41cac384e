# hmc-readme.md 3.1 (server) and the receiver side of 3.3, as written there
# (only the addresses change); then the tags of our protocol (below).
import hmc

ip = "192.168.2.244"
rank = 0

sess = hmc.create_session(
    device_id=0,
    buffer_size=128 * 1024 * 1024,
    mem_type=hmc.MemoryType.CPU,
    num_chs=1,
    local_ip=ip,
)

sess.init_server(
    bind_ip=ip,
    ucx_port=2025,
    rdma_port=2026,
    ctrl_tcp_port=5001,
    self_id=rank,
    ctrl_uds_dir="/tmp",
)

print("UCX server ready")

# receiver side
tag = sess.ctrl_recv(peer=1)
assert tag == 1
# then read data from server-side ConnBuffer using sess.buf.get_into(...)
out = bytearray(len(b"hello hmc"))
sess.buf.get_into(out, nbytes=len(out), offset=0)
print("received", bytes(out))

# Our protocol (3.3: "what tags mean"): tag 1 back = offset 0 may be
# reused; tag 2 from the client = it is done with our buffer.
sess.ctrl_send(peer=1, tag=1)
assert sess.ctrl_recv(peer=1) == 2
