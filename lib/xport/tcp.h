/* SPDX-License-Identifier: MIT */
/*
 * The TCP transport's wire format, shared with the tests that play a
 * lying peer. Everything is big-endian.
 *
 * Metadata blob (over the authenticated control plane), TCP_BLOB_LEN bytes:
 *   u8 version, u8 address family (0 from the dialer, else 4 or 6),
 *   be16 streams wanted, be16 data port, be16 0, 16 B address,
 *   16 B token.
 * The listener of the control connection listens for data connections
 * and names where and with which token; the dialer opens the streams.
 *
 * Each data connection opens with the dialer's hello, TCP_HELLO_LEN bytes:
 *   be32 TCP_HELLO_MAGIC, u8 version, u8 0, be16 stream index,
 *   be16 streams, be16 0, 16 B token, be32 dialer's rank, be32 0;
 * and the listener's answer, TCP_ACK_LEN bytes: be32 TCP_ACK_MAGIC,
 * be16 stream index, be16 0.
 *
 * Then frames flow both ways, TCP_HDR_LEN bytes of header, then a payload
 * of len bytes for PUT and GET_RESP:
 *   u8 type, u8 flags, be16 region, be32 len, be64 off, be64 arg.
 * Region 0 is the ConnBuffer. Any other is the index from the key of one
 * of the target's registered regions (be16 index, be16 0, be32
 * generation); a PUT or GET to it carries the generation in arg (a PUT to
 * a region has no flags), and the GET_RESP names the range asked for
 * instead of where it lands. Other frames name region 0.
 */
#ifndef HMC_LIB_XPORT_TCP_H
#define HMC_LIB_XPORT_TCP_H

#include <stdint.h>

#define TCP_VERSION		1
#define TCP_TOKEN_LEN		16
#define TCP_BLOB_LEN		40
#define TCP_HELLO_MAGIC		0x484d4344u	/* "HMCD" */
#define TCP_HELLO_LEN		36
#define TCP_ACK_MAGIC		0x484d4341u	/* "HMCA" */
#define TCP_ACK_LEN		8
#define TCP_HDR_LEN		24
#define TCP_MAX_STREAMS		64
#define TCP_FRAME_MAX		(1u << 30)	/* payload of one frame */
/* Responses (GET_RESP, FLUSH_ACK) a peer may owe per stream. */
#define TCP_WINDOW		256

enum tcp_frame_type {
	TCP_PUT = 1,		/* len bytes for [off, off + len); F_SIGNAL: tag arg */
	TCP_GET,		/* send [off, off + len) back, to land at arg */
	TCP_GET_RESP,		/* len bytes for [off, off + len) of the asker */
	TCP_FLUSH,		/* answer once every earlier frame is placed */
	TCP_FLUSH_ACK,
};

#define TCP_F_SIGNAL		(1u << 0)

#endif
