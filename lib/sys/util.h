/* SPDX-License-Identifier: MIT */
/* Small internal helpers: deadlines, lists, byte order. */
#ifndef HMC_LIB_UTIL_H
#define HMC_LIB_UTIL_H

#include <endian.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))
#define container_of(ptr, type, member) \
	((type *)((char *)(ptr) - offsetof(type, member)))
#define min_t(t, a, b)	((t)(a) < (t)(b) ? (t)(a) : (t)(b))

/*
 * The transfer path (post, complete, test, progress, and a transport's
 * post and poll): GCC and ld place these functions together, so that a put
 * runs through two or three code pages instead of nine. Under emulation
 * each page and each jump the code cache no longer holds after the
 * doorbell system call is a lookup; on hardware, fewer iTLB misses.
 */
#define __hot	__attribute__((__hot__))

/* ---- time: monotonic nanoseconds; a deadline of DEADLINE_NEVER never passes */
#define DEADLINE_NEVER	INT64_MAX

static inline int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Deadline @timeout_ms from now; a negative timeout never expires. */
static inline int64_t deadline_after_ms(int timeout_ms)
{
	if (timeout_ms < 0)
		return DEADLINE_NEVER;
	return now_ns() + (int64_t)timeout_ms * 1000000;
}

/* Milliseconds left until @deadline, rounded up, for poll(); -1 if never. */
static inline int deadline_remaining_ms(int64_t deadline)
{
	int64_t left;

	if (deadline == DEADLINE_NEVER)
		return -1;
	left = deadline - now_ns();
	if (left <= 0)
		return 0;
	left = (left + 999999) / 1000000;
	return left > INT32_MAX ? INT32_MAX : (int)left;
}

static inline bool deadline_passed(int64_t deadline)
{
	return deadline != DEADLINE_NEVER && now_ns() >= deadline;
}

/* ---- intrusive doubly linked list */
struct list_node {
	struct list_node *next, *prev;
};

static inline void list_init(struct list_node *head)
{
	head->next = head->prev = head;
}

static inline bool list_empty(const struct list_node *head)
{
	return head->next == head;
}

static inline void list_add_tail(struct list_node *head, struct list_node *n)
{
	n->prev = head->prev;
	n->next = head;
	head->prev->next = n;
	head->prev = n;
}

static inline void list_del(struct list_node *n)
{
	n->prev->next = n->next;
	n->next->prev = n->prev;
	n->next = n->prev = n;
}

#define list_for_each_safe(pos, tmp, head) \
	for (pos = (head)->next, tmp = pos->next; pos != (head); \
	     pos = tmp, tmp = pos->next)

/* The value of hex digit @c, or -1. */
static inline int hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* ---- big-endian wire encoding */
static inline void put_be16(uint8_t *p, uint16_t v) { v = htobe16(v); __builtin_memcpy(p, &v, 2); }
static inline void put_be32(uint8_t *p, uint32_t v) { v = htobe32(v); __builtin_memcpy(p, &v, 4); }
static inline void put_be64(uint8_t *p, uint64_t v) { v = htobe64(v); __builtin_memcpy(p, &v, 8); }
static inline uint16_t get_be16(const uint8_t *p) { uint16_t v; __builtin_memcpy(&v, p, 2); return be16toh(v); }
static inline uint32_t get_be32(const uint8_t *p) { uint32_t v; __builtin_memcpy(&v, p, 4); return be32toh(v); }
static inline uint64_t get_be64(const uint8_t *p) { uint64_t v; __builtin_memcpy(&v, p, 8); return be64toh(v); }

#endif
