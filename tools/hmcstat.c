// SPDX-License-Identifier: GPL-2.0
/*
 * hmcstat: what hmc.ko reports through its generic netlink family "hmc"
 * (uapi/linux/hmc.h): events as they happen, the counters, and every
 * process's buffers, imports and peers. Like `ip monitor`: one line per
 * event, -j for JSON.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <linux/hmc.h>
#include <netlink/genl/ctrl.h>
#include <netlink/genl/genl.h>

static const char usage_text[] =
"Usage: hmcstat [-j] [-s [-i MS] [-c N] | -w [-c N] | -b | -p]\n"
"  -s       the counters of hmc (default)\n"
"  -i MS    with -s: again every MS milliseconds\n"
"  -w       watch events, one line each, until interrupted; a gap in the\n"
"           sequence numbers is reported as lost events\n"
"  -c N     stop after N events (-w) or N reports (-s -i)\n"
"  -b       the buffers of every process\n"
"  -p       the peers and imports of every process\n"
"  -j       JSON: one object per line (-w, -s), or one document\n"
"  -h       this help\n"
"-w, -b and -p need CAP_NET_ADMIN. hmc.ko must be loaded.\n";

static bool json;

/* ---- names ------------------------------------------------------------ */

static const char *const event_names[] = {
	[HMC_CMD_GET_STATS] = "stats",
	[HMC_CMD_GET_BUFS] = "buffer",
	[HMC_CMD_GET_IMPORTS] = "import",
	[HMC_CMD_GET_PEERS] = "peer",
	[HMC_EVT_BUF_CREATED] = "buf-created",
	[HMC_EVT_BUF_FREED] = "buf-freed",
	[HMC_EVT_BUF_EXPORTED] = "buf-exported",
	[HMC_EVT_PEER_IMPORTED] = "peer-imported",
	[HMC_EVT_PEER_RELEASED] = "peer-released",
	[HMC_EVT_PEER_INVALIDATED] = "peer-invalidated",
	[HMC_EVT_PEER_CONNECTED] = "peer-connected",
	[HMC_EVT_PEER_DISCONNECTED] = "peer-disconnected",
	[HMC_EVT_PEER_FAILED] = "peer-failed",
	[HMC_EVT_RDMA_DEV_ADDED] = "rdma-dev-added",
	[HMC_EVT_RDMA_DEV_REMOVED] = "rdma-dev-removed",
	[HMC_EVT_RDMA_PORT_ACTIVE] = "rdma-port-active",
	[HMC_EVT_RDMA_PORT_DOWN] = "rdma-port-down",
	[HMC_EVT_ERROR] = "error",
};

static const char *const stat_names[] = {
	[HMC_STAT_BUFS_LIVE] = "bufs_live",
	[HMC_STAT_BYTES_LIVE] = "bytes_live",
	[HMC_STAT_PAGES_PINNED] = "pages_pinned",
	[HMC_STAT_MAPPINGS_LIVE] = "mappings_live",
	[HMC_STAT_HANDLES_LIVE] = "handles_live",
	[HMC_STAT_BUFS_CREATED] = "bufs_created",
	[HMC_STAT_ERRORS] = "errors",
	[HMC_STAT_MEMLOCK_REFUSED] = "memlock_refused",
	[HMC_STAT_EXPORTS_LIVE] = "exports_live",
	[HMC_STAT_ATTACHMENTS_LIVE] = "attachments_live",
	[HMC_STAT_IMPORTS_LIVE] = "imports_live",
	[HMC_STAT_PEERS_CONNECTED] = "peers_connected",
	[HMC_STAT_IMPORTS_INVALIDATED] = "imports_invalidated",
	[HMC_STAT_EVENTS_SENT] = "events_sent",
	[HMC_STAT_EVENTS_DROPPED] = "events_dropped",
};

static const char *const buf_types[] = {
	[HMC_BUF_TYPE_KERNEL] = "kernel",
	[HMC_BUF_TYPE_PINNED] = "pinned",
};

static const char *const transports[] = {
	[HMC_PEER_TRANSPORT_UNSPEC] = "unspec",
	[HMC_PEER_TRANSPORT_UCX] = "ucx",
	[HMC_PEER_TRANSPORT_VERBS] = "verbs",
	[HMC_PEER_TRANSPORT_SHM] = "shm",
	[HMC_PEER_TRANSPORT_TCP] = "tcp",
};

static const char *const import_states[] = {
	[HMC_PEER_ST_MAPPED] = "mapped",
	[HMC_PEER_ST_INVALIDATED] = "invalidated",
};

static const char *const ioctl_names[] = {
	[_IOC_NR(HMC_IOC_GET_VERSION)] = "version",
	[_IOC_NR(HMC_IOC_BUF_ALLOC)] = "alloc",
	[_IOC_NR(HMC_IOC_BUF_PIN)] = "pin",
	[_IOC_NR(HMC_IOC_BUF_FREE)] = "free",
	[_IOC_NR(HMC_IOC_BUF_INFO)] = "info",
	[_IOC_NR(HMC_IOC_GET_STATS)] = "stats",
	[_IOC_NR(HMC_IOC_BUF_EXPORT)] = "export",
	[_IOC_NR(HMC_IOC_PEER_IMPORT)] = "import",
	[_IOC_NR(HMC_IOC_PEER_RELEASE)] = "release",
	[_IOC_NR(HMC_IOC_PEER_INFO)] = "peer-info",
	[_IOC_NR(HMC_IOC_PEER_STATE)] = "peer-state",
};

#define ARRAY_LEN(a)	(sizeof(a) / sizeof((a)[0]))

/* @names[v], or NULL for values this hmcstat does not know. */
static const char *name_of(const char *const *names, size_t n, uint32_t v)
{
	return v < n ? names[v] : NULL;
}
#define NAME_OF(names, v)	name_of(names, ARRAY_LEN(names), v)

/* ---- output ------------------------------------------------------------ */

/* One record (line or JSON object), written field by field. */
struct out {
	int fields;
};

static void out_key(struct out *o, const char *key)
{
	if (json)
		printf("%s\"%s\":", o->fields ? "," : "{", key);
	else
		printf("%s%s=", o->fields ? " " : "", key);
	o->fields++;
}

static void out_u64(struct out *o, const char *key, uint64_t v)
{
	out_key(o, key);
	printf("%" PRIu64, v);
}

static void out_str(struct out *o, const char *key, const char *s)
{
	const unsigned char *c = (const unsigned char *)s;

	out_key(o, key);
	if (!json) {
		for (; *c; c++)
			putchar(*c > ' ' && *c < 0x7f ? *c : '?');
		return;
	}
	putchar('"');
	for (; *c; c++) {
		if (*c == '"' || *c == '\\')
			printf("\\%c", *c);
		else if (*c < ' ' || *c >= 0x7f)
			printf("\\u%04x", *c);
		else
			putchar(*c);
	}
	putchar('"');
}

/* A known name as a string, an unknown value as its number. */
static void out_name(struct out *o, const char *key, const char *name,
		     uint32_t v)
{
	if (name)
		out_str(o, key, name);
	else
		out_u64(o, key, v);
}

static void out_end(struct out *o)
{
	if (json)
		fputs(o->fields ? "}" : "{}", stdout);
	putchar('\n');
	o->fields = 0;
}

/* Local time with microseconds: 2026-11-22T10:32:11.123456. */
static void format_time(char *buf, size_t len, uint64_t ns)
{
	time_t sec = ns / 1000000000;
	struct tm tm;
	size_t n;

	localtime_r(&sec, &tm);
	n = strftime(buf, len, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf + n, len - n, ".%06" PRIu64, ns % 1000000000 / 1000);
}

static void out_time(struct out *o, uint64_t ns)
{
	char buf[64];

	if (json) {
		out_u64(o, "time_ns", ns);
		return;
	}
	format_time(buf, sizeof(buf), ns);
	out_str(o, "time", buf);
}

/*
 * Import flags by name, unknown bits in hex. The buffer holds all 32 bits
 * set: the names, then 28 values of at most 10 characters, each with a
 * comma; the writes are bounded all the same.
 */
static void out_flags(struct out *o, uint32_t flags)
{
	static const char *const names[] = {
		"dynamic", "p2p", "pci-dev", "readonly",
	};
	char buf[sizeof("dynamic,p2p,pci-dev,readonly") +
		 (32 - ARRAY_LEN(names)) * sizeof(",0x80000000")] = "";
	size_t len = 0;
	unsigned int i;

	for (i = 0; i < 32 && len < sizeof(buf); i++) {
		if (!(flags & 1U << i))
			continue;
		if (i < ARRAY_LEN(names))
			len += snprintf(buf + len, sizeof(buf) - len, "%s%s",
					len ? "," : "", names[i]);
		else
			len += snprintf(buf + len, sizeof(buf) - len, "%s%#x",
					len ? "," : "", 1U << i);
	}
	out_str(o, "flags", len ? buf : "none");
}

/*
 * A peer's address: libhmc reports its control connection's sockaddr_in or
 * sockaddr_in6, or { AF_UNIX, pid } for a peer on this host; anything else
 * is shown in hex.
 */
static void out_addr(struct out *o, const struct nlattr *a)
{
	char text[2 * HMC_PEER_ADDR_MAX + 1] = "", ip[INET6_ADDRSTRLEN];
	const uint8_t *b = nla_data(a);
	int i, n = nla_len(a);
	sa_family_t family;
	uint32_t pid;

	if (n >= (int)sizeof(family))
		memcpy(&family, b, sizeof(family));
	if (n == sizeof(struct sockaddr_in) && family == AF_INET) {
		struct sockaddr_in sin;

		memcpy(&sin, b, sizeof(sin));
		inet_ntop(AF_INET, &sin.sin_addr, ip, sizeof(ip));
		snprintf(text, sizeof(text), "%s:%u", ip, ntohs(sin.sin_port));
	} else if (n == sizeof(struct sockaddr_in6) && family == AF_INET6) {
		struct sockaddr_in6 sin6;

		memcpy(&sin6, b, sizeof(sin6));
		inet_ntop(AF_INET6, &sin6.sin6_addr, ip, sizeof(ip));
		snprintf(text, sizeof(text), "[%s]:%u", ip,
			 ntohs(sin6.sin6_port));
	} else if (n == 8 && family == AF_UNIX) {
		memcpy(&pid, b + 4, sizeof(pid));
		snprintf(text, sizeof(text), "unix:pid=%u", pid);
	} else {
		for (i = 0; i < n && i < HMC_PEER_ADDR_MAX; i++)
			snprintf(text + 2 * i, sizeof(text) - 2 * i, "%02x",
				 b[i]);
	}
	out_str(o, "addr", n ? text : "-");
}

static void out_errno(struct out *o, uint32_t err)
{
	const char *name = strerrorname_np(err);

	if (json || !name)
		out_u64(o, "errno", err);
	else
		out_str(o, "errno", name);
}

/* The attributes of a message, in the order of enum hmc_attr. */
static void out_attrs(struct out *o, struct nlattr **tb)
{
	uint32_t v;

	if (tb[HMC_A_PID])
		out_u64(o, "pid", nla_get_u32(tb[HMC_A_PID]));
	if (tb[HMC_A_FILE_ID])
		out_u64(o, "file", nla_get_u32(tb[HMC_A_FILE_ID]));
	if (tb[HMC_A_BUF_ID])
		out_u64(o, "buf", nla_get_u32(tb[HMC_A_BUF_ID]));
	if (tb[HMC_A_IMPORT_ID])
		out_u64(o, "import", nla_get_u32(tb[HMC_A_IMPORT_ID]));
	if (tb[HMC_A_HANDLE])
		out_u64(o, "handle", nla_get_u32(tb[HMC_A_HANDLE]));
	if (tb[HMC_A_HANDLE_LIVE] || tb[HMC_A_BUF_ID]) {
		out_key(o, "handle_live");
		fputs(tb[HMC_A_HANDLE_LIVE] ? "true" : "false", stdout);
	}
	if (tb[HMC_A_BUF_TYPE]) {
		v = nla_get_u32(tb[HMC_A_BUF_TYPE]);
		out_name(o, "type", NAME_OF(buf_types, v), v);
	}
	if (tb[HMC_A_EXPORTER])
		out_str(o, "exporter", nla_get_string(tb[HMC_A_EXPORTER]));
	if (tb[HMC_A_OFFSET])
		out_u64(o, "offset", nla_get_u64(tb[HMC_A_OFFSET]));
	if (tb[HMC_A_SIZE])
		out_u64(o, "size", nla_get_u64(tb[HMC_A_SIZE]));
	if (tb[HMC_A_NR_MAPPINGS])
		out_u64(o, "mappings", nla_get_u32(tb[HMC_A_NR_MAPPINGS]));
	if (tb[HMC_A_NR_EXPORTS])
		out_u64(o, "exports", nla_get_u32(tb[HMC_A_NR_EXPORTS]));
	if (tb[HMC_A_IMPORT_STATE]) {
		v = nla_get_u32(tb[HMC_A_IMPORT_STATE]);
		out_name(o, "state", NAME_OF(import_states, v), v);
	}
	if (tb[HMC_A_IMPORT_FLAGS])
		out_flags(o, nla_get_u32(tb[HMC_A_IMPORT_FLAGS]));
	if (tb[HMC_A_NENTS])
		out_u64(o, "nents", nla_get_u32(tb[HMC_A_NENTS]));
	if (tb[HMC_A_PEER_ID])
		out_u64(o, "peer", nla_get_u64(tb[HMC_A_PEER_ID]));
	if (tb[HMC_A_TRANSPORT]) {
		v = nla_get_u32(tb[HMC_A_TRANSPORT]);
		out_name(o, "transport", NAME_OF(transports, v), v);
	}
	if (tb[HMC_A_PEER_ADDR])
		out_addr(o, tb[HMC_A_PEER_ADDR]);
	if (tb[HMC_A_IOCTL]) {
		v = nla_get_u32(tb[HMC_A_IOCTL]);
		out_name(o, "ioctl", NAME_OF(ioctl_names, v), v);
	}
	if (tb[HMC_A_ERRNO])
		out_errno(o, nla_get_u32(tb[HMC_A_ERRNO]));
	if (tb[HMC_A_RDMA_DEV])
		out_str(o, "dev", nla_get_string(tb[HMC_A_RDMA_DEV]));
	if (tb[HMC_A_RDMA_PORT])
		out_u64(o, "port", nla_get_u32(tb[HMC_A_RDMA_PORT]));
}

/* ---- netlink ------------------------------------------------------------ */

static struct nla_policy policy[HMC_A_MAX + 1] = {
	[HMC_A_SEQ] = { .type = NLA_U64 },
	[HMC_A_TIME_NS] = { .type = NLA_U64 },
	[HMC_A_PID] = { .type = NLA_U32 },
	[HMC_A_FILE_ID] = { .type = NLA_U32 },
	[HMC_A_BUF_ID] = { .type = NLA_U32 },
	[HMC_A_HANDLE] = { .type = NLA_U32 },
	[HMC_A_BUF_TYPE] = { .type = NLA_U32 },
	[HMC_A_SIZE] = { .type = NLA_U64 },
	[HMC_A_OFFSET] = { .type = NLA_U64 },
	[HMC_A_NR_MAPPINGS] = { .type = NLA_U32 },
	[HMC_A_NR_EXPORTS] = { .type = NLA_U32 },
	[HMC_A_IMPORT_ID] = { .type = NLA_U32 },
	[HMC_A_IMPORT_STATE] = { .type = NLA_U32 },
	[HMC_A_IMPORT_FLAGS] = { .type = NLA_U32 },
	[HMC_A_NENTS] = { .type = NLA_U32 },
	[HMC_A_EXPORTER] = { .type = NLA_STRING },
	[HMC_A_PEER_ID] = { .type = NLA_U64 },
	[HMC_A_TRANSPORT] = { .type = NLA_U32 },
	[HMC_A_PEER_ADDR] = { .maxlen = HMC_PEER_ADDR_MAX },
	[HMC_A_ERRNO] = { .type = NLA_U32 },
	[HMC_A_IOCTL] = { .type = NLA_U32 },
	[HMC_A_RDMA_DEV] = { .type = NLA_STRING },
	[HMC_A_RDMA_PORT] = { .type = NLA_U32 },
	[HMC_A_STATS] = { .type = NLA_NESTED },
	[HMC_A_HANDLE_LIVE] = { .type = NLA_FLAG },
};

struct hmc_sock {
	struct nl_sock *sk;
	int family;
};

static int fail(const char *what, int nlerr)
{
	if (nlerr == -NLE_PERM)
		fprintf(stderr, "hmcstat: %s: permission denied (it needs CAP_NET_ADMIN)\n",
			what);
	else
		fprintf(stderr, "hmcstat: %s: %s\n", what, nl_geterror(nlerr));
	return 1;
}

static int hmc_connect(struct hmc_sock *s)
{
	int ret;

	s->sk = nl_socket_alloc();
	if (!s->sk) {
		fprintf(stderr, "hmcstat: out of memory\n");
		return 1;
	}
	ret = genl_connect(s->sk);
	if (ret)
		return fail("generic netlink", ret);
	s->family = genl_ctrl_resolve(s->sk, HMC_GENL_NAME);
	if (s->family == -NLE_OBJ_NOTFOUND) {
		fprintf(stderr,
			"hmcstat: hmc is not loaded (no generic netlink family \"%s\"): modprobe hmc\n",
			HMC_GENL_NAME);
		return 1;
	}
	if (s->family < 0)
		return fail("looking up the family", s->family);
	return 0;
}

/* Parses a message of the family; NULL if it is not one. */
static struct genlmsghdr *hmc_parse(struct nl_msg *msg, struct nlattr **tb)
{
	struct nlmsghdr *nlh = nlmsg_hdr(msg);

	if (genlmsg_parse(nlh, 0, tb, HMC_A_MAX, policy) < 0) {
		fprintf(stderr, "hmcstat: a malformed message was skipped\n");
		return NULL;
	}
	return nlmsg_data(nlh);
}

/* Sends request @cmd and hands each reply to @cb. */
static int hmc_request(struct hmc_sock *s, int cmd, int flags,
		       nl_recvmsg_msg_cb_t cb, void *arg, const char *what)
{
	struct nl_msg *msg = nlmsg_alloc();
	int ret;

	if (!msg || !genlmsg_put(msg, NL_AUTO_PORT, NL_AUTO_SEQ, s->family, 0,
				 flags, cmd, HMC_GENL_VERSION)) {
		nlmsg_free(msg);
		fprintf(stderr, "hmcstat: out of memory\n");
		return 1;
	}
	nl_socket_modify_cb(s->sk, NL_CB_VALID, NL_CB_CUSTOM, cb, arg);
	ret = nl_send_auto(s->sk, msg);
	nlmsg_free(msg);
	if (ret >= 0)
		ret = nl_recvmsgs_default(s->sk);
	if (!ret && !(flags & NLM_F_DUMP))
		ret = nl_wait_for_ack(s->sk);
	return ret < 0 ? fail(what, ret) : 0;
}

/* ---- -s: counters -------------------------------------------------------- */

static int on_stats(struct nl_msg *msg, void *arg)
{
	struct nlattr *tb[HMC_A_MAX + 1], *a;
	char name[32];
	struct out o = { 0 };
	int rem, i;

	if (!hmc_parse(msg, tb) || !tb[HMC_A_STATS])
		return NL_SKIP;
	nla_for_each_nested(a, tb[HMC_A_STATS], rem) {
		i = nla_type(a) - HMC_STATS_A_BASE;
		if (i < 0 || nla_len(a) != sizeof(uint64_t))
			continue;
		if (NAME_OF(stat_names, i))
			snprintf(name, sizeof(name), "%s", stat_names[i]);
		else
			snprintf(name, sizeof(name), "counter_%d", i);
		if (json) {
			out_u64(&o, name, nla_get_u64(a));
		} else {
			printf("%-20s %" PRIu64 "\n", name, nla_get_u64(a));
		}
	}
	if (tb[HMC_A_SEQ]) {
		if (json)
			out_u64(&o, "seq", nla_get_u64(tb[HMC_A_SEQ]));
		else
			printf("%-20s %" PRIu64 "\n", "last_event_seq",
			       nla_get_u64(tb[HMC_A_SEQ]));
	}
	if (json)
		out_end(&o);
	return NL_OK;
}

static int show_stats(struct hmc_sock *s, long interval_ms, long count)
{
	struct timespec ts = {
		.tv_sec = interval_ms / 1000,
		.tv_nsec = interval_ms % 1000 * 1000000,
	};
	long n;
	int ret;

	for (n = 0; !count || n < count; n++) {
		if (n) {
			nanosleep(&ts, NULL);
			if (!json)
				putchar('\n');
		}
		ret = hmc_request(s, HMC_CMD_GET_STATS, 0, on_stats, NULL,
				  "counters");
		if (ret || !interval_ms)
			return ret;
		fflush(stdout);
	}
	return 0;
}

/* ---- -b, -p: dumps --------------------------------------------------------- */

struct dump {
	int n;
};

static int on_dump(struct nl_msg *msg, void *arg)
{
	struct nlattr *tb[HMC_A_MAX + 1];
	struct dump *d = arg;
	struct out o = { 0 };

	if (!hmc_parse(msg, tb))
		return NL_SKIP;
	if (json)
		fputs(d->n ? "," : "", stdout);
	out_attrs(&o, tb);
	if (tb[HMC_A_TIME_NS])
		out_time(&o, nla_get_u64(tb[HMC_A_TIME_NS]));
	if (json)
		fputs(o.fields ? "}" : "{}", stdout);
	else
		putchar('\n');
	d->n++;
	return NL_OK;
}

/* One dump: a JSON array, or a titled list of lines. */
static int show_dump(struct hmc_sock *s, int cmd, const char *title)
{
	struct dump d = { 0 };
	int ret;

	if (json)
		printf("\"%s\":[", title);
	else
		printf("%s:\n", title);
	ret = hmc_request(s, cmd, NLM_F_DUMP, on_dump, &d, title);
	if (json)
		fputs("]", stdout);
	else if (!d.n)
		puts("(none)");
	return ret;
}

static int show_buffers(struct hmc_sock *s)
{
	int ret;

	if (json)
		putchar('{');
	ret = show_dump(s, HMC_CMD_GET_BUFS, "buffers");
	if (json)
		puts("}");
	return ret;
}

static int show_peers(struct hmc_sock *s)
{
	int ret;

	if (json)
		putchar('{');
	ret = show_dump(s, HMC_CMD_GET_PEERS, "peers");
	fputs(json ? "," : "\n", stdout);
	if (!ret)
		ret = show_dump(s, HMC_CMD_GET_IMPORTS, "imports");
	if (json)
		puts("}");
	return ret;
}

/* ---- -w: events ------------------------------------------------------------ */

struct watch {
	uint64_t last_seq;	/* 0: none yet */
	long count, max;	/* events shown, and when to stop (0: never) */
};

static void lost_events(uint64_t n)
{
	struct out o = { 0 };

	if (json) {
		out_str(&o, "event", "lost");
		out_u64(&o, "count", n);
		out_end(&o);
	} else {
		printf("lost %" PRIu64 " events\n", n);
	}
}

static int on_event(struct nl_msg *msg, void *arg)
{
	struct nlattr *tb[HMC_A_MAX + 1];
	struct watch *w = arg;
	struct genlmsghdr *gh;
	struct out o = { 0 };
	uint64_t seq;

	gh = hmc_parse(msg, tb);
	if (!gh || !tb[HMC_A_SEQ])
		return NL_SKIP;
	seq = nla_get_u64(tb[HMC_A_SEQ]);
	/* Numbers restart when the module is loaded again. */
	if (w->last_seq && seq > w->last_seq + 1)
		lost_events(seq - w->last_seq - 1);
	w->last_seq = seq;
	if (json) {
		out_u64(&o, "seq", seq);
		if (tb[HMC_A_TIME_NS])
			out_time(&o, nla_get_u64(tb[HMC_A_TIME_NS]));
		out_name(&o, "event", NAME_OF(event_names, gh->cmd), gh->cmd);
	} else {
		/* SEQ TIME EVENT key=value... */
		char when[64] = "-";

		if (tb[HMC_A_TIME_NS])
			format_time(when, sizeof(when),
				    nla_get_u64(tb[HMC_A_TIME_NS]));
		printf("%" PRIu64 " %s ", seq, when);
		if (NAME_OF(event_names, gh->cmd))
			fputs(event_names[gh->cmd], stdout);
		else
			printf("event-%u", gh->cmd);
		o.fields = 1;
	}
	out_attrs(&o, tb);
	out_end(&o);
	w->count++;
	return w->max && w->count >= w->max ? NL_STOP : NL_OK;
}

static int watch(struct hmc_sock *s, long max)
{
	struct watch w = { .max = max };
	struct out o = { 0 };
	int grp, ret;

	grp = genl_ctrl_resolve_grp(s->sk, HMC_GENL_NAME,
				    HMC_GENL_MCGRP_EVENTS);
	if (grp < 0)
		return fail("the events group", grp);
	nl_socket_disable_seq_check(s->sk);
	nl_socket_modify_cb(s->sk, NL_CB_VALID, NL_CB_CUSTOM, on_event, &w);
	/* Bursts of events: room for thousands before the socket overruns. */
	ret = nl_socket_set_buffer_size(s->sk, 4 << 20, 0);
	if (!ret)
		ret = nl_socket_add_membership(s->sk, grp);
	if (ret)
		return fail("joining the events group", ret);
	fprintf(stderr, "hmcstat: watching hmc events\n");
	while (!w.max || w.count < w.max) {
		ret = nl_recvmsgs_default(s->sk);
		if (ret == -NLE_NOMEM) {
			/* ENOBUFS: the next event shows how many were lost. */
			if (json) {
				out_str(&o, "event", "overrun");
				out_end(&o);
			} else {
				puts("overrun: the socket buffer was full");
			}
			continue;
		}
		if (ret < 0)
			return fail("receiving events", ret);
	}
	return 0;
}

/* ---- main ------------------------------------------------------------------- */

static long number(const char *arg, const char *what)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(arg, &end, 10);
	if (errno || *end || v <= 0) {
		fprintf(stderr, "hmcstat: %s must be a positive number: %s\n",
			what, arg);
		exit(2);
	}
	return v;
}

int main(int argc, char **argv)
{
	long interval = 0, count = 0;
	struct hmc_sock s;
	int opt, mode = 's', modes = 0, ret;

	while ((opt = getopt(argc, argv, "sbpwi:c:jh")) != -1) {
		switch (opt) {
		case 's':
		case 'b':
		case 'p':
		case 'w':
			mode = opt;
			modes++;
			break;
		case 'i':
			interval = number(optarg, "-i");
			break;
		case 'c':
			count = number(optarg, "-c");
			break;
		case 'j':
			json = true;
			break;
		case 'h':
			fputs(usage_text, stdout);
			return 0;
		default:
			fputs(usage_text, stderr);
			return 2;
		}
	}
	if (optind < argc || modes > 1 || (interval && mode != 's') ||
	    (count && mode != 'w' && !interval)) {
		fputs(usage_text, stderr);
		return 2;
	}
	/* Lines reach pipes as they are made. */
	setvbuf(stdout, NULL, _IOLBF, 0);
	ret = hmc_connect(&s);
	if (!ret) {
		switch (mode) {
		case 's':
			ret = show_stats(&s, interval, count);
			break;
		case 'b':
			ret = show_buffers(&s);
			break;
		case 'p':
			ret = show_peers(&s);
			break;
		default:
			ret = watch(&s, count);
			break;
		}
	}
	nl_socket_free(s.sk);
	return ret;
}
