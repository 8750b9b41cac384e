// SPDX-License-Identifier: MIT
/*
 * Verbs transport: which device, port and GID we talk through, and the
 * memory regions: the communicator's ConnBuffer and the application's
 * regions (hmc_comm_mr_reg()) are dma-buf regions where the memory exports
 * one (hmc.ko, a GPU runtime) and the device takes it, else registered by
 * their mapping (for GPU memory: peer memory).
 *
 * The port is the one asked for (hmc_comm_opts.ib_dev/ib_port, else
 * HMC_IB_DEV=dev[:port]) or the first ACTIVE port of the first device that
 * has one. On InfiniBand, packets are routed by LID without a GRH; on
 * Ethernet (RoCE) every packet carries a GRH, and the GID is picked from
 * the port's table: RoCE v2 with an IPv4-mapped address first (routable,
 * the usual choice), then other RoCE v2 GIDs, then RoCE v1.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mem/buf.h"
#include "mem/mem.h"
#include "sys/log.h"
#include "xport/verbs/verbs.h"

/* HMC_IB_DEV=dev[:port]: 1 with @name (and @port, 0 if absent), 0 if unset. */
static int parse_env(char *name, size_t cap, uint8_t *port)
{
	const char *env = getenv("HMC_IB_DEV");
	const char *colon;
	unsigned long v;
	size_t len;
	char *end;

	if (!env || !*env)
		return 0;
	colon = strchr(env, ':');
	len = colon ? (size_t)(colon - env) : strlen(env);
	*port = 0;
	if (colon) {
		errno = 0;
		v = strtoul(colon + 1, &end, 10);
		if (errno || end == colon + 1 || *end || !v || v > 255)
			len = 0;
		*port = (uint8_t)v;
	}
	if (!len || len >= cap) {
		pr_info("verbs: HMC_IB_DEV='%s' is not dev or dev:port", env);
		return -EINVAL;
	}
	memcpy(name, env, len);
	name[len] = 0;
	return 1;
}

static bool gid_is_zero(const union ibv_gid *g)
{
	static const union ibv_gid zero;

	return !memcmp(g, &zero, sizeof(zero));
}

static bool gid_is_ipv4(const union ibv_gid *g)
{
	static const uint8_t prefix[12] = { [10] = 0xff, [11] = 0xff };

	return !memcmp(g->raw, prefix, sizeof(prefix));
}

/* How much we like a RoCE GID: 0 never, higher is better. */
static int gid_score(const struct ibv_gid_entry *e)
{
	bool link_local = e->gid.raw[0] == 0xfe && (e->gid.raw[1] & 0xc0) == 0x80;

	if (gid_is_zero(&e->gid))
		return 0;
	switch (e->gid_type) {
	case IBV_GID_TYPE_ROCE_V2:
		return gid_is_ipv4(&e->gid) ? 4 : link_local ? 2 : 3;
	case IBV_GID_TYPE_ROCE_V1:
		return 1;
	default:
		return 0;
	}
}

/* Pick the RoCE GID of port @p->num from the device's whole GID table. */
static int pick_roce_gid(struct vb_port *p)
{
	struct ibv_port_attr pa;
	struct ibv_gid_entry *tab;
	size_t total = 0;
	ssize_t n, i;
	int best = 0, s;
	uint32_t port;

	for (port = 1; port <= p->attr.phys_port_cnt; port++)
		if (!ibv_query_port(p->dev, (uint8_t)port, &pa))
			total += (size_t)pa.gid_tbl_len;
	tab = calloc(total ? total : 1, sizeof(*tab));
	if (!tab)
		return -ENOMEM;
	n = ibv_query_gid_table(p->dev, tab, total, 0);
	if (n < 0) {
		pr_info("verbs: %s: ibv_query_gid_table: %s",
			ibv_get_device_name(p->dev->device),
			hmc_strerror((int)n));
		free(tab);
		return (int)n;
	}
	for (i = 0; i < n; i++) {
		if (tab[i].port_num != p->num)
			continue;
		s = gid_score(&tab[i]);
		if (s > best || (s == best && s && (int)tab[i].gid_index < p->gid_index)) {
			best = s;
			p->gid_index = (int)tab[i].gid_index;
			p->gid = tab[i].gid;
		}
	}
	free(tab);
	return best ? 0 : -EADDRNOTAVAIL;
}

/* Make port @num of @p->dev ours: 0, -ENETDOWN if not usable, an errno. */
static int use_port(struct vb_port *p, uint8_t num)
{
	struct ibv_port_attr pa;
	int rc;

	rc = ibv_query_port(p->dev, num, &pa);
	if (rc)
		return -rc;
	if (pa.state != IBV_PORT_ACTIVE)
		return -ENETDOWN;
	p->num = num;
	p->mtu = pa.active_mtu;
	p->max_msg_sz = pa.max_msg_sz;
	p->roce = pa.link_layer == IBV_LINK_LAYER_ETHERNET;
	p->lid = pa.lid;
	p->gid_index = INT32_MAX;
	if (p->roce)
		return pick_roce_gid(p);
	if (!pa.lid)	/* no subnet manager has configured the port */
		return -ENETDOWN;
	p->gid_index = 0;
	if (ibv_query_gid(p->dev, num, 0, &p->gid))
		return errno ? -errno : -EIO;
	return 0;
}

/* Open @d and take port @port of it (0: its first active one). */
static int use_device(struct ibv_device *d, uint8_t port, struct vb_port *p)
{
	const char *name = ibv_get_device_name(d);
	uint32_t num;
	int rc = -ENETDOWN;

	if (d->transport_type != IBV_TRANSPORT_IB) {
		pr_debug("verbs: %s: not an InfiniBand or RoCE device", name);
		return -EOPNOTSUPP;
	}
	p->dev = ibv_open_device(d);
	if (!p->dev)
		return errno ? -errno : -ENODEV;
	rc = ibv_query_device(p->dev, &p->attr);
	if (rc) {
		rc = -rc;
		goto err;
	}
	if (port > p->attr.phys_port_cnt) {
		pr_info("verbs: %s has no port %u", name, port);
		rc = -ENODEV;
		goto err;
	}
	for (num = port ? port : 1; num <= p->attr.phys_port_cnt; num++) {
		rc = use_port(p, (uint8_t)num);
		if (rc)
			pr_debug("verbs: %s port %u: %s", name, num,
				 rc == -ENETDOWN ? "not active" : hmc_strerror(rc));
		if (!rc || port)
			break;
	}
	if (!rc)
		return 0;
err:
	ibv_close_device(p->dev);
	p->dev = NULL;
	return rc;
}

int vb_port_open(const char *name, uint8_t port, struct vb_port *p)
{
	char env_name[IBV_SYSFS_NAME_MAX];
	struct ibv_device **list;
	uint8_t env_port;
	int i, n = 0, rc;

	memset(p, 0, sizeof(*p));
	if (!name) {
		rc = parse_env(env_name, sizeof(env_name), &env_port);
		if (rc < 0)
			return rc;
		if (rc) {
			name = env_name;
			if (!port)
				port = env_port;
		}
	}
	list = ibv_get_device_list(&n);
	if (!list) {
		rc = errno == ENOMEM ? -ENOMEM : -ENODEV;
		pr_info("verbs: no RDMA devices: %s", hmc_strerror(-errno));
		return rc;
	}
	rc = -ENODEV;
	for (i = 0; i < n; i++) {
		if (name && strcmp(ibv_get_device_name(list[i]), name))
			continue;
		rc = use_device(list[i], port, p);
		if (!rc || name)
			break;
	}
	ibv_free_device_list(list);
	if (rc == -ENODEV && name && i == n)
		pr_info("verbs: no RDMA device named %s", name);
	else if (rc)
		pr_info("verbs: no usable RDMA port%s%s: %s", name ? " on " : "",
			name ? name : "", rc == -ENETDOWN ? "none is active" :
			hmc_strerror(rc));
	return rc;
}

/* What is tried when @type memory has no dma-buf region. */
static const char *instead(enum hmc_mem_type type)
{
	return type == HMC_MEM_CPU ?
	       "registering the /dev/hmc mapping with ibv_reg_mr" :
	       "trying ibv_reg_mr (peer memory)";
}

/*
 * [@addr, @addr + @len) of @type memory (@what: "CUDA buffer" and the
 * like) as a memory region of dma-buf @fd (consumed), at @offset in it,
 * its iova @addr (what peers are told); NULL, and a debug line saying what
 * is tried instead, where the device takes no dma-buf regions (rxe on
 * 6.1: EOPNOTSUPP).
 */
static struct ibv_mr *reg_dmabuf(struct vb_port *p, struct ibv_pd *pd,
				 int fd, uint64_t offset, void *addr,
				 size_t len, enum hmc_mem_type type,
				 const char *what, int access)
{
	const char *dev = ibv_get_device_name(p->dev->device);
	struct ibv_mr *mr;
	int rc;

	errno = 0;
	mr = ibv_reg_dmabuf_mr(pd, offset, len, (uintptr_t)addr, fd, access);
	rc = errno ? -errno : -EIO;
	close(fd);		/* the region holds the dma-buf */
	if (mr)
		pr_debug("verbs: %s: the %zu-byte %s registered as a dma-buf",
			 dev, len, what);
	else
		pr_debug("verbs: %s: ibv_reg_dmabuf_mr: %s: %s instead", dev,
			 hmc_strerror(rc), instead(type));
	return mr;
}

/*
 * ibv_reg_mr() of [@addr, @addr + @len): NULL and a negative errno in
 * @err on failure, -EOPNOTSUPP for device memory the device cannot reach
 * by its mapping (no peer-memory support).
 */
static struct ibv_mr *reg_mapping(struct vb_port *p, struct ibv_pd *pd,
				  void *addr, size_t len,
				  enum hmc_mem_type type, const char *what,
				  int access, int *err)
{
	struct ibv_mr *mr;

	errno = 0;
	mr = ibv_reg_mr(pd, addr, len, access);
	if (mr)
		return mr;
	*err = errno ? -errno : -EIO;
	if (type != HMC_MEM_CPU) {
		pr_debug("verbs: %s cannot register %s memory (ibv_reg_mr: %s): it needs dma-buf or peer-memory support (nvidia-peermem, amdgpu)",
			 ibv_get_device_name(p->dev->device),
			 hmc_mem_type_name(type), hmc_strerror(*err));
		*err = -EOPNOTSUPP;
	} else {
		pr_info("verbs: ibv_reg_mr of the %zu-byte %s: %s", len, what,
			hmc_strerror(*err));
	}
	return NULL;
}

struct ibv_mr *vb_reg_buf(struct vb_port *p, struct ibv_pd *pd,
			  struct hmc_buf *buf, int *err)
{
	const int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			   IBV_ACCESS_REMOTE_READ;
	enum hmc_buf_backing backing = hmc_buf_backing(buf);
	enum hmc_mem_type type = hmc_buf_mem_type(buf);
	struct ibv_mr *mr;
	char what[64];
	int fd, rc;

	snprintf(what, sizeof(what), "%s buffer", type == HMC_MEM_CPU ?
		 hmc_buf_backing_name(backing) : hmc_mem_type_name(type));
	if (backing == HMC_BUF_BACKING_KMOD ||
	    backing == HMC_BUF_BACKING_DEVICE) {
		rc = hmc_buf_export_fd(buf, 0, 0, HMC_BUF_EXPORT_RDWR, &fd);
		if (rc)
			pr_debug("verbs: no dma-buf of the %s: %s: %s instead",
				 what, hmc_strerror(rc), instead(type));
		mr = rc ? NULL : reg_dmabuf(p, pd, fd, 0, hmc_buf_ptr(buf),
					    hmc_buf_size(buf), type, what,
					    access);
		if (mr)
			return mr;
	}
	return reg_mapping(p, pd, hmc_buf_ptr(buf), hmc_buf_size(buf), type,
			   what, access, err);
}

struct ibv_mr *vb_reg_mem(struct vb_port *p, struct ibv_pd *pd, void *addr,
			  size_t len, enum hmc_mem_type type, int device,
			  int access, int *err)
{
	const uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
	uintptr_t start = (uintptr_t)addr & ~(page - 1);
	uintptr_t end = ((uintptr_t)addr + len + page - 1) & ~(page - 1);
	struct ibv_mr *mr;
	char what[64];
	int fd, rc;

	snprintf(what, sizeof(what), "%s region", hmc_mem_type_name(type));
	/* The runtime exports whole pages: the region sits inside them. */
	if (type != HMC_MEM_CPU) {
		rc = mem_export_dmabuf(type, device, (void *)start, end - start,
				       &fd);
		if (rc)
			pr_debug("verbs: no dma-buf of the %s: %s: %s instead",
				 what, hmc_strerror(rc), instead(type));
		mr = rc ? NULL : reg_dmabuf(p, pd, fd, (uintptr_t)addr - start,
					    addr, len, type, what, access);
		if (mr)
			return mr;
	}
	return reg_mapping(p, pd, addr, len, type, what, access, err);
}
