/* SPDX-License-Identifier: MIT */
/* park.c -- rdma_cm ids whose port is down, kept until it is up
 * (park.h). */
#include "park.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>

struct parked {
	struct rdma_cm_id *id;
	bool removed; /* its device is going: destroy it now */
	struct parked *next;
};

static pthread_mutex_t park_lock = PTHREAD_MUTEX_INITIALIZER;
static struct rdma_event_channel *park_ch; /* read by sweep; lives on */
static struct parked *park_list;

bool rmpc_port_active(struct ibv_context *ctx, uint8_t port_num)
{
	struct ibv_port_attr pa;

	if (!ctx || !port_num || ibv_query_port(ctx, port_num, &pa))
		return true;
	return pa.state == IBV_PORT_ACTIVE;
}

/* park -- keep id on park_ch; false if it cannot be (then the caller
 * destroys it: a lost rail is better than a leak). Under park_lock. */
static bool park(struct rdma_cm_id *id)
{
	struct parked *p;

	if (!park_ch) {
		park_ch = rdma_create_event_channel();
		/* read without waiting, by sweep */
		if (park_ch && fcntl(park_ch->fd, F_SETFL,
				     fcntl(park_ch->fd, F_GETFL) | O_NONBLOCK)) {
			rdma_destroy_event_channel(park_ch);
			park_ch = NULL;
		}
	}
	if (!park_ch)
		return false;
	p = malloc(sizeof(*p));
	if (!p)
		return false;
	if (rdma_migrate_id(id, park_ch)) {
		free(p);
		return false;
	}
	p->id = id;
	p->removed = false;
	p->next = park_list;
	park_list = p;
	return true;
}

/* removed -- the parked ids' events read and acked (a destroy waits
 * for every event read to be acked); those whose device is being
 * removed flagged. Under park_lock. */
static void removed(void)
{
	struct rdma_cm_event *ev;

	while (!rdma_get_cm_event(park_ch, &ev)) {
		struct rdma_cm_id *id = ev->id;
		bool gone = ev->event == RDMA_CM_EVENT_DEVICE_REMOVAL;

		rdma_ack_cm_event(ev);
		for (struct parked *p = park_list; gone && p; p = p->next)
			if (p->id == id)
				p->removed = true;
	}
}

/* sweep -- destroy the parked ids whose port is active, or whose device
 * is being removed (a parked id would hold it: the removal waits for
 * every user). Under park_lock. */
static void sweep(void)
{
	struct parked **pp = &park_list, *p;

	removed();
	while ((p = *pp)) {
		if (!p->removed &&
		    !rmpc_port_active(p->id->verbs, p->id->port_num)) {
			pp = &p->next;
			continue;
		}
		*pp = p->next;
		rdma_destroy_id(p->id);
		free(p);
	}
}

void rmpc_cm_park_sweep(void)
{
	pthread_mutex_lock(&park_lock);
	if (park_list)
		sweep();
	pthread_mutex_unlock(&park_lock);
}

void rmpc_cm_release(struct rdma_cm_id *id)
{
	bool parked = false;

	if (!id)
		return;
	if (id->qp)
		rdma_destroy_qp(id);
	pthread_mutex_lock(&park_lock);
	if (park_list)
		sweep();
	if (!rmpc_port_active(id->verbs, id->port_num))
		parked = park(id);
	pthread_mutex_unlock(&park_lock);
	if (!parked)
		rdma_destroy_id(id);
}
