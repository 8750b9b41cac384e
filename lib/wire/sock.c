// SPDX-License-Identifier: MIT
/* Control-plane sockets (see sock.h). */
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
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

static socklen_t unix_addr(struct sockaddr_un *sun, const char *name)
{
	size_t n = strnlen(name, sizeof(sun->sun_path) - 1);

	memset(sun, 0, sizeof(*sun));
	sun->sun_family = AF_UNIX;
	memcpy(sun->sun_path + 1, name, n);	/* abstract: leading NUL */
	return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n);
}

int sock_listen_unix(const char *name, int *fd)
{
	struct sockaddr_un sun;
	socklen_t len = unix_addr(&sun, name);
	int s, rc;

	s = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (s < 0)
		return -errno;
	if (bind(s, (struct sockaddr *)&sun, len) || listen(s, 128)) {
		rc = -errno;
		close(s);
		return rc;
	}
	*fd = s;
	return 0;
}

void sock_unix_name(char *buf, size_t len, uint16_t port)
{
	snprintf(buf, len, "hmc.ctrl.%u", port);
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

int sock_dial_unix(const char *name, int64_t deadline, int *fd)
{
	struct sockaddr_un sun;
	socklen_t len = unix_addr(&sun, name);

	return dial(AF_UNIX, (struct sockaddr *)&sun, len, deadline, fd);
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

bool sock_addr_is_local(const char *ip)
{
	struct addrinfo *res, *ai;
	struct ifaddrs *ifs, *i;
	bool local = false;

	if (!ip || !*ip || resolve(ip, 0, false, &res))
		return false;
	if (getifaddrs(&ifs)) {
		freeaddrinfo(res);
		return false;
	}
	for (ai = res; ai && !local; ai = ai->ai_next) {
		if (is_loopback(ai->ai_addr)) {
			local = true;
			break;
		}
		for (i = ifs; i && !local; i = i->ifa_next)
			local = i->ifa_addr && same_addr(ai->ai_addr, i->ifa_addr);
	}
	freeifaddrs(ifs);
	freeaddrinfo(res);
	return local;
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
