/* SPDX-License-Identifier: MIT */
/* zero.c -- zeroing of freed extents on a worker thread, off the event loop. */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/queue.h>
#include <unistd.h>
#include <event2/event.h>

#include "log.h"
#include "zero.h"

/* Zeroed per step: small enough that a stop request is seen promptly. */
#define ZERO_STEP (2u << 20)

struct zero_job {
	uint8_t *addr;
	size_t len;
	void *arg;
	STAILQ_ENTRY(zero_job) link;
};
STAILQ_HEAD(zero_jobs, zero_job);

struct rmp_zeroer {
	pthread_t thread;
	bool started;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct zero_jobs todo, done; /* under lock */
	bool stop;                   /* under lock */
	int efd;                     /* worker -> loop: jobs are done */
	struct event *ev;
	rmp_zero_done_fn done_fn;
	void *ctx;
};

static void *worker(void *arg)
{
	struct rmp_zeroer *z = arg;
	struct sched_param sp = { 0 };
	struct zero_job *j;
	uint64_t one = 1;

	/* Idle priority: the event loop on the same CPUs always wins. */
	if (pthread_setschedparam(pthread_self(), SCHED_IDLE, &sp))
		log_warn("zeroing thread: SCHED_IDLE refused; it runs at "
			 "normal priority");
	pthread_mutex_lock(&z->lock);
	for (;;) {
		while (!z->stop && STAILQ_EMPTY(&z->todo))
			pthread_cond_wait(&z->cond, &z->lock);
		j = STAILQ_FIRST(&z->todo);
		if (!j)
			break; /* stop, and nothing left to do */
		STAILQ_REMOVE_HEAD(&z->todo, link);
		pthread_mutex_unlock(&z->lock);
		for (size_t off = 0; off < j->len; off += ZERO_STEP) {
			size_t n = j->len - off < ZERO_STEP ? j->len - off :
				   ZERO_STEP;

			memset(j->addr + off, 0, n);
		}
		pthread_mutex_lock(&z->lock);
		STAILQ_INSERT_TAIL(&z->done, j, link);
		if (write(z->efd, &one, sizeof(one)) < 0 && errno != EAGAIN)
			log_err("zeroing thread: eventfd: %s", strerror(errno));
	}
	pthread_mutex_unlock(&z->lock);
	return NULL;
}

/* report -- call done for every finished job, in the loop thread. */
static void report(struct rmp_zeroer *z)
{
	struct zero_jobs done = STAILQ_HEAD_INITIALIZER(done);
	struct zero_job *j;

	pthread_mutex_lock(&z->lock);
	STAILQ_CONCAT(&done, &z->done);
	pthread_mutex_unlock(&z->lock);
	while ((j = STAILQ_FIRST(&done))) {
		STAILQ_REMOVE_HEAD(&done, link);
		z->done_fn(z->ctx, j->arg);
		free(j);
	}
}

static void on_done(int fd, short what, void *arg)
{
	uint64_t n;

	(void)what;
	if (read(fd, &n, sizeof(n)) < 0 && errno != EAGAIN)
		log_err("zeroing: eventfd: %s", strerror(errno));
	report(arg);
}

struct rmp_zeroer *rmp_zeroer_new(struct event_base *base,
				  rmp_zero_done_fn done, void *ctx)
{
	struct rmp_zeroer *z = calloc(1, sizeof(*z));
	int ret;

	if (!z)
		return NULL;
	z->efd = -1;
	STAILQ_INIT(&z->todo);
	STAILQ_INIT(&z->done);
	z->done_fn = done;
	z->ctx = ctx;
	pthread_mutex_init(&z->lock, NULL);
	pthread_cond_init(&z->cond, NULL);
	z->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (z->efd < 0)
		goto err;
	z->ev = event_new(base, z->efd, EV_READ | EV_PERSIST, on_done, z);
	if (!z->ev || event_add(z->ev, NULL))
		goto err;
	ret = pthread_create(&z->thread, NULL, worker, z);
	if (ret) {
		errno = ret;
		goto err;
	}
	z->started = true;
	return z;
err:
	log_err("starting the zeroing thread: %s", strerror(errno));
	rmp_zeroer_free(z);
	return NULL;
}

int rmp_zeroer_submit(struct rmp_zeroer *z, void *addr, size_t len,
		      void *arg)
{
	struct zero_job *j = malloc(sizeof(*j));

	if (!j)
		return -ENOMEM;
	j->addr = addr;
	j->len = len;
	j->arg = arg;
	pthread_mutex_lock(&z->lock);
	STAILQ_INSERT_TAIL(&z->todo, j, link);
	pthread_cond_signal(&z->cond);
	pthread_mutex_unlock(&z->lock);
	return 0;
}

void rmp_zeroer_free(struct rmp_zeroer *z)
{
	if (!z)
		return;
	if (z->started) {
		pthread_mutex_lock(&z->lock);
		z->stop = true;
		pthread_cond_signal(&z->cond);
		pthread_mutex_unlock(&z->lock);
		pthread_join(z->thread, NULL);
		report(z);
	}
	if (z->ev)
		event_free(z->ev);
	if (z->efd >= 0)
		close(z->efd);
	pthread_cond_destroy(&z->cond);
	pthread_mutex_destroy(&z->lock);
	free(z);
}
