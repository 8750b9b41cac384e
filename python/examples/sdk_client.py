# hmc-python-sdk.md, "UCX Mode (Most Common)": Client (send bytes). As
# written there; only the addresses change to run it elsewhere.
import hmc

server_ip = "192.168.2.244"
port = 2025

sess = hmc.create_session(mem_type=hmc.MemoryType.CPU)
sess.connect(server_ip, port, conn=hmc.ConnType.UCX)

payload = b"hello hmc"
sess.put(server_ip, payload, conn=hmc.ConnType.UCX)
