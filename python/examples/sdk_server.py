# hmc-python-sdk.md, "UCX Mode (Most Common)": Server. As written there;
# only the addresses change to run it elsewhere.
import hmc

ip = "192.168.2.244"
port = 2025

sess = hmc.create_session(mem_type=hmc.MemoryType.CPU)
sess.init_server(ip, port, conn=hmc.ConnType.UCX)

print("UCX server ready")

# Example: receive 1MB into a bytearray
client_ip = "192.168.2.248"
dst = bytearray(1024 * 1024)
sess.get_into(client_ip, dst, conn=hmc.ConnType.UCX)
print(dst[:16])
