"""Messages started by other messages' completions, on the simulation: htsim's triggers.

A connection matrix (``gse.workloads.cmfile.CmWorkload``, plain data) may hold messages
until a trigger fires, and name triggers that a message activates when its sender has it
all acknowledged (``send_done``: the instant its FCT ends, as in htsim) or when its
receiver has it all (``recv_done``).  ``TriggerRun`` wraps the network's sender-done and
delivery callbacks (the network's own bookkeeping runs first) and, on each activation:

* ``oneshot``: the first activation starts every message the trigger holds;
* ``multishot``: each activation starts the next held message, in file order; an
  activation with none left is counted (``activations_ignored``), as htsim prints
  "Noone left to activate";
* ``barrier``: the ``count``-th activation starts them all.

A started message is released at the activation's instant (an event at the same time on
the queue, as htsim runs pending triggers before the next timed event).  Its record's
start is that instant, so its FCT counts from when it could start.
"""

import copy


class TriggerRun:
    """Triggers of one workload on one ``Network`` (see the module docstring)."""

    def __init__(self, net, workload, on_start):
        self.net = net
        self.workload = workload
        self.on_start = on_start               # called with each message it starts
        self.held = {m.msg_id: m for m in workload.held}
        self.activations = {tid: 0 for tid in workload.triggers}
        self.next_target = {tid: 0 for tid in workload.triggers}
        self.fired = set()
        self.ignored = 0
        self.started = 0
        for hn in net.hosts:
            hn.driver.on_completed = self._wrap_sent(hn.driver.on_completed)
            hn.driver.on_delivered = self._wrap_delivered(hn.driver.on_delivered)

    def _wrap_sent(self, inner):
        send_done = self.workload.send_done

        def on_sent(event):
            inner(event)
            tids = send_done.get(event.msg_id)
            if tids:
                for tid in tids:
                    self.activate(tid)
        return on_sent

    def _wrap_delivered(self, inner):
        recv_done = self.workload.recv_done

        def on_delivered(event):
            inner(event)
            tids = recv_done.get(event.msg_id)
            if tids:
                for tid in tids:
                    self.activate(tid)
        return on_delivered

    def activate(self, tid):
        t = self.workload.triggers[tid]
        self.activations[tid] += 1
        n = self.activations[tid]
        if t.kind == "oneshot":
            if n == 1:
                self._fire(tid, t.targets)
            else:
                self.ignored += 1
        elif t.kind == "multishot":
            k = self.next_target[tid]
            if k < len(t.targets):
                self.next_target[tid] = k + 1
                self._fire(tid, t.targets[k:k + 1])
            else:
                self.ignored += 1
        elif n == t.count:                       # barrier
            self._fire(tid, t.targets)
        else:
            if n > t.count:
                self.ignored += 1

    def _fire(self, tid, targets):
        self.fired.add(tid)
        now = self.net.eq.now
        for mid in targets:
            held = self.held.pop(mid, None)
            if held is None:
                continue
            msg = copy.copy(held)
            msg.start_ps = now
            self.started += 1
            self.on_start(msg)
            self.net.eq.at(now, self.net.hosts[msg.src].start, msg, None)

    def summary(self):
        return {"triggers": len(self.workload.triggers), "triggers_fired": len(self.fired),
                "activations": sum(self.activations.values()),
                "activations_ignored": self.ignored, "held_messages": len(self.workload.held),
                "started_by_triggers": self.started, "never_started": len(self.held)}
