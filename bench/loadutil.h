/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* What the load clients of the benchmarks (mcpload, wsload) share: the
 * reading of a process's resident memory, the descriptor limit and the
 * opening of non-blocking loopback connections watched by an epoll set. */
#ifndef BENCH_LOADUTIL_H
#define BENCH_LOADUTIL_H

/* VmRSS of pid in KiB, or -1. */
long lu_rss_kib(int pid);

/* Each connection needs a descriptor: asks for want descriptors and some
 * spare, or at least the hard limit. */
void lu_raise_nofile(unsigned want);

/* Starts a non-blocking TCP_NODELAY connection to 127.0.0.1:port and adds
 * it to the epoll set ep for EPOLLOUT with data.ptr. Returns the socket
 * (-1 when none could be made) and sets *err to the errno of a connect()
 * that failed at once, 0 otherwise. */
int lu_connect_start(int ep, int port, void *ptr, int *err);

/* The outcome of the connect() on fd once it is writable: 0 or an errno. */
int lu_connect_result(int fd);

#endif
