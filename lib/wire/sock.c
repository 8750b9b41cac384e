// SPDX-License-Identifier: MIT
/* Control-plane sockets (see sock.h). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "sys/log.h"
#include "sys/util.h"
#include "wire/sock.h"

static int set_nodelay(int fd)
{
	int one = 1;

	if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)))
		return -errno;
	return 0;
}

static int resolve(const char *ip, uint16_t port, bool passive,
		   struct addrinfo **res)
{
	struct addrinfo hints = {
		.ai_family = AF_UNSPEC,
		.ai_socktype = SOCK_STREAM,
		.ai_flags = AI_NUMERICSERV | (passive ? AI_PASSIVE : 0),
	};
	char serv[8];
	int rc;

	snprintf(serv, sizeof(serv), "%u", port);
	if (ip && !*ip)
		ip = NULL;
	rc = getaddrinfo(ip, serv, &hints, res);
	if (rc) {
		pr_debug("cannot resolve %s: %s", ip ? ip : "*", gai_strerror(rc));
		return rc == EAI_SYSTEM ? -errno : -EADDRNOTAVAIL;
	}
	return 0;
}

int sock_listen_tcp(const char *ip, uint16_t port, int *fd, uint16_t *bound)
{
	struct addrinfo *res, *ai;
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	int one = 1, s = -1, rc;

	rc = resolve(ip, port, true, &res);
	if (rc)
		return rc;
	rc = -EADDRNOTAVAIL;
	for (ai = res; ai; ai = ai->ai_next) {
		s = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK |
			   SOCK_CLOEXEC, ai->ai_protocol);
		if (s < 0) {
			rc = -errno;
			continue;
		}
		setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (!bind(s, ai->ai_addr, ai->ai_addrlen) && !listen(s, 128))
			break;
		rc = -errno;
		close(s);
		s = -1;
	}
	freeaddrinfo(res);
	if (s < 0)
		return rc;
	if (getsockname(s, (struct sockaddr *)&ss, &sl)) {
		rc = -errno;
		close(s);
		return rc;
	}
	*bound = ntohs(ss.ss_family == AF_INET6 ?
		       ((struct sockaddr_in6 *)&ss)->sin6_port :
		       ((struct sockaddr_in *)&ss)->sin_port);
	*fd = s;
	return 0;
}

/* @name in the abstract namespace (leading NUL), else a filesystem path. */
static int unix_addr(struct sockaddr_un *sun, const char *name, bool abstract,
		     socklen_t *len)
{
	size_t n = strlen(name), at = abstract ? 1 : 0;

	if (n + at >= sizeof(sun->sun_path))
		return -ENAMETOOLONG;
	memset(sun, 0, sizeof(*sun));
	sun->sun_family = AF_UNIX;
	memcpy(sun->sun_path + at, name, n);
	*len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + at + n +
			   !abstract);
	return 0;
}

static int unix_listen(const struct sockaddr_un *sun, socklen_t len, int *fd)
{
	int s, rc;

	s = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (s < 0)
		return -errno;
	if (bind(s, (const struct sockaddr *)sun, len) || listen(s, 128)) {
		rc = -errno;
		close(s);
		return rc;
	}
	*fd = s;
	return 0;
}

int sock_listen_unix(const char *name, int *fd)
{
	struct sockaddr_un sun;
	socklen_t len;
	int rc;

	rc = unix_addr(&sun, name, true, &len);
	return rc ? rc : unix_listen(&sun, len, fd);
}

void sock_unix_name(char *buf, size_t len, uint16_t port)
{
	snprintf(buf, len, "hmc.ctrl.%u", port);
}

/*
 * HMC_RUNTIME_DIR, else /tmp/hmc-<euid>: one directory for every network
 * namespace of the host. With @create, made if missing; either way it must
 * be a directory of ours that nobody else may write into, or another user
 * could put a socket of theirs where our peers look for us.
 */
static int unix_dir(char *buf, size_t len, bool create)
{
	const char *env = getenv("HMC_RUNTIME_DIR");
	struct stat st;
	int n;

	if (env && *env)
		n = snprintf(buf, len, "%s", env);
	else
		n = snprintf(buf, len, "/tmp/hmc-%u", (unsigned int)geteuid());
	if (n < 0 || (size_t)n >= len)
		return -ENAMETOOLONG;
	if (create && mkdir(buf, 0700) && errno != EEXIST)
		return -errno;
	if (lstat(buf, &st))
		return -errno;
	if (!S_ISDIR(st.st_mode) || st.st_uid != geteuid() ||
	    (st.st_mode & (S_IWGRP | S_IWOTH))) {
		pr_warn("%s is not a directory of uid %u closed to others: no unix control sockets there",
			buf, (unsigned int)geteuid());
		return -EACCES;
	}
	return 0;
}

int sock_unix_path(char *buf, size_t len, uint16_t port, bool create)
{
	char dir[sizeof(((struct sockaddr_un *)0)->sun_path)];
	int n, rc;

	rc = unix_dir(dir, sizeof(dir), create);
	if (rc)
		return rc;
	n = snprintf(buf, len, "%s/ctrl.%u", dir, port);
	if (n < 0 || (size_t)n >= len)
		return -ENAMETOOLONG;
	return 0;
}

int sock_listen_unix_path(const char *path, int *fd, uint64_t *ino)
{
	struct sockaddr_un sun;
	struct stat st;
	socklen_t len;
	int s, rc;

	rc = unix_addr(&sun, path, false, &len);
	if (rc)
		return rc;
	rc = unix_listen(&sun, len, fd);
	if (rc == -EADDRINUSE) {
		/*
		 * Left behind by a listener that died (refused), or in use by
		 * a live one, in another network namespace with the same port.
		 */
		s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (s < 0)
			return -errno;
		rc = connect(s, (struct sockaddr *)&sun, len) ? -errno : 0;
		close(s);
		if (rc != -ECONNREFUSED)
			return -EADDRINUSE;
		if (unlink(path) && errno != ENOENT)
			return -errno;
		rc = unix_listen(&sun, len, fd);
	}
	if (rc)
		return rc;
	if (stat(path, &st)) {
		rc = -errno;
		close(*fd);
		return rc;
	}
	*ino = (uint64_t)st.st_ino;
	return 0;
}

/* Whether a socket at @path refuses connections: nobody listens there. */
static bool unix_path_dead(const char *path)
{
	struct sockaddr_un sun;
	socklen_t len;
	int s, rc;

	if (unix_addr(&sun, path, false, &len))
		return false;
	s = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (s < 0)
		return false;
	rc = connect(s, (struct sockaddr *)&sun, len) ? errno : 0;
	close(s);
	return rc == ECONNREFUSED;
}

void sock_unix_sweep(const char *path)
{
	char dir[sizeof(((struct sockaddr_un *)0)->sun_path)], *slash;
	char other[sizeof(dir)];
	time_t old = time(NULL) - SOCK_UNIX_STALE_S;
	struct dirent *e;
	struct stat st;
	DIR *d;

	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	if (!slash)
		return;
	*slash = '\0';
	d = opendir(dir);
	if (!d)
		return;
	while ((e = readdir(d))) {
		if (strncmp(e->d_name, "ctrl.", 5) ||
		    snprintf(other, sizeof(other), "%s/%s", dir, e->d_name) >=
		    (int)sizeof(other))
			continue;
		/*
		 * Old enough that no listener is between its bind() and its
		 * listen(), and refusing: its listener died without removing it.
		 */
		if (lstat(other, &st) || !S_ISSOCK(st.st_mode) ||
		    st.st_uid != geteuid() || st.st_mtime > old ||
		    !unix_path_dead(other))
			continue;
		pr_debug("removing %s, left behind by a listener that died", other);
		unlink(other);
	}
	closedir(d);
}

void sock_unlink_unix_path(const char *path, uint64_t ino)
{
	struct stat st;

	/* Only ours: a later listener may have replaced it. */
	if (!lstat(path, &st) && S_ISSOCK(st.st_mode) &&
	    (uint64_t)st.st_ino == ino)
		unlink(path);
}

int sock_accept(int lfd)
{
	int fd;

	do {
		fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
	} while (fd < 0 && errno == EINTR);
	if (fd < 0)
		return errno == EWOULDBLOCK ? -EAGAIN : -errno;
	set_nodelay(fd);	/* fails harmlessly on Unix sockets */
	return fd;
}

static int wait_fd(int fd, short events, int64_t deadline)
{
	struct pollfd p = { .fd = fd, .events = events };
	int rc;

	for (;;) {
		rc = poll(&p, 1, deadline_remaining_ms(deadline));
		if (rc > 0)
			return 0;
		if (rc == 0)
			return -ETIMEDOUT;
		if (errno != EINTR)
			return -errno;
	}
}

int sock_wait_readable(int fd, int64_t deadline)
{
	return wait_fd(fd, POLLIN, deadline);
}

/* Non-blocking connect, completed before @deadline. */
static int dial(int family, const struct sockaddr *sa, socklen_t len,
		int64_t deadline, int *fd)
{
	int s, rc, err = 0;
	socklen_t el = sizeof(err);

	s = socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (s < 0)
		return -errno;
	rc = connect(s, sa, len);
	if (rc && errno != EINPROGRESS && errno != EINTR) {
		rc = -errno;
		goto fail;
	}
	if (rc) {
		rc = wait_fd(s, POLLOUT, deadline);
		if (rc)
			goto fail;
		if (getsockopt(s, SOL_SOCKET, SO_ERROR, &err, &el) || err) {
			rc = err ? -err : -errno;
			goto fail;
		}
	}
	if (family != AF_UNIX)
		set_nodelay(s);
	*fd = s;
	return 0;
fail:
	close(s);
	return rc;
}

int sock_dial_tcp(const char *ip, uint16_t port, int64_t deadline, int *fd)
{
	struct addrinfo *res, *ai;
	int rc;

	if (!ip || !*ip)
		return -EINVAL;
	rc = resolve(ip, port, false, &res);
	if (rc)
		return rc;
	rc = -EHOSTUNREACH;
	for (ai = res; ai; ai = ai->ai_next) {
		rc = dial(ai->ai_family, ai->ai_addr, ai->ai_addrlen, deadline,
			  fd);
		if (!rc || rc == -ETIMEDOUT)
			break;
	}
	freeaddrinfo(res);
	return rc;
}

int sock_dial_unix(const char *name, bool abstract, int64_t deadline,
		   int *fd)
{
	struct sockaddr_un sun;
	socklen_t len;
	int rc;

	rc = unix_addr(&sun, name, abstract, &len);
	return rc ? rc : dial(AF_UNIX, (struct sockaddr *)&sun, len, deadline,
			      fd);
}

static bool same_addr(const struct sockaddr *a, const struct sockaddr *b)
{
	if (a->sa_family != b->sa_family)
		return false;
	if (a->sa_family == AF_INET)
		return ((const struct sockaddr_in *)a)->sin_addr.s_addr ==
		       ((const struct sockaddr_in *)b)->sin_addr.s_addr;
	if (a->sa_family == AF_INET6)
		return !memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr,
			       &((const struct sockaddr_in6 *)b)->sin6_addr,
			       sizeof(struct in6_addr));
	return false;
}

static bool is_loopback(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET)
		return (ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr)
			>> 24) == 127;
	if (sa->sa_family == AF_INET6)
		return IN6_IS_ADDR_LOOPBACK(
			&((const struct sockaddr_in6 *)sa)->sin6_addr);
	return false;
}

/* Loopback, or an address of one of this namespace's interfaces. */
static bool sa_is_local(const struct sockaddr *sa, struct ifaddrs *ifs)
{
	struct ifaddrs *i;

	if (is_loopback(sa))
		return true;
	for (i = ifs; i; i = i->ifa_next)
		if (i->ifa_addr && same_addr(sa, i->ifa_addr))
			return true;
	return false;
}

bool sock_addr_is_local(const char *ip)
{
	struct addrinfo *res, *ai;
	struct ifaddrs *ifs;
	bool local = false;

	if (!ip || !*ip || resolve(ip, 0, false, &res))
		return false;
	if (getifaddrs(&ifs)) {
		freeaddrinfo(res);
		return false;
	}
	for (ai = res; ai && !local; ai = ai->ai_next)
		local = sa_is_local(ai->ai_addr, ifs);
	freeifaddrs(ifs);
	freeaddrinfo(res);
	return local;
}

int sock_addr_v6(const char *ip, uint8_t out[16])
{
	struct addrinfo *res;
	const struct sockaddr *sa;
	int rc;

	rc = resolve(ip, 0, false, &res);
	if (rc)
		return rc;
	sa = res->ai_addr;
	memset(out, 0, 16);
	if (sa->sa_family == AF_INET6) {
		memcpy(out, &((const struct sockaddr_in6 *)sa)->sin6_addr, 16);
	} else if (sa->sa_family == AF_INET) {
		out[10] = out[11] = 0xff;
		memcpy(out + 12, &((const struct sockaddr_in *)sa)->sin_addr, 4);
	} else {
		rc = -EAFNOSUPPORT;
	}
	freeaddrinfo(res);
	return rc;
}

int sock_bound_v6(int fd, uint8_t out[16], bool *any)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);

	if (getsockname(fd, (struct sockaddr *)&ss, &len))
		return -errno;
	memset(out, 0, 16);
	if (ss.ss_family == AF_INET6) {
		memcpy(out, &((struct sockaddr_in6 *)&ss)->sin6_addr, 16);
		*any = IN6_IS_ADDR_UNSPECIFIED(
			&((struct sockaddr_in6 *)&ss)->sin6_addr);
	} else if (ss.ss_family == AF_INET) {
		out[10] = out[11] = 0xff;
		memcpy(out + 12, &((struct sockaddr_in *)&ss)->sin_addr, 4);
		*any = ((struct sockaddr_in *)&ss)->sin_addr.s_addr ==
		       htonl(INADDR_ANY);
	} else {
		return -EAFNOSUPPORT;
	}
	return 0;
}

int sock_v6_locality(const uint8_t addr[16])
{
	static const uint8_t v4mapped[12] = {
		0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff,
	};
	struct sockaddr_storage ss = { 0 };
	struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;
	struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;
	struct ifaddrs *ifs;
	bool local;

	if (!memcmp(addr, v4mapped, sizeof(v4mapped))) {
		s4->sin_family = AF_INET;
		memcpy(&s4->sin_addr, addr + 12, 4);
	} else {
		s6->sin6_family = AF_INET6;
		memcpy(&s6->sin6_addr, addr, 16);
	}
	if (is_loopback((struct sockaddr *)&ss))
		return SOCK_ADDR_LOOPBACK;
	if (getifaddrs(&ifs))
		return -errno;
	local = sa_is_local((struct sockaddr *)&ss, ifs);
	freeifaddrs(ifs);
	return local ? SOCK_ADDR_LOCAL : SOCK_ADDR_REMOTE;
}

int sock_check_peer_cred(int fd)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len))
		return -errno;
	if (cred.uid != geteuid() && cred.uid != 0) {
		pr_warn("unix control peer pid %d uid %u is not ours: refused",
			cred.pid, cred.uid);
		return -EACCES;
	}
	return 0;
}

int sock_send_all(int fd, struct iovec *iov, int iovcnt, int pass_fd,
		  int64_t deadline)
{
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} ctl;
	struct msghdr msg = { .msg_iov = iov, .msg_iovlen = (size_t)iovcnt };
	struct cmsghdr *cm;
	ssize_t n;
	int rc;

	if (pass_fd >= 0) {
		memset(&ctl, 0, sizeof(ctl));
		msg.msg_control = ctl.buf;
		msg.msg_controllen = sizeof(ctl.buf);
		cm = CMSG_FIRSTHDR(&msg);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(cm), &pass_fd, sizeof(int));
	}
	while (msg.msg_iovlen) {
		n = sendmsg(fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno != EAGAIN && errno != EWOULDBLOCK)
				return -errno;
			rc = wait_fd(fd, POLLOUT, deadline);
			if (rc)
				return rc;
			continue;
		}
		msg.msg_control = NULL;		/* the fd went with the first bytes */
		msg.msg_controllen = 0;
		while (msg.msg_iovlen && (size_t)n >= msg.msg_iov->iov_len) {
			n -= (ssize_t)msg.msg_iov->iov_len;
			msg.msg_iov++;
			msg.msg_iovlen--;
		}
		if (msg.msg_iovlen) {
			msg.msg_iov->iov_base = (char *)msg.msg_iov->iov_base + n;
			msg.msg_iov->iov_len -= (size_t)n;
		}
	}
	return 0;
}

/* Collect the descriptors of @msg into @fds; -EPROTO (all closed) if too many. */
static int take_fds(struct msghdr *msg, int *fds, int *nfds, int max_fds)
{
	struct cmsghdr *cm;
	int err = 0, i;

	for (cm = CMSG_FIRSTHDR(msg); cm; cm = CMSG_NXTHDR(msg, cm)) {
		int n, *in;

		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
			continue;
		n = (int)((cm->cmsg_len - CMSG_LEN(0)) / sizeof(int));
		in = (int *)CMSG_DATA(cm);
		for (i = 0; i < n; i++) {
			int one;

			memcpy(&one, in + i, sizeof(one));
			if (*nfds < max_fds && !err)
				fds[(*nfds)++] = one;
			else {
				close(one);
				err = -EPROTO;
			}
		}
	}
	if (msg->msg_flags & MSG_CTRUNC)
		err = -EPROTO;
	return err;
}

ssize_t sock_recv_some(int fd, void *buf, size_t len, int *fds, int *nfds,
		       int max_fds)
{
	union {
		char buf[CMSG_SPACE(SOCK_MAX_FDS * sizeof(int))];
		struct cmsghdr align;
	} ctl;
	struct iovec iov = { .iov_base = buf, .iov_len = len };
	struct msghdr msg = {
		.msg_iov = &iov, .msg_iovlen = 1,
		.msg_control = ctl.buf, .msg_controllen = sizeof(ctl.buf),
	};
	int have = *nfds, rc, i;
	ssize_t n;

	do {
		n = recvmsg(fd, &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
	} while (n < 0 && errno == EINTR);
	if (n < 0)
		return errno == EWOULDBLOCK ? -EAGAIN : -errno;
	rc = take_fds(&msg, fds, nfds, max_fds);
	if (rc) {
		for (i = have; i < *nfds; i++)
			close(fds[i]);
		*nfds = have;
		return rc;
	}
	return n ? n : -ECONNRESET;
}
