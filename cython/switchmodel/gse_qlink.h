/* OutputQueue's linking and unlinking of its packets (switchmodel/queue.py, compiled).

   A queue links its packets through them (Packet.qnext).  Taking the head ``pkt`` off
   is ``head = pkt.qnext; pkt.qnext = None``, which compiled as Python assignments takes
   a reference to the next packet and drops pkt's: two writes to the next packet's first
   line, cold at k=16 (it waited a serialisation time or more since it was queued), a
   miss per queued packet that the next dequeue pays again.  Here the reference pkt held
   moves to the queue as it is, so the next packet is not touched until it is dequeued
   itself.  The queue's reference to pkt is dropped (the caller holds its own).  Macros,
   expanded in queue.c after Cython has defined the classes' structs (this header is
   included before): a renamed class or field is a compile error. */
#ifndef GSE_QLINK_H
#define GSE_QLINK_H

#include <Python.h>

#define GSE_Q_UNLINK(q, head, tail, pkt) do {                    \
        PyObject *gse_q_old_ = (PyObject *)(q)->head;            \
        (q)->head = (pkt)->qnext;                                \
        if ((PyObject *)(q)->head == Py_None)                    \
            (q)->tail = NULL;                                    \
        Py_INCREF(Py_None);                                      \
        (pkt)->qnext = (void *)Py_None;                          \
        Py_DECREF(gse_q_old_);                                   \
    } while (0)

#define gse_unlink_data(q, pkt) GSE_Q_UNLINK((q), data_head, data_tail_p, (pkt))
#define gse_unlink_control(q, pkt) GSE_Q_UNLINK((q), control_head, control_tail_p, (pkt))

/* Enqueue: ``pkt`` joins behind the tail.  The queue's tail is a C pointer that holds no
   reference (the head, or the packet before the tail, holds one), so linking writes the
   tail packet's qnext and reads nothing of it: the store does not wait for its line,
   cold at k=16 (it was queued a serialisation time or more ago), where ``tail.qnext =
   pkt; tail = pkt`` read its qnext (to drop it) and its reference count.  The tail's
   qnext is None (the last packet links to nothing), whose reference is dropped blind.
   An empty queue (tail NULL) takes pkt as its head, whose None it drops. */
#define GSE_Q_LINK(q, head, tail, pkt) do {                      \
        Py_INCREF((PyObject *)(pkt));                            \
        if ((q)->tail == NULL) {                                 \
            PyObject *gse_q_old_ = (PyObject *)(q)->head;        \
            (q)->head = (pkt);                                   \
            Py_DECREF(gse_q_old_);                               \
        } else {                                                 \
            ((__typeof__(pkt))(q)->tail)->qnext = (pkt);         \
            Py_DECREF(Py_None);                                  \
        }                                                        \
        (q)->tail = (void *)(pkt);                               \
    } while (0)

#define gse_link_data(q, pkt) GSE_Q_LINK((q), data_head, data_tail_p, (pkt))
#define gse_link_control(q, pkt) GSE_Q_LINK((q), control_head, control_tail_p, (pkt))
/* The packet the queue's next dequeue takes (control first), as a pointer without a
   reference (for EventQueue.at_hint: gse/runtimes/sim/network.py, LinkPort.wake). */
#define gse_queue_head(q) ((PyObject *)((q)->control_bytes ? (void *)(q)->control_head \
                                                            : (void *)(q)->data_head))

#define gse_clear_tails(q) do {                                  \
        (q)->data_tail_p = NULL;                                 \
        (q)->control_tail_p = NULL;                              \
    } while (0)

/* An object as an event's hint (EventQueue.at_hint): its pointer, no reference taken
   (the htsim-PFC pipes' head packets, gse/runtimes/sim/htsim_model.py). */
static CYTHON_INLINE PyObject *gse_obj_hint(PyObject *o) { return o; }

#endif
