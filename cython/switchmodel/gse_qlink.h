/* OutputQueue.dequeue's unlinking of its head packet (switchmodel/queue.py, compiled).

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

#define GSE_Q_UNLINK(q, head, pkt) do {                          \
        PyObject *gse_q_old_ = (PyObject *)(q)->head;            \
        (q)->head = (pkt)->qnext;                                \
        Py_INCREF(Py_None);                                      \
        (pkt)->qnext = (void *)Py_None;                          \
        Py_DECREF(gse_q_old_);                                   \
    } while (0)

#define gse_unlink_data(q, pkt) GSE_Q_UNLINK((q), data_head, (pkt))
#define gse_unlink_control(q, pkt) GSE_Q_UNLINK((q), control_head, (pkt))

#endif
