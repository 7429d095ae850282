/*
 * The floor: the least CPU an HTTP/1.1 server can spend on a plaintext request on this
 * kernel. One thread, level-triggered epoll, and per readiness of a connection one
 * recv and — for every request head that read completed — one send of that many
 * canned answers. It parses nothing but the blank line that ends a head: no method,
 * path, header or body is looked at, so it is not a server anyone should run; it is
 * the yardstick issue 21 measures Proscenium's CPU a request against
 * (bench/plaintext.sh's `floor`).
 *
 * The answer has the header fields Proscenium's /plaintext has, the Date live (made
 * again when the second changes).
 *
 * Build: cc -O2 -o floor floor.c      Run: floor --bind 127.0.0.1:8085
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define READ_SIZE 65536
#define MAX_EVENTS 256
#define MAX_FDS 65536

/* A connection: what a read left of an unfinished head, and answers not yet sent. */
struct conn {
	char in[READ_SIZE];
	size_t have;
	char *out;
	size_t out_len, out_sent;
};

static struct conn *conns[MAX_FDS];
static char answer[256];
static size_t answer_len;
static time_t answer_second;

/* Makes the answer again when the second has changed: its Date is live. */
static void refresh_answer(void)
{
	struct timespec now;
	clock_gettime(CLOCK_REALTIME_COARSE, &now);
	if (now.tv_sec == answer_second)
		return;
	answer_second = now.tv_sec;
	struct tm tm;
	gmtime_r(&now.tv_sec, &tm);
	char date[64];
	strftime(date, sizeof date, "%a, %d %b %Y %H:%M:%S GMT", &tm);
	answer_len = (size_t)snprintf(answer, sizeof answer,
		"HTTP/1.1 200 OK\r\ncontent-type: text/plain; charset=utf-8\r\n"
		"server: floor\r\ndate: %s\r\ncontent-length: 13\r\n\r\nHello, World!", date);
}

static void drop_conn(int epoll, int fd)
{
	epoll_ctl(epoll, EPOLL_CTL_DEL, fd, NULL);
	close(fd);
	if (conns[fd]) {
		free(conns[fd]->out);
		free(conns[fd]);
		conns[fd] = NULL;
	}
}

/* Sends what is pending; returns -1 when the connection is lost. */
static int flush(int epoll, int fd, struct conn *c)
{
	while (c->out_sent < c->out_len) {
		ssize_t n = send(fd, c->out + c->out_sent, c->out_len - c->out_sent, MSG_NOSIGNAL);
		if (n < 0) {
			if (errno != EAGAIN)
				return -1;
			struct epoll_event ev = { .events = EPOLLIN | EPOLLOUT, .data.fd = fd };
			epoll_ctl(epoll, EPOLL_CTL_MOD, fd, &ev);
			return 0;
		}
		c->out_sent += (size_t)n;
	}
	c->out_len = c->out_sent = 0;
	return 0;
}

/* One recv; answers every head it completed with one send. */
static void on_readable(int epoll, int fd)
{
	struct conn *c = conns[fd];
	if (c->have == READ_SIZE)
		c->have = 0; /* a head longer than the buffer: the floor does not care */
	ssize_t n = recv(fd, c->in + c->have, READ_SIZE - c->have, 0);
	if (n <= 0) {
		if (n < 0 && errno == EAGAIN)
			return;
		drop_conn(epoll, fd);
		return;
	}
	size_t end = c->have + (size_t)n, heads = 0, rest = 0;
	/* A head ends at a blank line; look from three bytes before the new ones. */
	size_t from = c->have >= 3 ? c->have - 3 : 0;
	for (char *p = c->in + from; (p = memmem(p, (size_t)(c->in + end - p), "\r\n\r\n", 4)); p += 4) {
		heads++;
		rest = (size_t)(p + 4 - c->in);
	}
	if (heads) {
		memmove(c->in, c->in + rest, end - rest);
		end -= rest;
	}
	c->have = end;
	if (!heads)
		return;
	refresh_answer();
	size_t need = c->out_len + heads * answer_len;
	c->out = realloc(c->out, need);
	for (size_t i = 0; i < heads; i++, c->out_len += answer_len)
		memcpy(c->out + c->out_len, answer, answer_len);
	if (flush(epoll, fd, c) < 0)
		drop_conn(epoll, fd);
}

int main(int argc, char **argv)
{
	const char *bind_to = argc == 3 && strcmp(argv[1], "--bind") == 0 ? argv[2] : NULL;
	const char *colon = bind_to ? strrchr(bind_to, ':') : NULL;
	if (!colon) {
		fprintf(stderr, "usage: floor --bind HOST:PORT\n");
		return 2;
	}
	char host[64];
	snprintf(host, sizeof host, "%.*s", (int)(colon - bind_to), bind_to);
	struct sockaddr_in addr = { .sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(colon + 1)) };
	if (inet_pton(AF_INET, host, &addr.sin_addr) != 1) {
		fprintf(stderr, "floor: not an IPv4 address: %s\n", host);
		return 2;
	}
	int listener = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
	int one = 1;
	setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	if (bind(listener, (struct sockaddr *)&addr, sizeof addr) < 0 || listen(listener, 4096) < 0) {
		perror("floor: bind");
		return 1;
	}
	int epoll = epoll_create1(0);
	struct epoll_event ev = { .events = EPOLLIN, .data.fd = listener };
	epoll_ctl(epoll, EPOLL_CTL_ADD, listener, &ev);
	struct epoll_event events[MAX_EVENTS];
	for (;;) {
		int ready = epoll_wait(epoll, events, MAX_EVENTS, -1);
		for (int i = 0; i < ready; i++) {
			int fd = events[i].data.fd;
			if (fd == listener) {
				int client;
				while ((client = accept4(listener, NULL, NULL, SOCK_NONBLOCK)) >= 0) {
					if (client >= MAX_FDS) {
						close(client);
						continue;
					}
					setsockopt(client, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
					conns[client] = calloc(1, sizeof(struct conn));
					struct epoll_event cev = { .events = EPOLLIN, .data.fd = client };
					epoll_ctl(epoll, EPOLL_CTL_ADD, client, &cev);
				}
				continue;
			}
			if (!conns[fd])
				continue;
			if (events[i].events & EPOLLOUT) {
				if (flush(epoll, fd, conns[fd]) < 0) {
					drop_conn(epoll, fd);
					continue;
				}
				if (conns[fd]->out_len == 0) {
					struct epoll_event in = { .events = EPOLLIN, .data.fd = fd };
					epoll_ctl(epoll, EPOLL_CTL_MOD, fd, &in);
				}
			}
			if (events[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR))
				on_readable(epoll, fd);
		}
	}
}
